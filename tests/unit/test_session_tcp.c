/*
 * test_session_tcp.c - whole sessions over the TCP transport on 127.0.0.1
 * (the rail "lo"), the real client and server code in one process: a tree
 * pushed and pulled, a client that asks for the other transport, and a
 * hostile sender whose stripe writes past its credit or sends garbage. The
 * victim's reader refuses the frame before it lands; the session ends with
 * a sentence, nothing is left under a final name nor as a temporary, and
 * the server serves the next session. --tos marks each stripe's socket at
 * both ends (IP_TOS read back from the client's and the server's socket).
 *
 * Design: the hostile end is the real client over TCP with its endpoints'
 * operations swapped, once connected, for a table that forwards to TCP's
 * and breaks the first write (as session_liar.c does for the loopback).
 *
 * Threading: the server's threads and the hostile end's workers, which
 * read the lie (set before the session) and set only an atomic.
 */
#include "session_harness.h"

#include "engine/transport/tcp_int.h"

enum tcp_lie { TCP_LIE_PAST_CREDIT, TCP_LIE_GARBAGE };

static struct {
	enum tcp_lie lie;
	const struct eng_tr_ops *real;
	_Atomic bool told;
} tl;

static struct eng_tr_ops lying_ops;

/* The first write goes out twice into one slot (no credit for the second), or as garbage. */
static int lying_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	static const uint8_t junk[64] = {0xde, 0xad, 0xbe, 0xef};
	int fd = ((struct tcp_ep *)ep->tr)->fd;

	if (atomic_exchange(&tl.told, true))
		return tl.real->write_imm(ep, w, n);
	if (tl.lie == TCP_LIE_GARBAGE)
		return send(fd, junk, sizeof(junk), MSG_NOSIGNAL) < 0 ? -errno : 0;
	return tl.real->write_imm(ep, w, 1) ?: tl.real->write_imm(ep, w, 1);
}

static int lying_connect(struct eng_conn *conn, struct eng_link *l, const union eng_sockaddr *src,
			 const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	int err = eng__transport_tcp()->connect(conn, l, src, dst, peer_link, timeout_ms);

	if (!err) {
		tl.real = l->ep->ops;
		lying_ops = *l->ep->ops;
		lying_ops.write_imm = lying_write_imm;
		l->ep->ops = &lying_ops;
	}
	return err;
}

static const struct eng_transport *liar_of(enum tcp_lie lie)
{
	static struct eng_transport t;

	t = *eng__transport_tcp();
	t.connect = lying_connect;
	tl.lie = lie;
	atomic_store(&tl.told, false);
	return &t;
}

/* A plan on rail "lo" of qps stripes. */
static void plan_lo(struct topo_plan *p, unsigned qps)
{
	static const unsigned num[] = {0};

	plan_make(p, num, 1, qps, 1, BUDGET);
	snprintf(p->rail[0].dev, sizeof(p->rail[0].dev), "lo");
}

static void server_tcp(struct fx *fx, const char *root)
{
	plan_lo(&fx->srv.plan, 2);
	server_start(&fx->srv, eng__transport_tcp(), root, NULL);
}

/* ---- strangers at the stripes' port ---- */

static struct {
	int silent, liar; /* connections made as soon as the server listens */
} strangers = {-1, -1};

/* The server's listen, then two strangers at its port: one silent, one with a made-up token. */
static int stranger_listen(struct eng_conn *conn, const union eng_sockaddr *addr,
			   uint16_t *port_out)
{
	int err = eng__transport_tcp()->listen(conn, addr, port_out);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(*port_out)};
	uint32_t hello[6] = {0x72746831u, 0, 0x1234, 0, 8, 4096};

	if (err)
		return err;
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	strangers.silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strangers.liar = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(strangers.silent, (struct sockaddr *)&to, sizeof(to)) != 0 ||
	    connect(strangers.liar, (struct sockaddr *)&to, sizeof(to)) != 0 ||
	    send(strangers.liar, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello))
		return -EIO;
	return 0;
}

/*
 * A stranger that connects to the stripes' port first and says nothing,
 * and one whose hello names no token of the session, hold up nobody: the
 * client's stripes connect, the push arrives whole, and well before a
 * silent connection's TCP_HELLO_MS (5 s) would have passed.
 */
static void test_strangers_at_the_stripes_port_hold_up_nobody(void **state)
{
	struct fx *fx = *state;
	static struct eng_transport srv_tr;
	char src[4096], root[4096], a[4096], got[4096];
	const char *push_src[] = {a};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	uint64_t t0;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	pattern_write(src, "a", 256 * KiB, 3);
	t_path(a, src, "a");
	srv_tr = *eng__transport_tcp();
	srv_tr.listen = stranger_listen;
	plan_lo(&fx->srv.plan, 1);
	server_start(&fx->srv, &srv_tr, root, NULL);
	plan_lo(&plan, 1);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	t0 = rcp_now_ns();
	assert_int_equal(copy(&fx->srv, &plan, &cp, eng__transport_tcp(), &r), 0);
	assert_true(rcp_now_ns() - t0 < 3000000000ull);
	t_path(got, root, "a");
	file_same(a, got, 256 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
	close(strangers.silent);
	close(strangers.liar);
}

static void test_tcp_pushes_and_pulls_a_tree(void **state)
{
	struct fx *fx = *state;
	char src[4096], root[4096], back[4096], top[4096], got[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	fx_dir(fx, "back", back);
	tree_make(src);
	t_path(top, src, "top");
	server_tcp(fx, root);
	plan_lo(&plan, 3);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	assert_int_equal(copy(&fx->srv, &plan, &cp, eng__transport_tcp(), &r), 0);
	assert_string_equal(r.transport, "tcp");
	t_path(got, root, "top");
	tree_same(top, got);
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	assert_int_equal(copy(&fx->srv, &plan, &cp, eng__transport_tcp(), &r), 0);
	t_path(got, back, "top");
	tree_same(top, got);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* Keyed, every chunk is sealed with the session's key: both ends must derive the same. */
static void test_a_keyed_tcp_push_seals_its_chunks_and_arrives_whole(void **state)
{
	struct fx *fx = *state;
	char src[4096], root[4096], top[4096], got[4096], key[4096];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct eng_client_opts o;
	struct topo_plan plan;
	struct eng_report r;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	fx_key(fx, "key", TEST_KEY, key);
	tree_make(src);
	t_path(top, src, "top");
	plan_lo(&fx->srv.plan, 2);
	server_start(&fx->srv, eng__transport_tcp(), root, key);
	plan_lo(&plan, 3);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	o = client_opts(&fx->srv, &plan, cp.chunk, key);
	o.copy = &cp;
	o.tr = eng__transport_tcp();
	assert_int_equal(eng__client_run(&o, &r), 0);
	t_path(got, root, "top");
	tree_same(top, got);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_client_of_the_other_transport_is_refused_with_a_sentence(void **state)
{
	struct fx *fx = *state;
	static const unsigned one[] = {1};
	struct topo_plan plan;
	struct eng_report r;
	int err;

	server_tcp(fx, NULL);
	plan_make(&plan, one, 1, 1, 1, BUDGET);
	err = bench(&fx->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r); /* over the loopback */
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), "asks for --transport rdma; this server serves tcp"))
		fail_msg("the client was told \"%s\"", rcp_err_msg(err));
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* A push whose sender lies on its stripe: it fails, nothing is left, the server serves on. */
static void push_lied(struct fx *fx, enum tcp_lie lie)
{
	char src[4096], root[4096], a[4096];
	const char *push_src[] = {a};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	pattern_write(src, "a", 512 * KiB, 1);
	t_path(a, src, "a");
	server_tcp(fx, root);
	plan_lo(&plan, 1);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	err = copy(&fx->srv, &plan, &cp, liar_of(lie), &r);
	assert_true(atomic_load(&tl.told));
	assert_int_not_equal(err, 0);
	print_message("the liar was told: %s\n", rcp_err_msg(err));
	assert_true(WAIT_FOR(t_count_tmp(root) == 0));
	assert_false(t_exists(root, "a"));
	/* The server serves on: an honest push goes through. */
	assert_int_equal(copy(&fx->srv, &plan, &cp, eng__transport_tcp(), &r), 0);
	file_same(a, (t_path(src, root, "a"), src), 512 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_write_past_its_credit_ends_the_session_and_the_server_serves_on(void **state)
{
	push_lied(*state, TCP_LIE_PAST_CREDIT);
}

static void test_garbage_on_a_stripe_ends_the_session_and_the_server_serves_on(void **state)
{
	push_lied(*state, TCP_LIE_GARBAGE);
}

/* ---- --tos: IP_TOS on each stripe's socket, at both ends ---- */

static struct {
	int client, server; /* each end's IP_TOS, read once the stripe is connected */
	unsigned stripes;
} tos_seen;

static int ip_tos(int fd)
{
	int tos = -1;
	socklen_t len = sizeof(tos);

	return getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &len) == 0 ? tos : -1;
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* The server's end of the client's stripe fd: the socket of this process facing it, or -1. */
static int server_end_of(int fd)
{
	struct sockaddr_in me, peer, a, b;
	socklen_t len = sizeof(me), lp = sizeof(peer);
	int k;

	if (getsockname(fd, (struct sockaddr *)&me, &len) || getpeername(fd, (void *)&peer, &lp))
		return -1;
	for (k = 3; k < 1024; k++) {
		socklen_t la = sizeof(a), lb = sizeof(b);

		if (k != fd && getsockname(k, (struct sockaddr *)&a, &la) == 0 && la == sizeof(a) &&
		    getpeername(k, (struct sockaddr *)&b, &lb) == 0 && same_addr(&a, &peer) &&
		    same_addr(&b, &me))
			return k;
	}
	return -1;
}

/* The client's connect; then what each end of the stripe carries (the server's answered it). */
static int tos_connect(struct eng_conn *conn, struct eng_link *l, const union eng_sockaddr *src,
		       const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	int err = eng__transport_tcp()->connect(conn, l, src, dst, peer_link, timeout_ms);
	int fd = err ? -1 : ((struct tcp_ep *)l->ep->tr)->fd, srv;

	if (err)
		return err;
	srv = server_end_of(fd);
	tos_seen.client = ip_tos(fd);
	tos_seen.server = srv >= 0 ? ip_tos(srv) : -2;
	tos_seen.stripes++;
	return 0;
}

/* A push of a file over 2 stripes with client and server --tos (unset: -1); the report's. */
static void push_with_tos(struct fx *fx, int client_tos, int server_tos, struct eng_report *r)
{
	static struct eng_transport tr;
	char src[4096], root[4096], a[4096], got[4096];
	const char *push_src[] = {a};
	struct eng_copy_opts cp;
	struct eng_client_opts o;
	struct topo_plan plan;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	pattern_write(src, "a", 256 * KiB, 5);
	t_path(a, src, "a");
	fx->srv.qp = (struct eng_qp_knobs){.tos_set = server_tos >= 0, .tos = (uint8_t)server_tos};
	plan_lo(&fx->srv.plan, 2);
	server_start(&fx->srv, eng__transport_tcp(), root, NULL);
	plan_lo(&plan, 2);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	o = client_opts(&fx->srv, &plan, cp.chunk, NULL);
	o.copy = &cp;
	tr = *eng__transport_tcp();
	tr.connect = tos_connect;
	o.tr = &tr;
	o.qp = (struct eng_qp_knobs){.tos_set = client_tos >= 0, .tos = (uint8_t)client_tos};
	tos_seen.stripes = 0;
	assert_int_equal(eng__client_run(&o, r), 0);
	t_path(got, root, "a");
	file_same(a, got, 256 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
	assert_int_equal(tos_seen.stripes, 2);
}

/*
 * --tos sets IP_TOS on each stripe's socket, the client's and the server's
 * end each from its own option, and the report says what the client used.
 */
static void test_tos_marks_each_stripe_at_both_ends(void **state)
{
	struct eng_report r;

	push_with_tos(*state, 0x28, 0x48, &r);
	assert_int_equal(tos_seen.client, 0x28);
	assert_int_equal(tos_seen.server, 0x48);
	assert_true(r.qp.tos_set);
	assert_int_equal(r.qp.tos, 0x28);
}

/* Without --tos, the stripes carry the system's class (0) and the report says none. */
static void test_without_tos_the_stripes_keep_the_systems_class(void **state)
{
	struct eng_report r;

	push_with_tos(*state, -1, -1, &r);
	assert_int_equal(tos_seen.client, 0);
	assert_int_equal(tos_seen.server, 0);
	assert_false(r.qp.tos_set);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_tcp_pushes_and_pulls_a_tree),
		T(test_a_keyed_tcp_push_seals_its_chunks_and_arrives_whole),
		T(test_a_client_of_the_other_transport_is_refused_with_a_sentence),
		T(test_a_write_past_its_credit_ends_the_session_and_the_server_serves_on),
		T(test_garbage_on_a_stripe_ends_the_session_and_the_server_serves_on),
		T(test_tos_marks_each_stripe_at_both_ends),
		T(test_without_tos_the_stripes_keep_the_systems_class),
		T(test_strangers_at_the_stripes_port_hold_up_nobody),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
