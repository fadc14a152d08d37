/*
 * partial_harness.c - the functions of partial_harness.h: copies with
 * --partial of a big file over the loopback, cut once the gate holds them,
 * and what they leave. Compiled once, linked into each test that includes
 * the header.
 *
 * Threading: one gated copy at a time, and a canceller thread.
 */
#include "partial_harness.h"

int count_prefix(const char *dir, const char *prefix)
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

void path_of_prefix(const char *dir, const char *prefix, char out[4096])
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

void pt_start(struct fx *fx, struct pt *p, const struct eng_transport *srv_tr)
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
	p->checksum = false;
	p->cut_until = NULL;
}

int pt_copy(struct fx *fx, struct pt *p, enum eng_copy_dir dir, const struct eng_transport *tr,
	    bool cut, struct eng_report *r)
{
	const char *push_src[] = {p->big}, *pull_src[] = {"pullme"};
	_Atomic bool cancel = false;
	struct canceller c = {
		.flag = &cancel, .dir = dir == ENG_PUSH ? p->root : p->dst, .until = p->cut_until};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
						  : copy_opts(ENG_PULL, pull_src, 1, p->dst);
	int err;

	cp.partial = !p->checksum;
	cp.checksum = p->checksum;
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

void server_again(struct fx *fx, struct pt *p)
{
	assert_int_equal(server_stop(&fx->srv), 0);
	server_start(&fx->srv, NULL, p->root, NULL);
}

void cut_push(struct fx *fx, struct pt *p)
{
	struct eng_report r;

	pt_copy(fx, p, ENG_PUSH, gate_arm(ENG_WRITE_BATCH), true, &r);
	server_again(fx, p);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-r"), 1);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-p"), 1);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-l"), 1);
	assert_false(t_exists(p->root, "big")); /* nothing under the final name */
}

void resumed_push(struct fx *fx, struct pt *p, struct eng_report *r)
{
	char got[4096];

	assert_int_equal(pt_copy(fx, p, ENG_PUSH, NULL, false, r), 0);
	assert_int_equal(r->bytes + r->bytes_kept, PBIG);
	t_path(got, p->root, "big");
	file_same(p->big, got, PBIG);
	assert_int_equal(t_count_tmp(p->root), 0); /* the partial file and its record gone */
}

/* What a -c -n (or --partial -n) copy listed of its one file: its chunks, into ctx. */
static void dry_counted(const struct io_manifest *m, const uint8_t *why,
			const struct eng_dry_chunks *c, void *ctx)
{
	(void)why;
	assert_int_equal(m->n, 1);
	assert_non_null(c);
	*(struct eng_dry_chunks *)ctx = c[0];
}

/* A -c -n (--partial -n unless p->checksum) push of the big file (or pull of pullme): its count. */
struct eng_dry_chunks pt_dry(struct fx *fx, struct pt *p, enum eng_copy_dir dir)
{
	const char *push_src[] = {p->big}, *pull_src[] = {"pullme"};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
						  : copy_opts(ENG_PULL, pull_src, 1, p->dst);
	struct eng_dry_chunks c = {0};
	struct eng_report r;

	cp.checksum = p->checksum;
	cp.partial = !p->checksum;
	cp.dry_run = true;
	cp.dry_list = dry_counted;
	cp.dry_ctx = &c;
	assert_int_equal(copy(&fx->srv, &p->plan, &cp, NULL, &r), 0);
	return c;
}
