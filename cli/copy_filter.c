/*
 * copy_filter.c - a copy's --dry-run and filter options: the rules in
 * command-line order, the files of --exclude-from and --files-from read
 * with bounds (at most IO_FILTER_MAX_BYTES each, lines shorter than
 * IO_PATH_MAX, UTF-8: io/filter.c checks each), and the dry run's list
 * printed, one line per entry that would travel, or one JSON object;
 * --delete's checks and lines ("deleting NAME", what was removed).
 *
 * Threading: the copy's thread.
 */
#include "cli/cli.h"
#include "cli/filter.h"

#include "common/common.h"
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cli_filter_op {
	int kind; /* CLI_OPT_EXCLUDE, CLI_OPT_INCLUDE, CLI_OPT_EXCLUDE_FROM */
	const char *arg;
};

int cli_filter_opt(struct cli_filter *cf, int c, const char *arg)
{
	struct cli_filter_op *grown;

	switch (c) {
	case 'n':
		cf->dry_run = true;
		return 0;
	case CLI_OPT_FROM0:
		cf->from0 = true;
		return 0;
	case CLI_OPT_DELETE:
		cf->delete_extra = true;
		return 0;
	case CLI_OPT_FILES_FROM:
		if (cf->files_from)
			return cli_usage_error(NULL, "--files-from is given twice: give one list");
		cf->files_from = arg;
		return 0;
	case CLI_OPT_EXCLUDE:
	case CLI_OPT_INCLUDE:
	case CLI_OPT_EXCLUDE_FROM:
		if (cf->n_op >= IO_FILTER_MAX_RULES)
			return cli_usage_error(NULL,
					       "more than %d --exclude and --include patterns",
					       IO_FILTER_MAX_RULES);
		grown = realloc(cf->op, (cf->n_op + 1) * sizeof(*grown));
		if (!grown)
			return cli_fail(-ENOMEM);
		cf->op = grown;
		cf->op[cf->n_op++] = (struct cli_filter_op){.kind = c, .arg = arg};
		return 0;
	}
	return -1;
}

/* The whole of file (or stdin for "-"), at most IO_FILTER_MAX_BYTES, NUL-terminated. */
static int slurp(const char *opt, const char *file, char **buf_out, size_t *len_out)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
	size_t len = 0, got;
	char *buf;
	int err = 0;

	if (!f)
		return rcp_err(-errno, "%s %s: %s", opt, file, strerror(errno));
	buf = malloc((size_t)IO_FILTER_MAX_BYTES + 2);
	if (!buf)
		err = rcp_err(-ENOMEM, "out of memory reading %s", file);
	while (!err && (got = fread(buf + len, 1, (size_t)IO_FILTER_MAX_BYTES + 1 - len, f)) > 0)
		if ((len += got) > (size_t)IO_FILTER_MAX_BYTES)
			err = rcp_err(-EFBIG, "%s %s is larger than %d MiB", opt, file,
				      IO_FILTER_MAX_BYTES >> 20);
	if (!err && ferror(f))
		err = rcp_err(-EIO, "%s %s: cannot read it", opt, file);
	if (f != stdin)
		fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*buf_out = buf;
	*len_out = len;
	return 0;
}

/* A line of --exclude-from: "" and comments skipped, "+ " an include, "- " an exclude. */
static int rule_line(struct io_filter *f, const char *line)
{
	if (!line[0] || line[0] == '#' || line[0] == ';')
		return 0;
	if ((line[0] == '+' || line[0] == '-') && line[1] == ' ')
		return io_filter_rule(f, line[0] == '+', line + 2);
	return io_filter_rule(f, false, line);
}

static int path_line(struct io_filter *f, const char *line)
{
	if (!line[0] || line[0] == '#' || line[0] == ';')
		return 0;
	return io_filter_path(f, line);
}

/* Each line of file through take; its errors name the file and the line. */
static int read_list(const char *opt, const char *file, bool from0, struct io_filter *f,
		     int (*take)(struct io_filter *f, const char *line))
{
	char *buf = NULL, *p, *end, *eol, sep = from0 ? '\0' : '\n';
	size_t len = 0, line = 1;
	int err = slurp(opt, file, &buf, &len);

	for (p = buf, end = buf + len; !err && p < end; p = eol + 1, line++) {
		eol = memchr(p, sep, (size_t)(end - p));
		if (!eol)
			eol = end; /* the last line may lack its end */
		*eol = '\0';
		if (!from0 && strlen(p) < (size_t)(eol - p))
			err = rcp_err(-EINVAL, "%s %s: line %zu has a NUL byte (a --from0 list?)",
				      opt, file, line);
		else if ((err = take(f, p)) != 0)
			err = rcp_err(err, "%s %s, line %zu: %s", opt, file, line,
				      rcp_err_msg(err));
	}
	free(buf);
	return err;
}

static int filter_build(struct cli_filter *cf)
{
	size_t i;
	int err = io_filter_create(&cf->f);

	for (i = 0; i < cf->n_op && !err; i++) {
		const struct cli_filter_op *op = &cf->op[i];

		if (op->kind == CLI_OPT_EXCLUDE_FROM)
			err = read_list("--exclude-from", op->arg, cf->from0, cf->f, rule_line);
		else if ((err = io_filter_rule(cf->f, op->kind == CLI_OPT_INCLUDE, op->arg)) != 0)
			err = rcp_err(err, "--%s: %s",
				      op->kind == CLI_OPT_INCLUDE ? "include" : "exclude",
				      rcp_err_msg(err));
	}
	if (!err && cf->files_from)
		err = read_list("--files-from", cf->files_from, cf->from0, cf->f, path_line);
	if (!err && cf->files_from && !io_filter_has_paths(cf->f))
		err = rcp_err(-EINVAL, "--files-from %s lists no path", cf->files_from);
	if (!err)
		err = io_filter_finish(cf->f);
	return err;
}

/* A path for a terminal: control bytes and '\' as \xNN, the rest (UTF-8 too) as is. */
static void path_print(FILE *out, const char *p)
{
	for (; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			fprintf(out, "\\x%02x", ch);
		else
			fputc(ch, out);
	}
}

/* A path for JSON: as is when UTF-8, else escaped as for people, all bytes past ASCII too. */
static json_t *path_json(const char *p)
{
	json_t *s = json_string(p);
	char *esc, *q;

	if (s)
		return s;
	esc = malloc(strlen(p) * 4 + 1);
	if (!esc)
		return NULL;
	for (q = esc; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		q += ch < 0x20 || ch >= 0x7f || ch == '\\' ? sprintf(q, "\\x%02x", ch)
							   : sprintf(q, "%c", ch);
	}
	s = json_string(esc);
	free(esc);
	return s;
}

/*
 * Whether entry e, differing as why says, would travel (a directory: would
 * be made). With -c (c not NULL) a file of the same size all of whose
 * chunks match is left out: a copy would send none of its bytes. With
 * --partial alone such a file is still put in place (from what a cut copy
 * kept), so it is listed, with nothing to send.
 */
static bool travels(const struct cli_filter *cf, const struct io_entry *e, uint8_t why,
		    const struct eng_dry_chunks *c)
{
	if (e->type == IO_DIR)
		return why != IO_DIFF_SAME;
	if (e->type == IO_FILE && c && cf->checksum && why != IO_DIFF_NEW && why != IO_DIFF_TYPE &&
	    why != IO_DIFF_SIZE && c->differ == 0)
		return false;
	return !cf->update || why != IO_DIFF_SAME;
}

/*
 * -c: whether file e is sent whole: nothing of its own at the destination to
 * compare, nor a partial file of a cut copy that holds some of it.
 * --partial alone: whether no cut copy kept any of it (the old file, if
 * any, counts for nothing).
 */
static bool whole(const struct cli_filter *cf, uint8_t why, const struct eng_dry_chunks *c)
{
	return (!cf->checksum || why == IO_DIFF_NEW || why == IO_DIFF_TYPE) &&
	       c->differ == c->chunks;
}

/*
 * A file's chunks in the list: "whole, 3 chunks"; -c: "2 of 76 chunks
 * differ"; --partial: "2 of 76 chunks to send, 74 kept".
 */
static void chunks_print(const struct cli_filter *cf, uint8_t why, const struct eng_dry_chunks *c)
{
	if (whole(cf, why, c))
		printf(": whole, %llu chunk%s", (unsigned long long)c->chunks,
		       c->chunks == 1 ? "" : "s");
	else if (!cf->checksum)
		printf(": %llu of %llu chunks to send, %llu kept", (unsigned long long)c->differ,
		       (unsigned long long)c->chunks, (unsigned long long)(c->chunks - c->differ));
	else
		printf(": %llu of %llu chunks differ%s", (unsigned long long)c->differ,
		       (unsigned long long)c->chunks, why == IO_DIFF_SIZE ? ", size differs" : "");
}

static void chunks_json(const struct cli_filter *cf, json_t *j, uint8_t why,
			const struct eng_dry_chunks *c)
{
	json_object_set_new(j, "chunks", json_integer((json_int_t)c->chunks));
	json_object_set_new(j, "chunks_differ", json_integer((json_int_t)c->differ));
	json_object_set_new(j, "bytes_differ", json_integer((json_int_t)c->differ_bytes));
	json_object_set_new(j, "whole", json_boolean(whole(cf, why, c)));
}

static const char *type_word(enum io_type t)
{
	return t == IO_DIR ? "directory" : t == IO_SYMLINK ? "symlink" : "file";
}

/* Entry e of the list, differing as why says (c: its chunks, -c), into arr or onto stdout. */
static void entry_said(const struct cli_filter *cf, const struct io_entry *e, uint8_t why,
		       const struct eng_dry_chunks *c, json_t *arr)
{
	bool chunks = c && e->type == IO_FILE;

	if (arr) {
		json_t *j = json_object();

		json_object_set_new(j, "path", path_json(e->path));
		json_object_set_new(j, "type", json_string(type_word(e->type)));
		json_object_set_new(j, "size", json_integer((json_int_t)e->size));
		json_object_set_new(j, "why", json_string(io_diff_str(why)));
		if (chunks)
			chunks_json(cf, j, why, c);
		json_array_append_new(arr, j);
		return;
	}
	path_print(stdout, e->path);
	printf("%s", e->type == IO_DIR ? "/" : "");
	if (chunks)
		chunks_print(cf, why, c);
	else if (cf->update)
		printf(": %s", io_diff_str(why));
	putchar('\n');
}

static void dry_list(const struct io_manifest *m, const uint8_t *why,
		     const struct eng_dry_chunks *c, void *ctx)
{
	struct cli_filter *cf = ctx;
	json_t *o = cf->json ? json_object() : NULL, *arr = cf->json ? json_array() : NULL;
	uint64_t files = 0, bytes = 0, dirs = 0, differ = 0, chunks = 0;
	char sz[32];
	size_t i;

	for (i = 0; i < m->n; i++) {
		const struct io_entry *e = &m->entry[i];
		const struct eng_dry_chunks *ci = c ? &c[i] : NULL;

		if (ci && e->type == IO_FILE) { /* every file compared, listed or not */
			differ += ci->differ;
			chunks += ci->chunks;
		}
		if (!travels(cf, e, why[i], ci))
			continue;
		files += e->type != IO_DIR;
		dirs += e->type == IO_DIR;
		bytes += e->type != IO_FILE ? 0 : ci ? ci->differ_bytes : e->size;
		entry_said(cf, e, why[i], ci, arr);
	}
	if (o) {
		json_object_set_new(o, "dry_run", json_true());
		json_object_set_new(o, "direction", json_string(cf->push ? "push" : "pull"));
		json_object_set_new(o, "host", cli_json_text(cf->host));
		json_object_set_new(o, "files", json_integer((json_int_t)files));
		json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
		json_object_set_new(o, "directories", json_integer((json_int_t)dirs));
		if (c) {
			json_object_set_new(o, "chunks", json_integer((json_int_t)chunks));
			json_object_set_new(o, "chunks_differ", json_integer((json_int_t)differ));
		}
		json_object_set_new(o, "entries", arr);
		cli_delete_json(cf, o, cf->n_deleting);
		cli_json_print(stdout, o);
		json_decref(o);
		return;
	}
	cli_size_str(bytes, sz, sizeof(sz));
	printf("railcp: dry run: %llu files and symlinks (%s) and %llu directories would %s %s; "
	       "nothing was written\n",
	       (unsigned long long)files, sz, (unsigned long long)dirs,
	       cf->push ? "go to" : "come from", cf->host);
	if (c && cf->checksum)
		printf("railcp: dry run: %llu of %llu chunks differ (-c)\n",
		       (unsigned long long)differ, (unsigned long long)chunks);
	else if (c)
		printf("railcp: dry run: %llu of %llu chunks would be sent, the rest kept from a "
		       "cut copy (--partial)\n",
		       (unsigned long long)differ, (unsigned long long)chunks);
	if (cf->delete_extra)
		printf("railcp: dry run: %llu entries would be deleted (--delete); nothing was "
		       "removed\n",
		       (unsigned long long)cf->n_deleting);
}

/* Each entry --delete removed (or would): a "deleting" line, or a name for --json. */
static void deleted_said(const char *path, void *ctx)
{
	struct cli_filter *cf = ctx;

	cf->n_deleting++;
	if (!cf->dry_run && rcp_log_level() < RCP_LOG_INFO)
		return;
	if (cf->json) {
		if (!cf->deleting)
			cf->deleting = json_array();
		if (cf->deleting)
			json_array_append_new(cf->deleting, path_json(path));
		return;
	}
	printf("deleting ");
	path_print(stdout, path);
	putchar('\n');
}

void cli_delete_json(const struct cli_filter *cf, json_t *o, uint64_t deleted)
{
	if (!cf->delete_extra)
		return;
	json_object_set_new(o, "deleted", json_integer((json_int_t)deleted));
	if (cf->deleting)
		json_object_set(o, "deleting", cf->deleting);
}

void cli_delete_print(const struct cli_filter *cf, uint64_t deleted)
{
	if (cf->delete_extra)
		printf("railcp: deleted %llu entries the sources do not hold (--delete)\n",
		       (unsigned long long)deleted);
}

/* --delete's terms: beneath copied directories only, and each source's naming the same. */
static int delete_check(struct cli_filter *cf, const char *const *src, size_t n_src,
			struct eng_copy_opts *o)
{
	size_t i, contents = 0;

	for (i = 0; i < n_src; i++)
		contents += io_src_contents_only(&src[i], 1);
	if (!o->recursive)
		return cli_usage_error(NULL, "--delete needs -r: it removes only beneath the "
					     "directories a copy covers");
	if (cf->files_from)
		return cli_usage_error(NULL, "--delete and --files-from cannot be given together");
	if (contents && contents != n_src)
		return cli_usage_error(NULL, "--delete needs every source to end in '/' or none: "
					     "copy them in two commands");
	o->delete_extra = true;
	o->deleted = deleted_said;
	o->deleted_ctx = cf;
	return 0;
}

int cli_filter_finish(struct cli_filter *cf, size_t n_src, struct eng_copy_opts *o)
{
	int err;

	o->dry_run = cf->dry_run;
	o->dry_list = dry_list;
	o->dry_ctx = cf;
	cf->update = o->update;
	cf->checksum = o->checksum;
	cf->push = o->dir == ENG_PUSH;
	if (cf->delete_extra && (err = delete_check(cf, o->src, n_src, o)) != 0)
		return err;
	if (cf->files_from && n_src != 1)
		return cli_usage_error(NULL,
				       "--files-from needs exactly one source directory, not %zu "
				       "sources",
				       n_src);
	if (!cf->n_op && !cf->files_from)
		return 0;
	if ((err = filter_build(cf)) != 0)
		return err == -ENOMEM ? cli_fail(err)
				      : cli_usage_error(NULL, "%s", rcp_err_msg(err));
	o->filter = cf->f;
	return 0;
}

void cli_filter_fini(struct cli_filter *cf)
{
	io_filter_destroy(cf->f);
	json_decref(cf->deleting);
	free(cf->op);
	cf->f = NULL;
	cf->op = NULL;
}
