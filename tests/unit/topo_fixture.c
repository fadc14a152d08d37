/*
 * topo_fixture.c - the functions of topo_fixture.h: an hwloc XML fixture
 * copied with some text replaced, and the machine read from the copy.
 *
 * Threading: none of its own; each call makes and removes its own file.
 */
#include "topo_fixture.h"

/* text with every `from` replaced by `to`, in a new string (text is freed). */
static char *replace_all(char *text, const char *from, const char *to)
{
	size_t n = 0, flen = strlen(from), tlen = strlen(to);
	char *out, *o, *p, *at;

	assert_non_null(strstr(text, from));
	for (p = text; (at = strstr(p, from)) != NULL; p = at + flen)
		n++;
	out = malloc(strlen(text) + n * tlen + 1);
	assert_non_null(out);
	for (o = out, p = text; (at = strstr(p, from)) != NULL; p = at + flen) {
		memcpy(o, p, (size_t)(at - p));
		o += at - p;
		memcpy(o, to, tlen);
		o += tlen;
	}
	strcpy(o, p);
	free(text);
	return out;
}

/* A copy of a fixture in tmp (mkstemp's template) with every `from` replaced by its `to`. */
static void write_edited(char *tmp, const char *fixture, va_list ap)
{
	char path[512], *text;
	const char *from;
	FILE *f;
	long len;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", RAILCP_FIXTURES, fixture);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	while ((from = va_arg(ap, const char *)) != NULL)
		text = replace_all(text, from, va_arg(ap, const char *));
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	free(text);
}

struct topo_machine *edited_machine(bool in_child, const char *fixture, int *err_out, va_list ap)
{
	char tmp[] = "/tmp/railcp-topo-XXXXXX";
	struct topo_machine *m = NULL;

	write_edited(tmp, fixture, ap);
	*err_out = in_child ? topo_machine_read_xml(tmp, &m) : topo_machine_create(tmp, NULL, &m);
	unlink(tmp);
	return m;
}

struct topo_machine *load_edited(const char *fixture, int *err_out, ...)
{
	struct topo_machine *m;
	va_list ap;

	va_start(ap, err_out);
	m = edited_machine(false, fixture, err_out, ap);
	va_end(ap);
	return m;
}
