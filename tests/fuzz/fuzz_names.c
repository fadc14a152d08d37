/*
 * fuzz_names.c - the checks and escapes of names from a peer or a user:
 * io__path_problem and io__path_escape (io/path.c), the rsync naming of
 * io/naming.c, and rcp_printable (common/).
 *
 * The whole input is one path of bytes (NULs included) for the path check
 * and the escape; split at newlines it is a destination (the first line)
 * and sources (the rest) for the naming functions, and the sources that
 * pass the path check make a manifest for a pull's name check.
 *
 * Checked against a plain reading of the rules: an accepted path is
 * relative, has no NUL, no empty, "." or ".." component, none longer than
 * IO_NAME_MAX and none that starts with ".railcp-tmp-" in any letter case
 * (a case-insensitive file system would take it for railcp's); escapes are
 * printable, NUL-terminated and fit their buffer; a destination's
 * decision names a directory and, but for "into", one component.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "io/io_int.h"
#include "tests/fuzz/fuzz.h"

#include <ctype.h>
#include <stdbool.h>

#define MAX_LINES 16

/* The rules, read the plain way: what io__path_problem must agree with. */
/* Whether p starts with ".railcp-tmp-", its ASCII letters in any case. */
static bool is_tmp_prefix(const uint8_t *p)
{
	size_t i;

	for (i = 0; i < IO_TMP_PREFIX_LEN; i++)
		if (tolower(p[i]) != IO_TMP_PREFIX[i])
			return false;
	return true;
}

static bool path_ok(const uint8_t *p, size_t len)
{
	size_t start = 0, i;

	if (len == 0 || len >= IO_PATH_MAX || memchr(p, '\0', len) || p[0] == '/')
		return false;
	for (i = 0; i <= len; i++) {
		size_t n;

		if (i < len && p[i] != '/')
			continue;
		n = i - start;
		if (n == 0 || n > IO_NAME_MAX || (n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.') ||
		    (n >= IO_TMP_PREFIX_LEN && is_tmp_prefix(p + start)))
			return false;
		start = i + 1;
	}
	return true;
}

static void printable_only(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	FUZZ_CHECK(n < size);
	for (; *s; s++)
		FUZZ_CHECK(*s >= 0x20 && *s < 0x7f);
}

static void escapes(const uint8_t *data, size_t size, const char *text)
{
	static const size_t sizes[] = {0, 1, 4, 5, 8, 64, 400};
	char esc[IO_ESC_MAX], out[400 + 1];
	size_t i;

	printable_only(io__path_escape((const char *)data, size, esc), IO_ESC_MAX);
	printable_only(io_path_printable(text, esc), IO_ESC_MAX);
	for (i = 0; i < RCP_ARRAY_SIZE(sizes); i++) {
		out[sizes[i]] = 'X'; /* must stay: rcp_printable writes at most size bytes */
		rcp_printable(text, out, sizes[i]);
		FUZZ_CHECK(out[sizes[i]] == 'X');
		if (sizes[i])
			printable_only(out, sizes[i]);
	}
}

/* Where a copy to dst lands, for every outcome of opening it. */
static void dest(const char *dst, bool contents, bool one_file)
{
	static const int open_errs[] = {0, -ENOENT, -ENOTDIR, -EACCES};
	char path[IO_PATH_MAX];
	struct io_dest *d = malloc(sizeof(*d));
	size_t i;

	if (!d)
		return;
	if (io_dest_path(dst, path) == 0)
		FUZZ_CHECK(strlen(path) < IO_PATH_MAX && path[0]);
	for (i = 0; i < RCP_ARRAY_SIZE(open_errs); i++) {
		if (io_dest_decide(dst, contents, open_errs[i], one_file, d) != 0)
			continue;
		FUZZ_CHECK(strlen(d->dir) < IO_PATH_MAX && d->dir[0]);
		if (d->kind == IO_DEST_INTO) {
			FUZZ_CHECK(open_errs[i] == 0 && d->name[0] == '\0');
		} else {
			FUZZ_CHECK(d->kind == IO_DEST_MKDIR || d->kind == IO_DEST_RENAME);
			/* rsync's rule: only one file, not contents, is ever renamed */
			FUZZ_CHECK(d->kind == IO_DEST_MKDIR || (one_file && !contents));
			FUZZ_CHECK(d->name[0] && !strchr(d->name, '/') && strcmp(d->name, ".") &&
				   strcmp(d->name, ".."));
		}
	}
	free(d);
}

/* The sources that are valid paths, as files of a manifest (a peer's, decoded). */
static struct io_manifest *manifest_of(char *const *src, size_t n)
{
	struct io_manifest *m = calloc(1, sizeof(*m));
	struct io_entry *e;
	size_t i;

	for (i = 0; m && i < n; i++) {
		if (io__path_problem(src[i], strlen(src[i])) || io__manifest_add(m, &e))
			continue;
		e->type = strchr(src[i], '/') ? IO_FILE : IO_DIR;
		e->path = strdup(src[i]);
		if (!e->path)
			m->n--;
	}
	return m;
}

static void naming(char *text)
{
	char *line[MAX_LINES], *save = NULL, *tok;
	const char *name;
	size_t n = 0, i, len;
	struct io_manifest *m;

	for (tok = strtok_r(text, "\n", &save); tok && n < MAX_LINES;
	     tok = strtok_r(NULL, "\n", &save))
		line[n++] = tok;
	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		len = io__src_name(line[i], &name);
		FUZZ_CHECK(name >= line[i] && name <= line[i] + strlen(line[i]));
		FUZZ_CHECK(len <= strlen(name) && (len == 0 || !memchr(name, '/', len)));
	}
	dest(line[0], io_src_contents_only((const char *const *)line + 1, n - 1), n == 2);
	dest(line[0], true, true);
	m = manifest_of(line + 1, n - 1);
	if (m) {
		FUZZ_CHECK(io_manifest_top_count(m) <= m->n);
		FUZZ_CHECK(!io_manifest_one_file(m) || io_manifest_top_count(m) == 1);
		io_pull_names_check((const char *const *)line, n, false, m);
		io_pull_names_check((const char *const *)line, n, true, m);
		io_manifest_destroy(m);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = io__path_problem((const char *)data, size);
	char *text = malloc(size + 1);

	FUZZ_CHECK((why == NULL) == path_ok(data, size));
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0'; /* as a C string: up to the input's first NUL */
	escapes(data, size, text);
	naming(text);
	free(text);
	return 0;
}
