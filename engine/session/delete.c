/*
 * delete.c - --delete on the control connection (protocol 11).
 *
 * The receiver removes the extras (io_root_delete) only once its files are
 * all in and finalized: receiver_end calls eng__delete_run after
 * eng__files_finish succeeded, so a copy that failed or was cancelled
 * removes nothing. A push's server does it beneath its root and answers
 * with a "deleted" frame (the count, and the names' length) and the names
 * in "deleted_names" frames before its result; a pull's client does it
 * locally and tells its caller. A dry run does the same walk removing
 * nothing, after the list's comparison. The client's filter travels with a
 * push (the hello's "filter_bytes", "filter" frames after the list) so
 * that the server keeps the names it excludes. Names kept for the client
 * stop at ENG_DELETE_NAMES_MAX bytes; the count goes on.
 *
 * Threading: the session's thread.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The most bytes of names a server keeps and a client takes (the count is not bounded). */
#define ENG_DELETE_NAMES_MAX (16u << 20)

struct names {
	struct eng_alive alive; /* the walk's "alive" frames to the peer waiting for its end */
	struct eng_delete *d;
	char *buf;
	size_t len, cap;
	bool keep; /* a server's: names kept for the client, else said to the caller */
};

static void name_said(const char *path, bool is_dir, void *ctx)
{
	struct names *n = ctx;
	size_t need = strlen(path) + is_dir + 1;
	char *p;

	if (!n->keep) {
		char *slashed = is_dir ? malloc(need) : NULL;

		if (slashed)
			snprintf(slashed, need, "%s/", path);
		if (n->d->said)
			n->d->said(slashed ? slashed : path, n->d->ctx);
		free(slashed);
		return;
	}
	if (n->len + need > ENG_DELETE_NAMES_MAX)
		return;
	if (n->len + need > n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 4096;

		while (cap < n->len + need)
			cap *= 2;
		if (!(p = realloc(n->buf, cap)))
			return; /* counted, not named */
		n->buf = p;
		n->cap = cap;
	}
	memcpy(n->buf + n->len, path, need - 1 - is_dir);
	if (is_dir)
		n->buf[n->len + need - 2] = '/';
	n->buf[n->len + need - 1] = '\0';
	n->len += need;
}

/*
 * Each entry the walk looks at (eng__alive_tick), so that the peer waiting
 * for this walk's end does not time out on a large tree (its --timeout, at
 * least 1 s, is not known here; a frame of a few bytes four times a second
 * is nothing).
 */
static void visited(void *ctx)
{
	eng__alive_tick(&((struct names *)ctx)->alive);
}

/* A server's answer: the count, then the names. */
static int names_send(struct eng_session *s, const struct names *n)
{
	json_t *m = eng__proto_msg(ENG_MSG_DELETED, false);
	int err = m ? 0 : rcp_err(-ENOMEM, "out of memory");

	if (!err) {
		json_object_set_new(m, ENG_KEY_COUNT, json_integer((json_int_t)s->del.count));
		json_object_set_new(m, ENG_KEY_NAMES_BYTES, json_integer((json_int_t)n->len));
		err = eng__proto_send(&s->ctl, m);
	}
	if (!err && n->len)
		err = eng__map_send(&s->ctl, ENG_MSG_DELETED_NAMES, (const uint8_t *)n->buf,
				    n->len);
	json_decref(m);
	return err;
}

int eng__delete_run(struct eng_session *s, const struct io_root *root, const struct io_manifest *m,
		    bool dry)
{
	/* A dry pull's walk is the client's alone: no one waits for it. */
	bool pulse = s->side == ENG_SERVER || !dry;
	struct names n = {.d = &s->del, .keep = s->side == ENG_SERVER};
	struct io_delete_opts o = {.filter = s->del.filter,
				   .root_too = s->del.root_too,
				   .dry = dry,
				   .said = name_said,
				   .visit = pulse ? visited : NULL,
				   .ctx = &n};
	struct io_delete_result res = {0};
	int err;

	eng__alive_init(&n.alive, &s->ctl);
	err = root ? io_root_delete(root, m, &o, &res) : 0;
	s->del.count = res.removed;
	if (res.removed || res.failed)
		rcp_log(RCP_LOG_INFO, "--delete: %" PRIu64 " entries %s, %" PRIu64 " could not be",
			res.removed, dry ? "would be removed" : "removed", res.failed);
	if (!err && n.keep)
		err = names_send(s, &n);
	free(n.buf);
	return err;
}

/* Each NUL-terminated name of buf, to the caller. */
static int names_tell(const struct eng_delete *d, const char *buf, size_t len)
{
	size_t at = 0;

	if (len && buf[len - 1] != '\0')
		return rcp_err(-EPROTO, "the server's list of entries it removed is cut short");
	while (at < len) {
		if (d->said)
			d->said(buf + at, d->ctx);
		at += strlen(buf + at) + 1;
	}
	return 0;
}

int eng__delete_heard(struct eng_session *s)
{
	uint64_t count = 0, len = 0;
	json_t *msg = NULL;
	char *buf = NULL;
	int err = eng__proto_recv(&s->ctl, s->timeout_ms, ENG_MSG_DELETED, &msg);

	if (!err && !(err = eng__proto_get_u64(msg, ENG_KEY_COUNT, &count)))
		err = eng__proto_get_u64(msg, ENG_KEY_NAMES_BYTES, &len);
	json_decref(msg);
	if (!err && len > ENG_DELETE_NAMES_MAX)
		err = rcp_err(-EPROTO, "the server names %" PRIu64 " bytes of entries it removed",
			      len);
	if (!err && len && !(buf = malloc(len)))
		err = rcp_err(-ENOMEM, "out of memory");
	if (!err && len)
		err = eng__map_recv(&s->ctl, s->timeout_ms, ENG_MSG_DELETED_NAMES, len * 8,
				    (uint8_t *)buf, len);
	if (!err)
		err = names_tell(&s->del, buf, len);
	if (!err)
		s->del.count = count;
	free(buf);
	return err;
}

int eng__delete_filter_set(json_t *hello, const struct io_filter *f)
{
	void *buf = NULL;
	size_t len = 0;
	int err = f ? io_filter_encode(f, &buf, &len) : 0;

	if (!err && len)
		json_object_set_new(hello, ENG_KEY_FILTER_BYTES, json_integer((json_int_t)len));
	free(buf);
	return err;
}

int eng__delete_filter_send(struct eng_session *s, const struct io_filter *f)
{
	void *buf = NULL;
	size_t len = 0;
	int err = f ? io_filter_encode(f, &buf, &len) : 0;

	if (!err && len)
		err = eng__map_send(&s->ctl, ENG_MSG_FILTER, buf, len);
	free(buf);
	return err;
}

int eng__delete_filter_recv(struct eng_session *s, const json_t *hello)
{
	int err = eng__filter_recv(s, hello, &s->del.own);

	s->del.filter = s->del.own;
	return err;
}

void eng__delete_fini(struct eng_delete *d)
{
	io_filter_destroy(d->own);
	d->own = NULL;
	d->filter = NULL;
}
