/* A fake file-system root for tests: see fake_root.h. */
#include "fake_root.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void fake_root_make(char *root, size_t n, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, n, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	assert_non_null(mkdtemp(root));
}

void fake_root_put(const char *root, const char *path, const char *text)
{
	char full[1024], *s;
	FILE *f;

	assert_true((size_t)snprintf(full, sizeof(full), "%s/%s", root, path) < sizeof(full));
	for (s = strchr(full + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(full, 0755);
		*s = '/';
	}
	f = fopen(full, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

int fake_root_remove(const char *root)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}
