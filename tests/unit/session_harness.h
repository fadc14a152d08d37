/*
 * session_harness.h - whole sessions over the loopback transport, for the
 * tests that run them (test_session*.c and others; bench_datapath.c times
 * them): a server (eng__serve in a thread, listening on 127.0.0.1 at a port
 * of the kernel's choice) and a client (eng__client_run in the test's
 * thread), a scratch directory and key files, and trees to copy and compare.
 * The control connection is real TCP; the RDMA part is the in-process
 * loopback fabric. The functions are in session_harness.c, compiled once
 * and linked into each test that includes this (tests/SConscript).
 *
 * Threading: one server thread per test (plus its sessions); the loopback
 * fabric is process-wide, so the tests run one after another.
 */
#ifndef RAILCP_TEST_SESSION_HARNESS_H
#define RAILCP_TEST_SESSION_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "engine/datapath/datapath_int.h" /* tests reach into the job */
#include "engine/session/session_int.h"

#include "test_io_tree.h"
#include "wait_for.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define TIMEOUT_MS 10000
/* The server's slot memory per worker in most tests. */
#define BUDGET (4ull * MiB)

/* Keys of at least ENG_AUTH_KEY_MIN bytes, two that differ by one byte. */
#define TEST_KEY "railcp-test-key-0123456789abcdef0123456789abcdef"
#define TEST_KEY_OTHER "railcp-test-key-0123456789abcdef0123456789abcdeF"

/* ---- plans, servers, clients ---- */

/*
 * A plan with rails "loop<num[i]>" of qps QPs each, spread in order over
 * n_workers workers (node = index), each with budget bytes of slot memory.
 */
void plan_make(struct topo_plan *p, const unsigned *num, unsigned n, unsigned qps,
	       unsigned n_workers, uint64_t budget);

/*
 * p's rails as other ports of the loopback's device model: "loop<N>" becomes
 * kind<N>, "loopib" (InfiniBand) or "loopv6" (RoCE on IPv6 alone).
 */
void plan_rails_as(struct topo_plan *p, const char *kind);

struct server {
	struct eng_serve_opts o;
	struct topo_plan plan;
	const struct topo_plan *plan_tcp; /* serve --transport auto that chose rdma: tcp too */
	const struct eng_transport *tr;
	pthread_t thread;
	int stop_fd;
	int timeout_ms;		  /* the server's --timeout; 0: TIMEOUT_MS */
	bool no_failover;	  /* the server's --no-failover */
	bool once;		  /* serve one session (railcp serve --ssh) */
	const char *key;	  /* the key itself (serve --ssh's); NULL: key_file's */
	const char *const *names; /* serve --name */
	bool any_name;		  /* any server a client dialed will do (serve --ssh) */
	unsigned max_sessions;	  /* serve --max-sessions; 0: 4 */
	uint64_t max_memory;	  /* serve --max-memory; 0: none */
	struct eng_qp_knobs qp;	  /* serve --ack-timeout, --retry-count, --tos */
	/* eng_serve_opts.session_end (its ctx: this struct server); NULL: none */
	void (*session_end)(const struct eng_session_record *rec, void *ctx);
	/* eng_serve_opts.session_queue, the same way */
	void (*session_queue)(const struct eng_queue_event *ev, void *ctx);
	_Atomic unsigned port;
	_Atomic bool ended;
	int err;
	char msg[512]; /* err's sentence, taken on the server's thread */
	bool running;
};

/* The server's ready callback (its port) and thread (eng__serve), for a test that runs its own. */
void server_ready(const char *addr, uint16_t port, const char *auth, void *ctx);
void *server_main(void *arg);

/* Serve s->plan over tr (NULL: loopback) beneath root (NULL: bench only). */
void server_start(struct server *s, const struct eng_transport *tr, const char *root,
		  const char *key_file);

/* Stop the server; it returns once every session has ended. Its result. */
int server_stop(struct server *s);

/* A client of s's port over the loopback with plan, chunk and key_file (NULL: none). */
struct eng_client_opts client_opts(const struct server *s, const struct topo_plan *plan,
				   uint32_t chunk, const char *key_file);

/* A bench of bytes from such a client. */
int bench(const struct server *s, const struct topo_plan *plan, uint64_t bytes, uint32_t chunk,
	  const char *key_file, struct eng_report *r);

/* A small bench that must succeed: the server still serves. */
void bench_ok(const struct server *s, const char *key_file);

/* A copy of src to dst, recursive, in 4 KiB chunks (the other options off). */
struct eng_copy_opts copy_opts(enum eng_copy_dir dir, const char *const *src, size_t n_src,
			       const char *dst);

/* cp over tr (NULL: loopback) with the client's plan. */
int copy(const struct server *s, const struct topo_plan *plan, const struct eng_copy_opts *cp,
	 const struct eng_transport *tr, struct eng_report *r);

/* A hello's stripe: its address and prefix, on client rail loop1. */
json_t *stripe_json(const char *addr, json_int_t prefix);

/* A well-formed hello for a bench of n stripes on loop1. */
json_t *hello_bench(unsigned n, json_int_t chunk);

/* ---- fixture: a scratch directory and a server, stopped and removed whatever happens ---- */

struct fx {
	char base[4096];
	struct server srv;
};

/* A test's set-up (a scratch directory) and teardown (the server stopped, the directory gone). */
int fx_setup(void **state);
int fx_teardown(void **state);

/* A new directory rel beneath the scratch directory, its path in out. */
void fx_dir(const struct fx *fx, const char *rel, char out[4096]);

/* A key file beneath the scratch directory, mode 0600. */
void fx_key(const struct fx *fx, const char *name, const char *key, char out[4096]);

/* Bytes that differ at every offset of a file, so a chunk in the wrong place shows. */
void pattern_write(const char *base, const char *rel, size_t len, uint32_t seed);

#define TREE_FILES 4
#define TREE_BYTES (100 + 5000 + 300 * KiB + 1234)

/* base/top: two levels of directories, an empty one, an empty file, a file of 76 chunks. */
void tree_make(const char *base);

/* Files a and b both hold size bytes, the same. */
void file_same(const char *a, const char *b, off_t size);

/* Directories a and b hold the same entries, files byte for byte, links to the same targets, and
 * nothing else. */
void tree_same(const char *a, const char *b);

/* dir has no entry. */
bool dir_empty(const char *dir);

/*
 * One file pushed through a loopback server, the recipe several tests
 * share: <base>/src/<name> of bytes made by pattern_write with seed, a
 * server beneath <base>/root, and the client's push of the file into the
 * root's top. Both plans have rails of one QP each on one worker; the
 * rest is set in the struct before push_one (0 or NULL: the default
 * named). src, root and file are filled in before anything starts, so a
 * thread the test started before the call may be given their addresses.
 */
struct push1 {
	const char *name; /* NULL: "big" */
	size_t bytes;
	uint32_t seed;
	const unsigned *rails; /* NULL: loop1 alone */
	unsigned n_rails;
	const char *rails_as; /* both plans' rails of this kind (plan_rails_as); NULL: loop */
	unsigned helpers, srv_helpers;		 /* each side's plan.helpers */
	const struct eng_transport *tr, *srv_tr; /* the client's and the server's; NULL: loopback */
	_Atomic bool *cancel;			 /* the push's cp.cancel */
	char src[4096], root[4096], file[4096];
	struct topo_plan plan; /* the client's */
	struct eng_report r;
};

/* Make the file, start fx's server and push: the push's result, its report in p->r. */
int push_one(struct fx *fx, struct push1 *p);

/*
 * A file of 1 MiB and a bit pushed over two rails of kind (plan_rails_as:
 * kind1 and kind2, each paired with its namesake), every byte over them,
 * pulled back, both identical; then a bench; then the server stopped.
 */
void push_pull_bench_over(struct fx *fx, const char *kind, uint32_t seed);

/* ---- the log: stderr's lines, as they are written, to a test's function ---- */

struct log_tap {
	void (*line)(const char *line, void *ctx); /* on the tap's thread */
	void *ctx;
	FILE *in;
	int saved; /* stderr before */
	pthread_t thread;
};

/* From now on, each line written to stderr goes to line(line, ctx) instead. */
void log_tap_start(struct log_tap *t, void (*line)(const char *line, void *ctx), void *ctx);

/* stderr back as it was, and every line written before passed on. */
void log_tap_stop(struct log_tap *t);

/* ---- raw TCP: the framing by hand, so that tests check it rather than reuse it ---- */

/* A connection to the server on port of 127.0.0.1. */
int raw_connect(uint16_t port);

/* A connection to the server from the local address from ("127.0.0.2"). */
int raw_connect_from(uint16_t port, const char *from);

/* All of buf, or the test fails. */
void raw_write(int fd, const void *buf, size_t len);

/* A frame: the 4-byte big-endian length, then the bytes. */
void raw_frame(int fd, const void *body, uint32_t len);

/* m as a frame (consumed). */
void raw_json(int fd, json_t *m);

/* len bytes within 10 s; false on the peer's close, an error or the deadline. */
bool raw_read(int fd, void *buf, size_t len);

/* A hello's "server": the one listening on port of 127.0.0.1, which it serves. */
json_t *dialed_json(uint16_t port);

/* The peer's next frame as JSON; NULL when it closed or sent something else. */
json_t *raw_recv(int fd);

/*
 * A keyless push into dst (beneath the root) of 4 KiB chunks on one stripe,
 * over raw TCP to the server on port of 127.0.0.1, that got "ready": the
 * server now waits for its file list and the session holds its place.
 */
int raw_push_ready(uint16_t port, const char *dst);

/* The peer closed the connection (within 10 s). */
bool raw_closed(int fd);

/*
 * The server answers on fd with an "error" whose message contains what, then
 * closes. The message is printable ASCII: whatever the peer sent, it cannot
 * break a line of the server's log or of the client's terminal.
 */
void assert_refused(int fd, const char *what);

/*
 * Group set-up and teardown: the tests see no key but the ones they name,
 * none from the environment or the home directory.
 */
int session_group_setup(void **state);
int session_group_teardown(void **state);

/* A test with a scratch directory and a server (struct fx). */
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)

#endif
