/*
 * mpi_pull.c - railcp-mpi's pulls without MPI: rank 0 lists each source
 * through a dry-run pull (the engine's, one session per source), the
 * sources' files, symlinks and empty directories become the items the
 * ranks share by bytes, each rank's share travels as bytes, and each rank
 * turns its share back into one --files-from filter per source. After the
 * job, rank 0 gives the directories their metadata (-p).
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_mpi_pull_free(struct cli_mpi_pull *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		free(p->item[i].rel);
	for (i = 0; i < p->n_src; i++) {
		io_manifest_destroy(p->src[i].m);
		free(p->src[i].why);
	}
	free(p->item);
	free(p->src);
	memset(p, 0, sizeof(*p));
}

static int item_add(struct cli_mpi_pull *p, uint32_t src, const char *rel, uint64_t bytes)
{
	struct cli_mpi_item *grown;

	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		grown = realloc(p->item, p->cap * sizeof(*grown));
		if (!grown)
			return rcp_err(-ENOMEM, "out of memory listing the sources");
		p->item = grown;
	}
	p->item[p->n] = (struct cli_mpi_item){.src = src, .bytes = bytes, .rel = strdup(rel)};
	if (!p->item[p->n].rel)
		return rcp_err(-ENOMEM, "out of memory listing the sources");
	p->n++;
	return 0;
}

/* Whether entry i of m is a directory with nothing beneath it (entries in walk order). */
static bool empty_dir(const struct io_manifest *m, size_t i)
{
	size_t len = strlen(m->entry[i].path);

	return m->entry[i].type == IO_DIR &&
	       (i + 1 == m->n || strncmp(m->entry[i + 1].path, m->entry[i].path, len) ||
		m->entry[i + 1].path[len] != '/');
}

/* Whether path is dir (dlen bytes) or beneath it; everything is beneath "". */
static bool beneath(const char *path, const char *dir, size_t dlen)
{
	return !dlen || (!strncmp(path, dir, dlen) && (path[dlen] == '/' || !path[dlen]));
}

/* The longest directory of rel (its length) that a --files-from can list; 0: none. */
static size_t listable_dir(const char *rel)
{
	char buf[IO_PATH_MAX];
	const char *slash, *c;
	size_t len = 0, n;

	for (c = rel; (slash = strchr(c, '/')) != NULL; c = slash + 1) {
		n = (size_t)(slash - rel);
		memcpy(buf, rel, n);
		buf[n] = '\0';
		if (io_filter_path_problem(buf))
			break;
		len = n;
	}
	return len;
}

/*
 * Entry *i of m (rel beneath the source's top, cut bytes in) cannot be
 * listed (its name is not UTF-8, or has a control character): its nearest
 * listable directory travels whole as one item instead, the items already
 * taken beneath it folded in, and *i moves past its tree (a walk lists a
 * directory's tree together). No such directory: the source whole.
 */
static int fold(struct cli_mpi_pull *p, uint32_t src, const struct io_manifest *m, size_t *i,
		size_t cut)
{
	const char *rel = m->entry[*i].path + cut;
	size_t dlen = listable_dir(rel);
	uint64_t bytes = 0;
	char dir[IO_PATH_MAX];

	memcpy(dir, rel, dlen);
	dir[dlen] = '\0';
	while (p->n && p->item[p->n - 1].src == src && beneath(p->item[p->n - 1].rel, dir, dlen)) {
		p->n--;
		bytes += p->item[p->n].bytes;
		free(p->item[p->n].rel);
	}
	for (; *i < m->n && beneath(m->entry[*i].path + cut, dir, dlen); (*i)++)
		bytes += m->entry[*i].type == IO_FILE ? m->entry[*i].data_bytes : 0;
	(*i)--; /* the caller's loop steps past the last one */
	return item_add(p, src, dir, bytes);
}

int cli_mpi_pull_items(struct cli_mpi_pull *p, uint32_t src, const struct io_manifest *m,
		       bool has_top)
{
	size_t i, cut = 0;
	int err = 0;

	if (m->n == 1 && m->entry[0].type != IO_DIR) /* a file or a link: pulled whole */
		return item_add(p, src, "", m->entry[0].data_bytes);
	if (has_top && m->n)
		cut = strlen(m->entry[0].path) + 1;
	for (i = has_top ? 1 : 0; i < m->n && !err; i++) {
		const struct io_entry *e = &m->entry[i];

		if (io_filter_path_problem(e->path + cut))
			err = fold(p, src, m, &i, cut);
		else if (e->type != IO_DIR || empty_dir(m, i))
			err = item_add(p, src, e->path + cut,
				       e->type == IO_FILE ? e->data_bytes : 0);
	}
	return err;
}

int cli_mpi_pull_fits(const struct cli_mpi_pull *p, const unsigned *owner, unsigned n_ranks)
{
	size_t *paths = calloc((size_t)n_ranks * p->n_src, sizeof(*paths)), i, at;
	uint64_t *bytes = calloc((size_t)n_ranks * p->n_src, sizeof(*bytes));
	int err = paths && bytes ? 0 : rcp_err(-ENOMEM, "out of memory sharing the sources");

	for (i = 0; i < p->n && !err; i++) {
		at = (size_t)owner[i] * p->n_src + p->item[i].src;
		paths[at]++;
		bytes[at] += strlen(p->item[i].rel) + 2;
		if (paths[at] > IO_FILTER_MAX_PATHS || bytes[at] > IO_FILTER_MAX_BYTES)
			err = rcp_err(-E2BIG,
				      "rank %u's share of %s is more than a --files-from holds "
				      "(%d paths, %d MiB): run more ranks",
				      owner[i], p->src[p->item[i].src].name, IO_FILTER_MAX_PATHS,
				      IO_FILTER_MAX_BYTES >> 20);
	}
	free(paths);
	free(bytes);
	return err;
}

int cli_mpi_pull_pack(const struct cli_mpi_pull *p, const unsigned *owner, unsigned rank,
		      void **buf_out, size_t *len_out)
{
	size_t i, len = 0, off = 0;
	char *buf;

	for (i = 0; i < p->n; i++)
		if (owner[i] == rank)
			len += 4 + strlen(p->item[i].rel) + 1;
	if (!(buf = malloc(len ? len : 1)))
		return rcp_err(-ENOMEM, "out of memory packing a rank's share");
	for (i = 0; i < p->n; i++) {
		size_t n = strlen(p->item[i].rel) + 1;

		if (owner[i] != rank)
			continue;
		memcpy(buf + off, &p->item[i].src, 4);
		memcpy(buf + off + 4, p->item[i].rel, n);
		off += 4 + n;
	}
	*buf_out = buf;
	*len_out = len;
	return 0;
}

/* One item of a share into its source's filter (made on first use), or the source whole. */
static int share_item(uint32_t src, const char *rel, struct cli_mpi_task *t)
{
	int err = 0;

	if (!*rel) {
		t[src].whole = true;
		return 0;
	}
	if (!t[src].filter)
		err = io_filter_create(&t[src].filter);
	return err ? err : io_filter_path(t[src].filter, rel);
}

int cli_mpi_pull_unpack(const void *buf, size_t len, size_t n_src, struct cli_mpi_task *t)
{
	const char *p = buf, *end = p + len, *nul;
	uint32_t src;
	size_t k;
	int err = 0;

	memset(t, 0, n_src * sizeof(*t));
	while (p < end && !err) {
		if (end - p < 5 || !(nul = memchr(p + 4, '\0', (size_t)(end - p - 4))))
			return rcp_err(-EBADMSG, "a rank's share of the pull is cut short");
		memcpy(&src, p, 4);
		if (src >= n_src)
			return rcp_err(-EBADMSG, "a rank's share names source %u of %zu",
				       (unsigned)src, n_src);
		err = share_item(src, p + 4, t);
		p = nul + 1;
	}
	for (k = 0; k < n_src && !err; k++)
		if (t[k].filter)
			err = io_filter_finish(t[k].filter);
	return err;
}

void cli_mpi_tasks_free(struct cli_mpi_task *t, size_t n_src)
{
	size_t k;

	for (k = 0; t && k < n_src; k++)
		io_filter_destroy(t[k].filter);
	free(t);
}

/* A dry run's list, kept: the engine's callback. */
static void keep_list(const struct io_manifest *m, const uint8_t *why,
		      const struct eng_dry_chunks *c, void *ctx)
{
	struct cli_mpi_source *s = ctx;

	(void)c; /* railcp-mpi refuses -c with -n */

	if (io_manifest_pick(m, NULL, &s->m))
		s->m = NULL;
	if (s->m && (s->why = malloc(m->n ? m->n : 1)) != NULL)
		memcpy(s->why, why, m->n);
}

/* Whether a source names its contents only (its last name is "." or "..", or it is "/"). */
static bool contents_only(const char *src)
{
	return io_src_contents_only(&src, 1);
}

int cli_mpi_pull_list(const struct eng_copy_opts *o, struct cli_mpi_pull *p)
{
	struct eng_copy_opts d = *o;
	struct eng_report rep;
	size_t k;
	int err = 0;

	memset(p, 0, sizeof(*p));
	p->n_src = o->n_src;
	if (!(p->src = calloc(o->n_src, sizeof(*p->src))))
		return rcp_err(-ENOMEM, "out of memory listing the sources");
	d.dry_run = true;
	/* The list only: nothing kept is counted, no chunk compared (each rank's, after). */
	d.partial = d.checksum = false;
	d.dry_list = keep_list;
	d.progress = NULL;
	d.n_src = 1;
	for (k = 0; k < o->n_src && !err; k++) {
		d.src = &o->src[k];
		d.dry_ctx = &p->src[k];
		p->src[k].name = o->src[k];
		err = eng_copy_run(&d, &rep);
		if (!err && (!p->src[k].m || !p->src[k].why))
			err = rcp_err(-ENOMEM, "out of memory keeping the list of %s", o->src[k]);
		p->src[k].has_top = !contents_only(o->src[k]);
		if (!err)
			err = cli_mpi_pull_items(p, (uint32_t)k, p->src[k].m, p->src[k].has_top);
	}
	return err;
}

/*
 * A directory's mode and mtime, set as the copy would have set them (-p):
 * never setuid or setgid (the server does not choose them here, as
 * io__dir_meta_set has it for a push), and through the directory opened
 * without following a symlink put in its place.
 */
static int dir_meta(const char *path, const struct io_entry *e)
{
	struct timespec ts[2] = {
		{.tv_nsec = UTIME_OMIT},
		{.tv_sec = e->mtime_ns / 1000000000, .tv_nsec = e->mtime_ns % 1000000000}};
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err = 0;

	if (fd < 0 || fchmod(fd, e->mode & 01777) || futimens(fd, ts))
		err = rcp_err(-errno, "cannot set the metadata of the directory %s: %s", path,
			      strerror(errno));
	if (fd >= 0)
		close(fd);
	return err;
}

int cli_mpi_pull_dirs(const struct cli_mpi_pull *p, const char *dst)
{
	char path[2 * IO_PATH_MAX];
	size_t k, i;
	int err = 0;

	for (k = 0; k < p->n_src && !err; k++) {
		const struct io_manifest *m = p->src[k].m;

		for (i = m->n; i-- > 0 && !err;) { /* deepest first: parents after children */
			const char *rel = m->entry[i].path; /* beneath DST: a directory by now */

			if (m->entry[i].type != IO_DIR || p->src[k].why[i] != IO_DIFF_NEW)
				continue;
			snprintf(path, sizeof(path), "%s%s%s", dst, *rel ? "/" : "", rel);
			err = dir_meta(path, &m->entry[i]);
		}
	}
	return err;
}
