/*
 * dry.c - a copy's --dry-run, and a pull's sources and filter, on the
 * control connection (protocol 9).
 *
 * A dry run ends its session after the file list. For a push the server
 * decides where the copy would land and how its destination differs from
 * each entry (eng__dest_dry), and answers with a "dry_run" frame (the
 * top's new name, if the copy renames it) and a byte per entry in
 * "dry_run_why" frames; for a pull the client does the same on its side.
 * Either way the caller's dry_list gets the list as it would land, and
 * nothing is made or written anywhere; with --delete, what would be
 * removed is named first (delete.c).
 *
 * With -c (protocol 14) the list waits for a comparison of the old files
 * chunk by chunk, by the same maps, keyed digests and confirmed map as a
 * -c copy's (the skip map first with -u; kept.c): the receiver's root
 * carries IO_ROOT_DRY, so its old files, and what a cut -c copy's partial
 * file holds, are read where they are and no partial file is made
 * (io/checksum.c). With --partial and no -c (protocol 19) the same frames
 * follow, the kept chunks being only what a cut --partial copy's record
 * and log claim and its data file still holds, looked at as the next copy
 * would take them but read only (io/partial.c): a record or data file that
 * is not the receiver's own counts for nothing. Both ends then hold in their plan
 * only the chunks a copy would send, and the listing end counts them per
 * entry (struct eng_dry_chunks) for dry_list. The session ends after the
 * "hashed" frames. A pull's filter travels after its
 * sources in "filter" frames, at most IO_FILTER_MAX_BYTES, and the server
 * reads it through io_filter_decode's checks.
 *
 * Threading: the session's thread.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What a copy of m (consumed, its top renamed to name if not NULL) would do, to the caller. */
static int dry_tell(const struct eng_copy_opts *cp, struct io_manifest *m, const char *name,
		    const uint8_t *why, const struct eng_dry_chunks *c)
{
	int err = name ? io_manifest_rename_top(m, name) : 0;

	if (!err && cp->dry_list)
		cp->dry_list(m, why, c, cp->dry_ctx);
	io_manifest_destroy(m);
	return err;
}

/*
 * -c or --partial, either end: each entry's total chunks (as counted before the
 * comparison) and those still in s->files' plan after it (the ones a copy
 * would send), into *c_out (malloc'd, one per entry).
 */
static int chunks_told(const struct eng_session *s, const uint64_t *total,
		       struct eng_dry_chunks **c_out)
{
	size_t n = eng__files_manifest(s->files)->n, i;
	struct eng_dry_chunks *c = calloc(n ? n : 1, sizeof(*c));
	uint64_t *left = calloc(n ? 2 * n : 1, sizeof(*left));

	if (!c || !left) {
		free(c);
		free(left);
		return rcp_err(-ENOMEM, "out of memory for a list of %zu entries", n);
	}
	eng__files_chunks_each(s->files, left, left + n);
	for (i = 0; i < n; i++) /* one -u leaves alone is not compared: none counted */
		if (!eng__files_manifest(s->files)->entry[i].skip)
			c[i] = (struct eng_dry_chunks){
				.chunks = total[i], .differ = left[i], .differ_bytes = left[n + i]};
	free(left);
	*c_out = c;
	return 0;
}

/* Each entry's chunks in s->files' plan as it is now, into *total_out (malloc'd). */
static int chunks_total(const struct eng_session *s, uint64_t **total_out)
{
	size_t n = eng__files_manifest(s->files)->n;

	if (!(*total_out = malloc((n ? n : 1) * sizeof(**total_out))))
		return rcp_err(-ENOMEM, "out of memory for a list of %zu entries", n);
	eng__files_chunks_each(s->files, *total_out, NULL);
	return 0;
}

/*
 * -c -n or --partial -n, the receiver: m (consumed) becomes s->files
 * beneath root (taken over; NULL: nothing there yet, every file whole), and
 * what a copy would keep is confirmed with the sender chunk by chunk as the
 * copy would (the maps and digests of kept.c): with -c the old files read
 * where they are with what a cut -c copy's partial file holds, with
 * --partial alone what a cut copy's partial file holds (IO_ROOT_DRY):
 * nothing is made or written.
 * With update, what it holds already is left out first, as a copy leaves
 * it. total_out (may be NULL): chunks_total before that.
 */
static int dry_compare(struct eng_session *s, struct io_manifest *m, struct io_root *root,
		       bool update, uint64_t **total_out)
{
	uint8_t *holds = NULL, *kept = NULL;
	int err;

	if (root)
		io_root_set_flags(root, IO_ROOT_PARTIAL | IO_ROOT_DRY |
						(s->checksum ? IO_ROOT_CHECKSUM : 0));
	err = eng__files_create(ENG_RECEIVER, m, s->chunk, root, 0, &s->files);
	if (!err && total_out)
		err = chunks_total(s, total_out);
	if (!err && update)
		err = eng__files_holds(s->files, &holds);
	if (!err && update)
		err = eng__map_send(&s->ctl, ENG_MSG_SKIP, holds, eng__files_map_len(s->files));
	if (!err && root)
		err = eng__files_kept(s->files, &kept);
	else if (!err && !(kept = calloc(eng__files_kept_map_len(s->files), 1)))
		err = rcp_err(-ENOMEM, "out of memory");
	if (!err)
		err = eng__map_send(&s->ctl, ENG_MSG_KEPT, kept, eng__files_kept_map_len(s->files));
	if (!err)
		err = eng__kept_send(s, kept);
	free(holds);
	free(kept);
	return err;
}

/* Client, pull -n with -c or --partial: what it would keep confirmed, m left the caller's. */
static int dry_pull_compare(struct eng_session *s, const struct eng_copy_opts *cp,
			    const struct io_manifest *m, struct io_root *root,
			    struct eng_dry_chunks **c_out)
{
	struct io_manifest *mine = NULL;
	uint64_t *total = NULL;
	int err = io_manifest_pick(m, NULL, &mine);

	if (!err)
		err = dry_compare(s, mine, root, cp->update, &total);
	else
		io_root_close(root);
	if (!err)
		err = chunks_told(s, total, c_out);
	free(total);
	return err;
}

int eng__dry_pull(struct eng_session *s, const struct eng_copy_opts *cp, struct io_manifest *m)
{
	struct io_root *root = NULL;
	struct eng_dry_chunks *c = NULL;
	uint8_t *why = NULL;
	char *name = NULL;
	int err = eng__dest_dry(NULL, cp->dst, io_src_contents_only(cp->src, cp->n_src), m, &name,
				&why, s->del.on || s->partial ? &root : NULL);

	if (!err && s->del.on) /* what would go, named first */
		err = eng__delete_run(s, root, m, true);
	if (!err && s->partial) { /* -c or --partial (s->partial with either) */
		err = dry_pull_compare(s, cp, m, root, &c);
		root = NULL; /* taken over */
	}
	io_root_close(root);
	if (!err)
		err = dry_tell(cp, m, NULL, why, c); /* eng__dest_dry renamed m already */
	else
		io_manifest_destroy(m);
	free(name);
	free(why);
	free(c);
	return err;
}

/* Client, push -n with -c or --partial: its chunks confirmed as a copy's (the maps of kept.c). */
static int dry_push_compare(struct eng_session *s, const struct eng_copy_opts *cp,
			    struct eng_dry_chunks **c_out)
{
	uint64_t *total = NULL;
	int err = chunks_total(s, &total);

	if (!err)
		err = eng__session_maps_recv(s, cp->update, true);
	if (!err)
		err = chunks_told(s, total, c_out);
	free(total);
	return err;
}

int eng__dry_push_recv(struct eng_session *s, const struct eng_copy_opts *cp)
{
	const struct io_manifest *mine = eng__files_manifest(s->files);
	struct eng_dry_chunks *c = NULL;
	struct io_manifest *m = NULL;
	json_t *msg = NULL;
	uint8_t *why = malloc(mine->n ? mine->n : 1);
	char *name = NULL;
	size_t i;
	int err = why ? eng__proto_recv(&s->ctl, s->timeout_ms, ENG_MSG_DRY_RUN, &msg)
		      : rcp_err(-ENOMEM, "out of memory");

	if (!err && json_object_get(msg, ENG_KEY_NAME))
		err = eng__proto_name(json_object_get(msg, ENG_KEY_NAME), "a new name", &name);
	if (!err) /* a byte per entry: no bit check (8 items per byte) */
		err = eng__map_recv(&s->ctl, s->timeout_ms, ENG_MSG_DRY_RUN_WHY, mine->n * 8, why,
				    mine->n);
	for (i = 0; !err && i < mine->n; i++)
		if (why[i] > IO_DIFF_MAX)
			err = rcp_err(-EPROTO, "the server's dry run names an unknown difference");
	if (!err && s->del.on) /* what would go, named first */
		err = eng__delete_heard(s);
	if (!err && s->partial) /* -c or --partial */
		err = dry_push_compare(s, cp, &c);
	if (!err)
		err = io_manifest_pick(mine, NULL, &m);
	if (!err)
		err = dry_tell(cp, m, name, why, c);
	json_decref(msg);
	free(name);
	free(why);
	free(c);
	return err;
}

int eng__dry_answer(struct eng_session *s, const struct io_root *root, const char *dst,
		    bool contents, bool update, struct io_manifest *m)
{
	json_t *msg = eng__proto_msg(ENG_MSG_DRY_RUN, false);
	struct io_root *dest = NULL;
	uint8_t *why = NULL;
	char *name = NULL;
	int err = eng__dest_dry(root, dst, contents, m, &name, &why,
				s->del.on || s->partial ? &dest : NULL);

	if (!err && !msg)
		err = rcp_err(-ENOMEM, "out of memory");
	if (!err && name)
		err = eng__proto_set_hex(msg, ENG_KEY_NAME, name, strlen(name));
	if (!err)
		err = eng__proto_send(&s->ctl, msg);
	if (!err)
		err = eng__map_send(&s->ctl, ENG_MSG_DRY_RUN_WHY, why, m->n);
	if (!err && s->del.on) /* what --delete would remove, removing nothing */
		err = eng__delete_run(s, dest, m, true);
	if (!err && s->partial) { /* -c or --partial; m and dest taken over */
		err = dry_compare(s, m, dest, update, NULL);
		m = NULL;
		dest = NULL;
	}
	io_root_close(dest);
	if (!err && m) /* for the log line: a file side that reads nothing */
		err = eng__files_create(ENG_SENDER, m, s->chunk, NULL, 0, &s->files);
	else
		io_manifest_destroy(m);
	json_decref(msg);
	free(name);
	free(why);
	return err;
}

/* A pull's sources, after authentication (sealed when keyed, and not held to the hello's size). */
int eng__sources_send(struct eng_session *s, const struct eng_copy_opts *cp)
{
	json_t *m = eng__proto_msg(ENG_MSG_SOURCES, false), *srcs = json_array();
	void *filter = NULL;
	size_t i, len = 0;
	int err = m && srcs ? 0 : -ENOMEM;

	if (!err && json_object_set(m, ENG_KEY_SRC, srcs))
		err = -ENOMEM;
	for (i = 0; i < cp->n_src && !err; i++)
		if (json_array_append_new(srcs, eng__proto_hex(cp->src[i], strlen(cp->src[i]))))
			err = -ENOMEM;
	if (!err && cp->filter && (err = io_filter_encode(cp->filter, &filter, &len)) == 0)
		json_object_set_new(m, ENG_KEY_FILTER_BYTES, json_integer((json_int_t)len));
	if (!err)
		err = eng__proto_send(&s->ctl, m);
	if (!err && len) /* the server walks through it */
		err = eng__map_send(&s->ctl, ENG_MSG_FILTER, filter, len);
	free(filter);
	json_decref(srcs);
	json_decref(m);
	return err;
}

int eng__filter_recv(struct eng_session *s, const json_t *sources, struct io_filter **f_out)
{
	uint64_t len = 0;
	uint8_t *buf;
	int err;

	*f_out = NULL;
	if (!json_object_get(sources, ENG_KEY_FILTER_BYTES))
		return 0;
	if ((err = eng__proto_get_u64(sources, ENG_KEY_FILTER_BYTES, &len)) != 0)
		return err;
	if (len == 0 || len > IO_FILTER_MAX_BYTES)
		return rcp_err(-EFBIG, "the client's filter of %" PRIu64 " bytes is out of bounds",
			       len);
	if (!(buf = malloc(len)))
		return rcp_err(-ENOMEM, "out of memory for the client's filter");
	err = eng__map_recv(&s->ctl, s->timeout_ms, ENG_MSG_FILTER, len * 8, buf, len);
	if (!err)
		err = io_filter_decode(buf, len, f_out);
	free(buf);
	return err;
}
