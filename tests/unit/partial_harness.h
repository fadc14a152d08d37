/*
 * partial_harness.h - copies with --partial over the loopback transport,
 * for test_session_partial.c and test_io_partial_owner.c: a server beneath
 * root and a big file of 513 chunks in src (and "pullme" in root), a push
 * or pull cut once the gate holds it, the server again, and the names of
 * what a cut copy keeps (".railcp-tmp-p", "-r", "-l" and 16 hex digits).
 * Header-only, like session_harness.h.
 *
 * Threading: one gated copy at a time, and a canceller thread.
 */
#ifndef RAILCP_TEST_PARTIAL_HARNESS_H
#define RAILCP_TEST_PARTIAL_HARNESS_H

#include "session_harness.h"
#include "session_gate.h"
#include "engine/session/session_int.h"

#include <dirent.h>
#include <sys/stat.h>

#define PBIG (2 * MiB + 100) /* 513 chunks of 4 KiB */

/* How many names beneath dir (not below) start with prefix. */
static inline int count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/* The path of the one name in dir that starts with prefix. */
static inline void path_of_prefix(const char *dir, const char *prefix, char out[4096])
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	out[0] = '\0';
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			t_path(out, dir, de->d_name);
	closedir(d);
	assert_true(out[0]);
}

struct pt {
	char src[4096], root[4096], dst[4096], big[4096];
	struct topo_plan plan;
};

/* A server (one helper per worker: the gate holds a helper) and the big file in src and root. */
static inline void pt_start(struct fx *fx, struct pt *p, const struct eng_transport *srv_tr)
{
	static const unsigned rails[] = {1, 2};

	fx_dir(fx, "src", p->src);
	fx_dir(fx, "root", p->root);
	fx_dir(fx, "dst", p->dst);
	pattern_write(p->src, "big", PBIG, 5);
	pattern_write(p->root, "pullme", PBIG, 6);
	t_path(p->big, p->src, "big");
	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	fx->srv.plan.helpers = 1;
	server_start(&fx->srv, srv_tr, p->root, NULL);
	plan_make(&p->plan, rails, 2, 1, 1, BUDGET);
	p->plan.helpers = 1;
}

/* A push (or pull) of the big file with --partial over tr, cancelled once it is held if cut. */
static inline int pt_copy(struct fx *fx, struct pt *p, enum eng_copy_dir dir,
			  const struct eng_transport *tr, bool cut, struct eng_report *r)
{
	const char *push_src[] = {p->big}, *pull_src[] = {"pullme"};
	_Atomic bool cancel = false;
	struct canceller c = {.flag = &cancel, .dir = dir == ENG_PUSH ? p->root : p->dst};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
						  : copy_opts(ENG_PULL, pull_src, 1, p->dst);
	int err;

	cp.partial = true;
	if (cut) {
		cp.cancel = &cancel;
		assert_int_equal(pthread_create(&c.thread, NULL, canceller_main, &c), 0);
	}
	memset(r, 0, sizeof(*r));
	err = copy(&fx->srv, &p->plan, &cp, tr, r);
	if (cut) {
		pthread_join(c.thread, NULL);
		assert_true(c.held && c.saw_tmp);
		assert_int_equal(err, -EINTR);
	}
	return err;
}

/* The server again, once every session of the one before has ended. */
static inline void server_again(struct fx *fx, struct pt *p)
{
	assert_int_equal(server_stop(&fx->srv), 0);
	server_start(&fx->srv, NULL, p->root, NULL);
}

/* A cut push: the server's session ends keeping the partial file, its record and its log. */
static inline void cut_push(struct fx *fx, struct pt *p)
{
	struct eng_report r;

	pt_copy(fx, p, ENG_PUSH, gate_arm(ENG_WRITE_BATCH), true, &r);
	server_again(fx, p);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-r"), 1);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-p"), 1);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-l"), 1);
	assert_false(t_exists(p->root, "big")); /* nothing under the final name */
}

/* A push with --partial, not cut: the file arrives whole; kept and sent add up. */
static inline void resumed_push(struct fx *fx, struct pt *p, struct eng_report *r)
{
	char got[4096];

	assert_int_equal(pt_copy(fx, p, ENG_PUSH, NULL, false, r), 0);
	assert_int_equal(r->bytes + r->bytes_kept, PBIG);
	t_path(got, p->root, "big");
	file_same(p->big, got, PBIG);
	assert_int_equal(t_count_tmp(p->root), 0); /* the partial file and its record gone */
}

#endif
