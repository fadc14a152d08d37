/*
 * server.c - the server side: railcp serve. It receives bench and push
 * jobs and sends pull jobs; copies read and write only beneath --root.
 *
 * The listening thread accepts control connections and runs each session
 * on a thread of its own, so sessions proceed at once and one that fails or
 * hangs (every step has a timeout) touches no other. A session checks the
 * client's hello and proof of the key before it allocates anything or
 * touches a file; a push then takes the file list, opens the destination
 * beneath the root (refusing names that lead out) and creates directories,
 * symlinks and empty files; a pull walks its sources beneath the root and
 * sends the file list. Then it pairs each client stripe with
 * a rail of this host (same subnet first, then least loaded), builds a job
 * with that many stripes per rail on the rails' workers, listens with
 * rdma_cm on the rails it uses, and answers with where each stripe must
 * connect. Slots per stripe come from the plan's buffer budget per worker.
 *
 * Every session's end - success or failure, with its reason - is one line
 * on stderr. On stop, running sessions are told to end and are waited for.
 *
 * Threading: the server's state is read-only after start-up except the
 * session count (atomic); each session's job belongs to its thread.
 */
#include "engine/auth.h"
#include "engine/files.h"
#include "engine/session.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define SRV_MAX_STRIPES 256
/* Connections still to prove the key: each costs a thread for at most --timeout. */
#define SRV_MAX_PENDING 64
#define SRV_MAX_CHUNK (64u << 20)

struct server {
	const struct eng_serve_opts *o;
	struct eng_auth_key key;
	bool keyed;
	struct eng_device_list *devs;
	struct eng_rail_addr addr[TOPO_MAX_RAILS];
	const char *rail_dev[TOPO_MAX_RAILS];
	struct io_root *root;             /* --root, NULL when the server runs bench only */
	int lfd;
	_Atomic unsigned active;          /* session threads, authenticated or not */
	_Atomic unsigned pending;         /* of those, not yet authenticated */
	_Atomic unsigned sessions;        /* authenticated: what --max-sessions limits */
	_Atomic bool stopping;
	_Atomic unsigned next_id;
};

struct session {
	struct server *srv;
	int fd;
	unsigned id;
	char peer[64];
	json_t *hello;
	const char *kind;                 /* "bench", "push" or "pull" */
	enum eng_role role;               /* this side's */
	uint64_t bytes;
	uint32_t chunk;
	unsigned root_flags;              /* IO_ROOT_* from the client's flags */
	struct eng_files *files;          /* push and pull */
	char where[IO_ESC_MAX];           /* push: the destination; pull: the first source */
	struct topo_plan plan;            /* the server's plan, with this session's stripes */
	unsigned peer_rail[SRV_MAX_STRIPES]; /* our rail for each sender stripe */
	struct eng_job *job;
	struct eng_verbs *vb;
	json_t *done;
};

/*
 * The sender's hello carries its challenge; prove we hold the key, then check
 * its proof. Runs before anything is allocated for the session.
 */
static int session_auth(struct session *s)
{
	uint8_t mine[ENG_AUTH_CHALLENGE_LEN], theirs[ENG_AUTH_CHALLENGE_LEN], proof[ENG_AUTH_RESPONSE_LEN];
	bool offered = json_object_get(s->hello, "challenge") != NULL;
	json_t *m, *reply = NULL;
	int err;

	if (!s->srv->keyed)
		return offered ? rcp_err(-EACCES, "this server has no key and cannot prove one: "
						  "configure the same key on both sides") : 0;
	if (!offered)
		return rcp_err(-EACCES, "this server requires a key: give the sender the same key "
					"(--key-file, RAILCP_KEY or ~/.config/railcp/key)");
	if ((err = eng__proto_get_hex(s->hello, "challenge", theirs, sizeof(theirs))) != 0 ||
	    (err = eng__auth_challenge(mine)) != 0 ||
	    (err = eng__auth_prove(&s->srv->key, ENG_AUTH_SERVER, mine, theirs, proof)) != 0)
		return err;
	m = eng__proto_msg("challenge", false);
	err = m ? eng__proto_set_hex(m, "challenge", mine, sizeof(mine)) : -ENOMEM;
	if (!err)
		err = eng__proto_set_hex(m, "proof", proof, sizeof(proof));
	if (!err)
		err = eng__proto_send(s->fd, m);
	json_decref(m);
	if (!err)
		err = eng__proto_recv(s->fd, s->srv->o->timeout_ms, "proof", &reply);
	if (!err)
		err = eng__proto_get_hex(reply, "proof", proof, sizeof(proof));
	if (!err)
		err = eng__auth_check(&s->srv->key, ENG_AUTH_CLIENT, mine, theirs, proof);
	json_decref(reply);
	return err;
}

static bool flag(const json_t *hello, const char *name)
{
	return json_is_true(json_object_get(json_object_get(hello, "flags"), name));
}

static int hello_check(struct session *s)
{
	json_t *stripes = json_object_get(s->hello, "stripes");
	const char *job = json_string_value(json_object_get(s->hello, "job"));
	uint64_t chunk;
	int err;

	if (!job || (strcmp(job, "bench") && strcmp(job, "push") && strcmp(job, "pull")))
		return rcp_err(-EPROTO, "this server does not run '%s' jobs", job ? job : "?");
	s->kind = job;
	s->role = strcmp(job, "pull") ? ENG_RECEIVER : ENG_SENDER;
	if (strcmp(job, "bench") && !s->srv->root)
		return rcp_err(-EPERM, "this server was started without --root: it serves no files, "
				       "only railcp bench");
	if ((err = eng__proto_get_u64(s->hello, "chunk", &chunk)) != 0)
		return err;
	if (!strcmp(job, "bench") && (err = eng__proto_get_u64(s->hello, "bytes", &s->bytes)) != 0)
		return err;
	if (!strcmp(job, "bench") && (s->bytes == 0 || s->bytes > (1ull << 50)))
		return rcp_err(-EINVAL, "a bench of %" PRIu64 " bytes is out of bounds", s->bytes);
	if (chunk < 4096 || chunk > SRV_MAX_CHUNK || chunk % 4096)
		return rcp_err(-EINVAL, "a chunk of %" PRIu64 " bytes is out of bounds "
				       "(4 KiB to 64 MiB, multiples of 4 KiB)", chunk);
	s->chunk = (uint32_t)chunk;
	s->root_flags = eng__files_root_flags(flag(s->hello, "preserve"), flag(s->hello, "fsync"),
					      flag(s->hello, "direct"));
	if (!json_is_array(stripes) || json_array_size(stripes) == 0 ||
	    json_array_size(stripes) > SRV_MAX_STRIPES)
		return rcp_err(-EINVAL, "a session needs 1 to %d stripes", SRV_MAX_STRIPES);
	return 0;
}

/* A name from the peer, as hex: no NUL may hide what follows it. */
static int name_value(const json_t *v, const char *what, char **name_out)
{
	size_t n;
	int err = eng__proto_hex_value(v, what, IO_PATH_MAX - 1, name_out, &n);

	if (!err && strlen(*name_out) != n) {
		free(*name_out);
		*name_out = NULL;
		err = rcp_err(-EPROTO, "the peer sent %s with a NUL byte in it", what);
	}
	return err;
}

/* Push: the file list, the destination beneath the root, and what needs no data. */
static int push_prepare(struct session *s)
{
	struct io_manifest *m = NULL;
	char *dst = NULL;
	uint64_t chunks;
	int err;

	if ((err = eng__proto_get_u64(s->hello, "chunks", &chunks)) != 0 ||
	    (err = name_value(json_object_get(s->hello, "dst"), "a destination", &dst)) != 0)
		return err;
	io_path_printable(dst, s->where);
	err = eng__manifest_recv(s->fd, s->srv->o->timeout_ms, &m);
	if (!err) {
		s->bytes = m->data_bytes;
		err = eng__files_receiver(s->srv->root, dst, flag(s->hello, "contents"), s->root_flags, m,
					  s->chunk, &s->files);
	}
	free(dst);
	if (!err && eng__files_chunks(s->files) != chunks)
		err = rcp_err(-EPROTO, "the sender planned %" PRIu64 " chunks, this server %" PRIu64,
			      chunks, eng__files_chunks(s->files));
	if (!err)
		err = eng__files_prepare(s->files);
	return err;
}

/* Pull: walk the sources beneath the root and send their file list. */
static int pull_prepare(struct session *s)
{
	json_t *arr = json_object_get(s->hello, "src");
	struct io_manifest *m = NULL;
	struct io_root *root = NULL;
	char **src;
	size_t i, n = json_array_size(arr);
	int err = 0;

	if (!json_is_array(arr) || n == 0 || n > 4096)
		return rcp_err(-EINVAL, "a pull needs 1 to 4096 sources");
	src = calloc(n, sizeof(*src));
	if (!src)
		return rcp_err(-ENOMEM, "out of memory for %zu sources", n);
	for (i = 0; i < n && !err; i++)
		err = name_value(json_array_get(arr, i), "a source", &src[i]);
	if (!err) {
		io_path_printable(src[0], s->where);
		err = io_manifest_walk(s->srv->root, (const char *const *)src, n,
				       flag(s->hello, "recursive") ? IO_WALK_RECURSIVE : 0, NULL, &m);
	}
	for (i = 0; i < n; i++)
		free(src[i]);
	free(src);
	if (!err)
		err = io_root_open_beneath(s->srv->root, ".", &root);
	if (err) {
		io_manifest_destroy(m);
		return err;
	}
	s->bytes = m->data_bytes;
	err = eng__files_create(ENG_SENDER, m, s->chunk, root,
				(s->root_flags & IO_ROOT_DIRECT) ? IO_DIRECT : 0, &s->files);
	if (!err)
		err = eng__manifest_send(s->fd, eng__files_manifest(s->files));
	return err;
}

/* Pair each sender stripe with one of our rails; set this session's QPs per rail. */
static int stripes_pair(struct session *s)
{
	json_t *stripes = json_object_get(s->hello, "stripes");
	unsigned load[TOPO_MAX_RAILS] = {0}, r;
	size_t i;

	for (i = 0; i < json_array_size(stripes); i++) {
		json_t *st = json_array_get(stripes, i);
		const char *a = json_string_value(json_object_get(st, "addr"));
		uint64_t prefix;
		struct eng_rail_addr from = {.addr = {.sin_family = AF_INET}};

		if (!a || inet_pton(AF_INET, a, &from.addr.sin_addr) != 1 ||
		    eng__proto_get_u64(st, "prefix", &prefix) || prefix > 32)
			return rcp_err(-EINVAL, "stripe %zu has no valid IPv4 address and prefix", i);
		from.prefix = (unsigned)prefix;
		s->peer_rail[i] = eng__rail_pair(&from, s->srv->addr, (unsigned)s->plan.n_rails, load);
	}
	for (r = 0; r < s->plan.n_rails; r++)
		s->plan.rail[r].qps = load[r];
	return 0;
}

/*
 * Slots per stripe: the smallest share of a worker's buffer budget, at most
 * 64. A session that cannot have 2 slots per stripe within every worker's
 * budget is refused: the sender chooses stripes and chunk size, and must not
 * make this server allocate beyond what its operator allowed.
 */
static int slots_per_stripe(const struct session *s, unsigned *n_out)
{
	unsigned w, r, n = 64;

	for (w = 0; w < s->plan.n_workers; w++) {
		uint64_t stripes = 0, k;

		for (r = 0; r < s->plan.n_rails; r++)
			if (s->plan.rail[r].worker == w)
				stripes += s->plan.rail[r].qps;
		if (!stripes)
			continue;
		k = s->plan.worker[w].buffer_bytes / (stripes * s->chunk);
		if (k < 2)
			return rcp_err(-ENOMEM, "%" PRIu64 " stripes of %u KiB chunks need %" PRIu64
						" MiB of slots on the node %d worker, which may use %" PRIu64
						" MiB: use a smaller --chunk or fewer QPs, or give the server "
						"a larger --buffer-mib",
				       stripes, s->chunk >> 10, (2 * stripes * s->chunk) >> 20,
				       s->plan.worker[w].node, s->plan.worker[w].buffer_bytes >> 20);
		if (k < n)
			n = (unsigned)k;
	}
	*n_out = n;
	return 0;
}

/* The welcome: token, slots, and for each sender stripe where to connect. */
static int welcome_send(struct session *s, const uint16_t *port)
{
	json_t *m = eng__proto_msg("welcome", true), *arr = json_array();
	unsigned seen[TOPO_MAX_RAILS] = {0}, base[TOPO_MAX_RAILS], r, k = 0;
	char token[20];
	size_t i;
	int err;

	for (r = 0; r < s->plan.n_rails; r++) {
		base[r] = k;
		k += s->plan.rail[r].qps;
	}
	snprintf(token, sizeof(token), "%016" PRIx64, s->job->token);
	json_object_set_new(m, "token", json_string(token));
	json_object_set_new(m, "chunks", json_integer((json_int_t)s->job->src.n_chunks));
	json_object_set_new(m, "slots", json_integer(s->job->stripe[0].n_slots));
	json_object_set_new(m, "slot_size", json_integer(s->chunk));
	for (i = 0; i < json_array_size(json_object_get(s->hello, "stripes")); i++) {
		json_t *st = json_object();

		r = s->peer_rail[i];
		json_object_set_new(st, "addr", json_string(s->srv->addr[r].text));
		json_object_set_new(st, "port", json_integer(port[r]));
		json_object_set_new(st, "stripe", json_integer(base[r] + seen[r]++));
		json_object_set_new(st, "rail", json_string(s->job->rail[r].name));
		json_array_append_new(arr, st);
	}
	json_object_set_new(m, "stripes", arr);
	err = eng__proto_send(s->fd, m);
	json_decref(m);
	return err;
}

static int session_setup(struct session *s)
{
	uint16_t port[TOPO_MAX_RAILS] = {0};
	unsigned r, n_slots = 0;
	int err;

	s->plan = *s->srv->o->plan;
	if ((err = stripes_pair(s)) != 0 || (err = slots_per_stripe(s, &n_slots)) != 0)
		return err;
	err = eng__job_create(s->role, &s->plan, n_slots, s->chunk, true, &s->job);
	if (err)
		return err;
	if (getrandom(&s->job->token, sizeof(s->job->token), 0) != sizeof(s->job->token))
		return rcp_err(-EIO, "cannot draw a session token: %s", strerror(errno));
	if (s->files)
		eng__files_attach(s->files, s->job);
	else
		eng__bench_attach(s->job, s->bytes, s->chunk);
	if ((err = eng__verbs_create(s->job, &s->vb)) != 0)
		return err;
	for (r = 0; r < s->plan.n_rails && !err; r++) {
		struct sockaddr_in a = s->srv->addr[r].addr;

		if (s->plan.rail[r].qps)
			err = eng__verbs_listen(s->vb, &a, &port[r]);
	}
	if (!err)
		err = welcome_send(s, port);
	if (!err)
		err = eng__verbs_accept_all(s->vb, s->srv->rail_dev, s->fd, s->srv->o->timeout_ms);
	if (err == -EPIPE) { /* the sender gave up while connecting: say why */
		json_t *msg = NULL;
		int got = eng__session_poll_msg(s->fd, "(nothing while connecting)", &msg);

		json_decref(msg);
		err = got < 0 ? got : rcp_err(-EPROTO, "the sender broke off while connecting");
	}
	return err;
}

static void session_watch(const struct eng_job *cjob, void *ctx)
{
	struct session *s = ctx;
	struct eng_job *job = (struct eng_job *)cjob;

	if (atomic_load(&s->srv->stopping) && !atomic_load(&job->stop)) {
		eng__job_fail(job, -ESHUTDOWN, "the server is shutting down");
		return;
	}
	if (eng__session_watch(job, s->fd, s->vb, "the client", s->role == ENG_RECEIVER ? "done" : NULL,
			       &s->done))
		atomic_store(&job->stop, true); /* the sender has every credit back */
}

/* "bench", "push of 12 files into "dst"", "pull of 3 files from "src"" for the log. */
static const char *session_what(const struct session *s, char *buf, size_t len)
{
	if (!s->files)
		return "bench";
	snprintf(buf, len, "%s of %" PRIu64 " files %s \"%s\"", s->kind,
		 eng__files_manifest(s->files)->n_files, s->role == ENG_SENDER ? "from" : "into",
		 s->where[0] ? s->where : ".");
	return buf;
}

/* The exchange that ends a job, then the session's line in the log. */
static int session_end(struct session *s)
{
	struct eng_report rep;
	double secs;
	char what[IO_ESC_MAX + 64];
	int err;

	eng__job_report(s->job, &rep);
	if (s->role == ENG_SENDER) {
		err = eng__session_sender_end(s->fd, s->srv->o->timeout_ms, s->job);
		secs = rep.seconds;
	} else {
		err = eng__session_receiver_end(s->fd, s->srv->o->timeout_ms, s->job, &s->done, s->files);
		/* The sender's clock: its first post to its last credit, the transfer's real span. */
		secs = json_real_value(json_object_get(s->done, "seconds"));
	}
	if (err)
		return err;
	rcp_log(RCP_LOG_NOTICE, "session %u from %s: %s done, %" PRIu64 " MiB over %u stripes "
		"verified; %.2f s, %.3f Gb/s as the sender measured", s->id, s->peer,
		session_what(s, what, sizeof(what)),
		rep.bytes >> 20, s->job->n_stripes, secs, secs > 0 ? rep.bytes * 8 / secs / 1e9 : 0);
	return 0;
}

static void *session_main(void *arg)
{
	struct session *s = arg;
	char what[IO_ESC_MAX + 64];
	bool counted = false;
	int err;

	err = eng__proto_recv_max(s->fd, s->srv->o->timeout_ms, "hello", ENG_PROTO_MAX_HELLO, &s->hello);
	if (!err)
		err = eng__proto_check_hello(s->hello);
	if (!err)
		err = session_auth(s);
	atomic_fetch_sub(&s->srv->pending, 1);
	/* Only a proven client counts against --max-sessions: strangers cannot hold the slots. */
	if (!err) {
		counted = true;
		if (atomic_fetch_add(&s->srv->sessions, 1) >= s->srv->o->max_sessions)
			err = rcp_err(-EBUSY, "the server is busy with %u sessions; try again later",
				      s->srv->o->max_sessions);
	}
	if (!err)
		err = hello_check(s);
	if (!err && !strcmp(s->kind, "push")) {
		json_t *ready = eng__proto_msg("ready", false);

		err = ready ? eng__proto_send(s->fd, ready) : -ENOMEM;
		json_decref(ready);
		if (!err)
			err = push_prepare(s);
	}
	if (!err && !strcmp(s->kind, "pull"))
		err = pull_prepare(s);
	if (!err)
		err = session_setup(s);
	if (!err) {
		rcp_log(RCP_LOG_NOTICE, "session %u from %s: %s, %" PRIu64 " MiB over %u stripes",
			s->id, s->peer, session_what(s, what, sizeof(what)), s->bytes >> 20, s->job->n_stripes);
		err = eng__job_run(s->job, session_watch, s);
	}
	if (!err)
		err = session_end(s);
	if (err) {
		eng__proto_send_error(s->fd, err);
		rcp_log(RCP_LOG_NOTICE, "session %u from %s failed: %s", s->id, s->peer, rcp_err_msg(err));
	}
	eng__verbs_destroy(s->vb);
	eng__job_destroy(s->job);
	eng__files_destroy(s->files); /* after the workers: removes unfinished temporaries */
	json_decref(s->hello);
	json_decref(s->done);
	close(s->fd);
	if (counted)
		atomic_fetch_sub(&s->srv->sessions, 1);
	atomic_fetch_sub(&s->srv->active, 1);
	free(s);
	return NULL;
}

static void session_start(struct server *srv, int fd, const struct sockaddr_in *from)
{
	struct session *s;
	pthread_attr_t attr;
	pthread_t t;
	char who[64];
	int err = -ENOMEM;

	inet_ntop(AF_INET, &from->sin_addr, who, sizeof(who));
	if (atomic_load(&srv->pending) >= SRV_MAX_PENDING) {
		rcp_err(-EBUSY, "the server has %u connections waiting to authenticate; try again later",
			SRV_MAX_PENDING);
		eng__proto_send_error(fd, -EBUSY);
		close(fd);
		return;
	}
	eng__tcp_tune(fd);
	s = calloc(1, sizeof(*s));
	if (s) {
		*s = (struct session){.srv = srv, .fd = fd, .id = atomic_fetch_add(&srv->next_id, 1) + 1};
		snprintf(s->peer, sizeof(s->peer), "%s", who);
		atomic_fetch_add(&srv->active, 1);
		atomic_fetch_add(&srv->pending, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = -pthread_create(&t, &attr, session_main, s);
		pthread_attr_destroy(&attr);
	}
	if (err) {
		rcp_log(RCP_LOG_NOTICE, "session from %s refused: cannot start a thread: %s", who, strerror(-err));
		if (s) {
			atomic_fetch_sub(&srv->active, 1);
			atomic_fetch_sub(&srv->pending, 1);
		}
		free(s);
		close(fd);
	}
}

/* With a key: any address; without: loopback only, and say why. */
static int server_key(struct server *srv, struct in_addr *addr)
{
	const struct eng_serve_opts *o = srv->o;
	int err = eng__auth_key_find(o->key_file, &srv->key);

	if (o->listen_addr && inet_pton(AF_INET, o->listen_addr, addr) != 1)
		return rcp_err(-EINVAL, "cannot listen on '%s': not an IPv4 address", o->listen_addr);
	if (err == 0) {
		srv->keyed = true;
		return 0;
	}
	if (err != -ENOENT || o->key_file)
		return err;
	rcp_err_clear();
	if (!o->listen_addr)
		addr->s_addr = htonl(INADDR_LOOPBACK);
	else if ((ntohl(addr->s_addr) >> 24) != 127)
		return rcp_err(-EACCES, "no key is configured, so railcp serve listens only on "
					"loopback: create ~/.config/railcp/key (chmod 600) or give "
					"--key-file or RAILCP_KEY to listen on %s", o->listen_addr);
	return 0;
}

static int server_listen(struct server *srv)
{
	const struct eng_serve_opts *o = srv->o;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(o->port ? o->port : ENG_DEFAULT_PORT)};
	socklen_t len = sizeof(a);
	char where[INET_ADDRSTRLEN], how[300];
	int one = 1, err;

	if ((err = server_key(srv, &a.sin_addr)) != 0)
		return err;
	srv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0)
		return rcp_err(-errno, "socket: %s", strerror(errno));
	setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(srv->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(srv->lfd, 64))
		return rcp_err(-errno, "cannot listen on %s port %u: %s",
			       inet_ntop(AF_INET, &a.sin_addr, where, sizeof(where)), ntohs(a.sin_port),
			       strerror(errno));
	getsockname(srv->lfd, (struct sockaddr *)&a, &len);
	inet_ntop(AF_INET, &a.sin_addr, where, sizeof(where));
	if (srv->keyed)
		snprintf(how, sizeof(how), "senders must prove the key from %s", srv->key.origin);
	else
		snprintf(how, sizeof(how), "no key configured: loopback only");
	if (o->ready)
		o->ready(where, ntohs(a.sin_port), how, o->ctx);
	return 0;
}

static int server_rails(struct server *srv)
{
	const struct topo_plan *plan = srv->o->plan;
	unsigned r;
	int err;

	if (plan->n_rails == 0)
		return rcp_err(-ENODEV, "the plan has no rail to serve on");
	if ((err = eng_device_list_create("/sys", &srv->devs)) != 0)
		return err;
	for (r = 0; r < plan->n_rails; r++) {
		srv->rail_dev[r] = plan->rail[r].dev;
		err = eng__rail_addr(srv->devs, plan->rail[r].dev, plan->rail[r].port, &srv->addr[r]);
		if (err)
			return err;
	}
	return 0;
}

static void server_loop(struct server *srv)
{
	struct pollfd pfd[2] = {{.fd = srv->lfd, .events = POLLIN}, {.fd = srv->o->stop_fd, .events = POLLIN}};

	for (;;) {
		struct sockaddr_in from;
		socklen_t len = sizeof(from);
		int fd;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		fd = accept4(srv->lfd, (struct sockaddr *)&from, &len, SOCK_CLOEXEC);
		if (fd >= 0)
			session_start(srv, fd, &from);
	}
}

int eng_serve(const struct eng_serve_opts *o)
{
	struct server srv = {.o = o, .lfd = -1};
	int err;

	err = server_rails(&srv);
	if (!err && o->root)
		err = io_root_open(o->root, 0, &srv.root);
	if (!err)
		err = server_listen(&srv);
	if (!err) {
		server_loop(&srv);
		atomic_store(&srv.stopping, true);
		while (atomic_load(&srv.active) > 0)
			usleep(10 * 1000);
	}
	if (srv.lfd >= 0)
		close(srv.lfd);
	eng__auth_key_wipe(&srv.key);
	eng_device_list_destroy(srv.devs);
	io_root_close(srv.root);
	return err;
}
