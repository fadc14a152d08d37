/*
 * test_session_hostile.c - sessions against hostile or failing peers, over
 * the loopback transport (session_harness.h): hostile hellos and hostile
 * pull servers are refused with a sentence, nothing is created, and the
 * server keeps serving; a peer's words and a rail's name are escaped; a
 * welcome is held to the client's own terms and a hello's terms are filled
 * only when taken; a cancelled copy leaves no file under its final name and
 * no temporary behind. What a stranger who
 * has not proven the key can cost the server is in
 * test_session_stranger.c.
 *
 * Design: raw TCP peers (a client sending bad hellos, a fake server sending
 * hostile file lists) speak the framing by hand so they test it rather than
 * reuse it. Cancellation is made deterministic by a gated transport: the
 * loopback with the sender's chunk source held after a few chunks until the
 * job stops, so the copy cannot finish before the cancel is seen.
 *
 * Threading: besides the server, sometimes a fake server or a canceller
 * thread.
 */
#include "session_harness.h"
#include "session_gate.h"
/* Send hello on a new connection; the server must refuse it with what. */
static void hello_refused(const struct server *s, json_t *hello, const char *what)
{
	int fd = raw_connect((uint16_t)atomic_load(&s->port));

	if (!json_object_get(hello, ENG_KEY_SERVER))
		json_object_set_new(hello, ENG_KEY_SERVER,
				    dialed_json((uint16_t)atomic_load(&s->port)));
	raw_json(fd, hello);
	assert_refused(fd, what);
}

/* A push of one empty file "x" into dst, over raw TCP: the server must refuse dst with what. */
static void raw_push_refused(const struct server *s, const char *dst, const char *what)
{
	struct io_entry e = {.path = "x", .type = IO_FILE, .mode = 0644};
	struct io_manifest m = {.entry = &e, .n = 1, .n_files = 1};
	int fd = raw_push_ready((uint16_t)atomic_load(&s->port), dst);

	assert_int_equal(eng__manifest_send(&ENG_CTL_PLAIN(fd), &m), 0);
	assert_refused(fd, what);
}

static void test_bad_hellos_get_an_error_and_the_server_keeps_serving(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	uint32_t be = htonl(ENG_PROTO_MAX_HELLO + 1);
	char root[4096];
	json_t *h;
	int fd;

	fx_dir(fx, "root", root);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	h = hello_bench(1, 4096);
	json_object_set_new(h, "proto", json_string("http"));
	hello_refused(&fx->srv, h, "does not speak the railcp protocol");
	h = hello_bench(1, 4096);
	json_object_set_new(h, "version", json_integer(ENG_PROTO_VERSION + 1));
	hello_refused(&fx->srv, h, "use the same railcp release on both sides");
	h = hello_bench(1, 4096);
	json_object_set_new(h, "type", json_string("proof"));
	hello_refused(&fx->srv, h, "where 'hello' was due");
	/* A frame longer than a hello may be: refused on its length alone. */
	fd = raw_connect((uint16_t)atomic_load(&fx->srv.port));
	raw_write(fd, &be, sizeof(be));
	assert_refused(fd, "it sent a frame of 65537 bytes");
	fd = raw_connect((uint16_t)atomic_load(&fx->srv.port));
	raw_frame(fd, "GET / HTTP/1.0", 14);
	assert_refused(fd, "not a JSON object");
	hello_refused(&fx->srv, hello_bench(ENG_MAX_STRIPES + 1, 4096), "1 to 256 stripes");
	hello_refused(&fx->srv, hello_bench(0, 4096), "1 to 256 stripes");
	hello_refused(&fx->srv, hello_bench(1, 4096 + 512),
		      "a chunk of 4608 bytes is out of bounds");
	hello_refused(&fx->srv, hello_bench(1, 0), "a chunk of 0 bytes is out of bounds");
	hello_refused(&fx->srv, hello_bench(1, 2 * (json_int_t)ENG_CHUNK_MAX), "out of bounds");
	h = hello_bench(1, 4096);
	json_object_set_new(h, "bytes", json_integer(0));
	hello_refused(&fx->srv, h, "a bench of 0 bytes is out of bounds");
	h = hello_bench(1, 4096);
	json_object_set_new(h, "job", json_string("shell"));
	hello_refused(&fx->srv, h, "does not run 'shell' jobs");
	h = hello_bench(1, 4096);
	json_array_set_new(json_object_get(h, "stripes"), 0, stripe_json("198.18.1", 24));
	hello_refused(&fx->srv, h, "no valid IP address");
	h = hello_bench(1, 4096); /* an IPv6 stripe with a prefix past 128 bits */
	json_array_set_new(json_object_get(h, "stripes"), 0, stripe_json("2001:2:0:1::1", 129));
	hello_refused(&fx->srv, h, "no valid IP address");
	/* A key offered to a server that has none. */
	h = hello_bench(1, 4096);
	json_object_set_new(h, "challenge", json_string("00"));
	hello_refused(&fx->srv, h, "has no key");
	/* A push whose destination leads out of the root: refused, nothing made. */
	raw_push_refused(&fx->srv, "../x", "refused the destination \"../x\"");
	raw_push_refused(&fx->srv, "/x", "refused the destination \"/x\"");
	raw_push_refused(&fx->srv, "a/../../x", "refused the destination");
	assert_false(t_exists(fx->base, "x"));
	assert_true(dir_empty(root));
	/* A connection that says nothing and leaves. */
	close(raw_connect((uint16_t)atomic_load(&fx->srv.port)));
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_the_peers_words_are_escaped_in_sentences(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char longer[1000];
	json_t *h;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	h = hello_bench(1, 4096);
	json_object_set_new(h, "type", json_string("hello\n[fake log] railcp: \x1b[2J\xc3\xa9"));
	hello_refused(&fx->srv, h,
		      "the peer sent 'hello\\x0a[fake log] railcp: \\x1b[2J\\xc3\\xa9' where "
		      "'hello' was due");
	h = hello_bench(1, 4096);
	json_object_set_new(h, "job",
			    json_string("shell\r\nrailcp: session 1 from 10.0.0.1: bench done"));
	hello_refused(&fx->srv, h,
		      "does not run 'shell\\x0d\\x0arailcp: session 1 from 10.0.0.1: bench done' "
		      "jobs");
	/* A long word is cut short. */
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	h = hello_bench(1, 4096);
	json_object_set_new(h, "type", json_string(longer));
	hello_refused(&fx->srv, h, "xxxx...' where 'hello' was due");
	bench_ok(&fx->srv, NULL);
}

/* The server's transport: the loopback, but its job's first rail has a hostile name. */
static struct eng_transport hostile_rail_tr;

static int hostile_rail_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job; /* as gate_conn_create */

	snprintf(job->rail[0].name, sizeof(job->rail[0].name), "loop1:1\n\x1b[2J");
	return eng__transport_loopback()->conn_create(cfg, conn_out);
}

static void test_the_servers_rail_name_is_escaped_in_the_report(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;

	hostile_rail_tr = *eng__transport_loopback();
	hostile_rail_tr.conn_create = hostile_rail_conn_create;
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, &hostile_rail_tr, NULL, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	assert_int_equal(bench(&fx->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r), 0);
	assert_string_equal(r.rail[0].peer, "loop1:1\\x0a\\x1b[2J");
}

/* ---- a hostile server answering a pull ---- */

struct fake {
	int lfd;
	uint16_t port;
	const struct io_manifest *m; /* what it sends as the file list */
	pthread_t thread;
	bool got_hello; /* a hello for a pull arrived */
	char said[512]; /* the client's "error" message, "" if none */
	bool closed;	/* the client closed the connection after it */
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	struct pollfd pfd = {.fd = f->lfd, .events = POLLIN};
	json_t *m;
	int fd;

	if (poll(&pfd, 1, TIMEOUT_MS) != 1 || (fd = accept(f->lfd, NULL, NULL)) < 0)
		return NULL;
	m = raw_recv(fd);
	f->got_hello = m && !strcmp(json_string_value(json_object_get(m, "job")) ?: "", "pull");
	json_decref(m);
	/* The client names its sources after the hello (after the proofs, when keyed). */
	m = f->got_hello ? raw_recv(fd) : NULL;
	f->got_hello = m && !strcmp(json_string_value(json_object_get(m, "type")) ?: "", "sources");
	json_decref(m);
	if (f->got_hello && eng__manifest_send(&ENG_CTL_PLAIN(fd), f->m) == 0 &&
	    (m = raw_recv(fd))) {
		if (!strcmp(json_string_value(json_object_get(m, "type")) ?: "", "error"))
			snprintf(f->said, sizeof(f->said), "%s",
				 json_string_value(json_object_get(m, "message")) ?: "");
		json_decref(m);
		f->closed = raw_closed(fd);
	}
	close(fd);
	return NULL;
}

static void fake_start(struct fake *f, const struct io_manifest *m)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	*f = (struct fake){.m = m};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &len), 0);
	f->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

/*
 * Pull src (one source) into dst from a server that answers with m: the
 * client must fail with err and a sentence containing what, tell the server
 * why, and create nothing in dir.
 */
static void pull_refused(const char *dir, const char *dst, const char *src, bool recursive,
			 const struct io_manifest *m, int err, const char *what)
{
	static const unsigned rails[] = {1};
	const char *srcs[] = {src};
	struct eng_copy_opts cp = copy_opts(ENG_PULL, srcs, 1, dst);
	struct eng_client_opts o;
	struct topo_plan plan;
	struct eng_report r;
	struct fake f;
	int got;

	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp.recursive = recursive;
	fake_start(&f, m);
	o = (struct eng_client_opts){.host = "127.0.0.1",
				     .port = f.port,
				     .chunk = cp.chunk,
				     .plan = &plan,
				     .timeout_ms = TIMEOUT_MS,
				     .tr = eng__transport_loopback(),
				     .copy = &cp};
	got = eng__client_run(&o, &r);
	pthread_join(f.thread, NULL);
	close(f.lfd);
	assert_true(f.got_hello);
	assert_int_equal(got, err);
	if (!strstr(rcp_err_msg(got), what))
		fail_msg("the client said \"%s\", not \"%s\"", rcp_err_msg(got), what);
	assert_string_equal(f.said, rcp_err_msg(got)); /* the server is told the same sentence */
	assert_true(f.closed);
	assert_true(dir_empty(dir));
}

static void test_hostile_pull_file_lists_fail_and_create_nothing(void **state)
{
	struct fx *fx = *state;
	struct io_extent ext = {0, 5};
	struct io_entry e[2];
	struct io_manifest m = {.entry = e};
	char dst[4096], fresh[4096];

	fx_dir(fx, "dst", dst);
	t_path(fresh, dst, "fresh");
	/* A name leading out: the file list itself is refused. */
	e[0] = (struct io_entry){.path = "../evil", .type = IO_FILE, .mode = 0644};
	m.n = 1;
	pull_refused(dst, dst, "a", false, &m, -EBADMSG, "the name \"../evil\"");
	e[0].path = "/etc/evil";
	pull_refused(dst, fresh, "a", false, &m, -EBADMSG, "is absolute");
	/* A name other than the one asked for, with data... */
	e[0] = (struct io_entry){
		.path = "b", .type = IO_FILE, .mode = 0644, .size = 5, .ext = &ext, .n_ext = 1};
	pull_refused(dst, dst, "a", false, &m, -EPROTO, "\"b\", which was not asked for");
	/* ...or empty, which would be made at once, before any chunk, if it got through. */
	e[0] = (struct io_entry){.path = "b", .type = IO_FILE, .mode = 0644};
	pull_refused(dst, dst, "dir/a", false, &m, -EPROTO, "\"b\", which was not asked for");
	pull_refused(dst, fresh, "a", false, &m, -EPROTO, "which was not asked for");
	/* The one asked for, and another. */
	e[1] = e[0];
	e[0].path = "a";
	m.n = 2;
	pull_refused(dst, dst, "a", false, &m, -EPROTO, "\"b\", which was not asked for");
	/* A directory without -r. */
	e[0] = (struct io_entry){.path = "a", .type = IO_DIR, .mode = 0755};
	e[1].path = "a/b";
	pull_refused(dst, dst, "a", false, &m, -EPROTO, "-r was not given");
	/* With -r, a file beneath a symlink: its directory is not a directory. */
	e[0] = (struct io_entry){.path = "a", .type = IO_SYMLINK, .link = "/tmp", .size = 4};
	pull_refused(dst, dst, "a", true, &m, -EBADMSG, "its directory is not listed before it");
	assert_false(t_exists(dst, "fresh"));
}

/* ---- cancel (session_gate.h) ---- */

#define BIG_SIZE (2 * MiB + 100)

static void test_a_cancelled_push_leaves_nothing_at_the_server(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct fx *fx = *state;
	_Atomic bool cancel = false;
	struct push1 p = {.bytes = BIG_SIZE,
			  .seed = 5,
			  .rails = rails,
			  .n_rails = 2,
			  .helpers = 1, /* the gate holds a helper, not the worker */
			  .srv_helpers = 1,
			  .tr = gate_arm(ENG_WRITE_BATCH),
			  .cancel = &cancel};
	struct canceller c = {.flag = &cancel, .dir = p.root}; /* read once the gate holds */
	int err;

	assert_int_equal(pthread_create(&c.thread, NULL, canceller_main, &c), 0);
	err = push_one(fx, &p);
	pthread_join(c.thread, NULL);
	assert_true(c.held);
	assert_true(c.saw_tmp); /* the server had begun the file */
	assert_int_equal(err, -EINTR);
	assert_non_null(strstr(rcp_err_msg(err), "interrupted"));
	/* Once the server has ended the session: no file, no temporary. */
	assert_int_equal(server_stop(&fx->srv), 0);
	assert_false(t_exists(p.root, "big"));
	assert_int_equal(t_count_tmp(p.root), 0);
	assert_true(dir_empty(p.root));
}

static void test_a_cancelled_pull_leaves_nothing_locally(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char root[4096], dst[4096];
	const char *pull_src[] = {"big"};
	_Atomic bool cancel = false;
	struct canceller c = {.flag = &cancel};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "root", root);
	fx_dir(fx, "dst", dst);
	pattern_write(root, "big", BIG_SIZE, 6);
	plan_make(&fx->srv.plan, rails, 1, 2, 1, BUDGET);
	fx->srv.plan.helpers = 1; /* the gate holds a helper, not the worker */
	server_start(&fx->srv, gate_arm(ENG_WRITE_BATCH), root, NULL);
	plan_make(&plan, rails, 1, 2, 1, BUDGET);
	plan.helpers = 1;
	cp = copy_opts(ENG_PULL, pull_src, 1, dst);
	cp.cancel = &cancel;
	c.dir = dst;
	assert_int_equal(pthread_create(&c.thread, NULL, canceller_main, &c), 0);
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	pthread_join(c.thread, NULL);
	assert_true(c.held);
	assert_true(c.saw_tmp);
	assert_int_equal(err, -EINTR);
	assert_non_null(strstr(rcp_err_msg(err), "interrupted"));
	assert_true(dir_empty(dst));
	/* The server's sender ended too, and serves on. */
	bench_ok(&fx->srv, NULL);
}

/*
 * A server's welcome is held to this side's terms before anything connects:
 * slots within this side's budget, its tokens when there is no key, and a
 * copy's chunk count as this side planned it. Each refusal is a sentence.
 */
static void welcome_refused(json_t *w, bool keyed, const uint64_t *want, const char *what)
{
	uint8_t tokens[ENG_SEAL_KEY_LEN];
	uint64_t n_slots = 0;
	int err = eng__welcome_terms(w, 8, keyed, want, &n_slots, tokens);

	assert_int_equal(err, -EPROTO);
	if (!strstr(rcp_err_msg(err), what))
		fail_msg("the client said \"%s\", not \"%s\"", rcp_err_msg(err), what);
	assert_int_equal(n_slots, 0);
	json_decref(w);
}

static json_t *welcome(json_int_t slots, json_int_t chunks)
{
	static const uint8_t token[ENG_SEAL_KEY_LEN] = {1, 2, 3};

	return json_pack("{s:s, s:I, s:I, s:o, s:[]}", "type", "welcome", "slots", slots, "chunks",
			 chunks, "token", eng__proto_hex(token, sizeof(token)), "stripes");
}

static void test_a_servers_welcome_is_held_to_this_sides_terms(void **state)
{
	uint8_t tokens[ENG_SEAL_KEY_LEN] = {0};
	uint64_t want = 7, n_slots = 0;
	json_t *w = welcome(8, 7);

	(void)state;
	assert_int_equal(eng__welcome_terms(w, 8, false, &want, &n_slots, tokens), 0);
	assert_int_equal(n_slots, 8);
	assert_int_equal(tokens[0], 1);
	assert_int_equal(tokens[2], 3);
	json_decref(w);
	welcome_refused(welcome(9, 7), false, &want, "offered 9 slots per stripe");
	welcome_refused(welcome(1, 7), true, &want, "offered 1 slots per stripe");
	welcome_refused(welcome(0, 7), false, &want, "welcome is incomplete");
	welcome_refused(welcome(4, 6), false, &want, "planned 6 chunks, this side 7");
	w = welcome(4, 7);
	json_object_del(w, "stripes");
	welcome_refused(w, false, &want, "welcome is incomplete");
	/* No key: the tokens must come; keyed, they are never read. */
	w = welcome(4, 7);
	json_object_del(w, "token");
	assert_int_not_equal(eng__welcome_terms(w, 8, false, NULL, &n_slots, tokens), 0);
	assert_int_equal(eng__welcome_terms(w, 8, true, NULL, &n_slots, tokens), 0);
	assert_int_equal(n_slots, 4);
	json_decref(w);
}

/*
 * A hello's terms are filled only when the server takes them: a refused
 * hello leaves none behind (the fuzzer found --delete without -r refused
 * with the job already set).
 */
static void terms_refused(json_t *h, bool serves_files, int want, const char *what)
{
	struct eng_hello_terms t;
	int err = eng__hello_terms(h, serves_files, &t);

	assert_int_equal(err, want);
	if (!strstr(rcp_err_msg(err), what))
		fail_msg("the server said \"%s\", not \"%s\"", rcp_err_msg(err), what);
	assert_null(t.kind);
	assert_int_equal(t.chunk, 0);
	assert_false(t.delete_extra);
	json_decref(h);
}

static json_t *hello_push(bool delete_extra, bool recursive)
{
	json_t *h = hello_bench(1, 4096);

	json_object_set_new(h, "job", json_string("push"));
	json_object_set_new(
		h, "flags",
		json_pack("{s:b, s:b}", "delete", delete_extra, "recursive", recursive));
	return h;
}

static void test_a_refused_hello_leaves_no_terms(void **state)
{
	struct eng_hello_terms t;
	json_t *h = hello_push(true, true);

	(void)state;
	assert_int_equal(eng__hello_terms(h, true, &t), 0);
	assert_string_equal(t.kind, "push");
	assert_true(t.delete_extra);
	assert_int_equal(t.chunk, 4096);
	json_decref(h);
	terms_refused(hello_push(true, false), true, -EINVAL, "--delete needs -r");
	terms_refused(hello_push(false, false), false, -EPERM, "without --root");
	terms_refused(hello_bench(0, 4096), false, -EINVAL, "1 to 256 stripes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_bad_hellos_get_an_error_and_the_server_keeps_serving),
		T(test_the_peers_words_are_escaped_in_sentences),
		T(test_the_servers_rail_name_is_escaped_in_the_report),
		T(test_hostile_pull_file_lists_fail_and_create_nothing),
		T(test_a_cancelled_push_leaves_nothing_at_the_server),
		T(test_a_cancelled_pull_leaves_nothing_locally),
		T(test_a_servers_welcome_is_held_to_this_sides_terms),
		T(test_a_refused_hello_leaves_no_terms),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
