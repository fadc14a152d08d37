/*
 * client.c - the client side of a session: railcp bench, push and pull.
 *
 * Session, in order: TCP connect; hello with the job and one entry per
 * stripe (its rail's address and subnet); mutual authentication; for a
 * push the file list goes to the server, for a pull it comes back and the
 * destination is prepared here; the server's welcome names the session
 * token, the slot count and size, and for each stripe the server's address,
 * rdma_cm port and stripe to connect to. Then every stripe connects
 * (rdma_cm), the workers run, and the sender's "done" asks the receiver to
 * confirm what it received and checked; the receiver's "result" answers.
 * The client sends for bench and push and receives for pull. While the job
 * runs, the coordinator watches the control connection and rdma_cm: a
 * server that goes away or a rail that disconnects fails the job at once
 * instead of waiting for retries.
 *
 * Threading: eng_bench_run and eng_copy_run run on the caller's thread plus
 * one thread per worker; they return after all of them have stopped.
 */
#include "engine/auth.h"
#include "engine/files.h"
#include "engine/session.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* What bench and copies share; the job's own options are in bench or copy. */
struct client_opts {
	const char *host;
	uint16_t port;
	uint32_t chunk;
	const struct topo_plan *plan;
	int timeout_ms;
	const char *key_file;
	void (*progress)(const struct eng_report *so_far, void *ctx);
	void *ctx;
};

struct client {
	struct client_opts o_;
	const struct client_opts *o;
	const struct eng_bench_opts *bench;  /* NULL for copies */
	const struct eng_copy_opts *copy;    /* NULL for bench */
	enum eng_role role;
	struct eng_files *files;
	uint64_t t0_ns;
	struct eng_auth_key key;
	bool keyed;
	uint8_t challenge[ENG_AUTH_CHALLENGE_LEN]; /* ours, sent in the hello */
	struct eng_device_list *devs;
	struct eng_rail_addr addr[TOPO_MAX_RAILS]; /* per plan rail */
	int fd;
	struct eng_job *job;
	struct eng_verbs *vb;
	json_t *welcome;
	json_t *done;                /* receiver: the sender's "done" */
	char peer[TOPO_MAX_RAILS][80];
};

static int tcp_connect(const char *host, uint16_t port, int timeout_ms, int *fd_out)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	char service[8];
	int fd = -1, r, err = 0;

	snprintf(service, sizeof(service), "%u", port);
	r = getaddrinfo(host, service, &hints, &res);
	if (r)
		return rcp_err(-EHOSTUNREACH, "cannot resolve %s: %s", host, gai_strerror(r));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (eng__tcp_connect_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return rcp_err(-(err ? err : EHOSTUNREACH), "cannot reach a railcp server at %s port %u: %s",
			       host, port, strerror(err ? err : EHOSTUNREACH));
	eng__tcp_tune(fd);
	*fd_out = fd;
	return 0;
}

/* The last name of a source path ("a/b/" -> "b"); "" when it has none of its own ("." or ".."). */
static size_t last_name(const char *src, const char **name_out)
{
	size_t len = strlen(src), start;

	while (len > 0 && src[len - 1] == '/')
		len--;
	for (start = len; start > 0 && src[start - 1] != '/'; start--)
		;
	*name_out = src + start;
	len -= start;
	if ((len == 1 && src[start] == '.') || (len == 2 && !strncmp(src + start, "..", 2)))
		return 0;
	return len;
}

/* One source with no name of its own: its contents are the copy (cp -r DIR/. NEW). */
static bool contents_only(const struct eng_copy_opts *cp)
{
	const char *name;

	return cp->n_src == 1 && last_name(cp->src[0], &name) == 0;
}

/* The job's own part of the hello. */
static int hello_job(struct client *c, json_t *m)
{
	const struct eng_copy_opts *cp = c->copy;
	json_t *flags, *srcs;
	size_t i;

	if (c->bench) {
		json_object_set_new(m, "job", json_string("bench"));
		json_object_set_new(m, "bytes", json_integer((json_int_t)c->bench->bytes));
		return 0;
	}
	flags = json_object();
	json_object_set_new(flags, "preserve", json_boolean(cp->preserve));
	json_object_set_new(flags, "fsync", json_boolean(cp->fsync));
	json_object_set_new(flags, "direct", json_boolean(cp->direct));
	json_object_set_new(flags, "recursive", json_boolean(cp->recursive));
	json_object_set_new(flags, "contents", json_boolean(contents_only(cp)));
	json_object_set_new(m, "flags", flags);
	if (cp->dir == ENG_PUSH) {
		json_object_set_new(m, "job", json_string("push"));
		json_object_set_new(m, "chunks", json_integer((json_int_t)eng__files_chunks(c->files)));
		return eng__proto_set_hex(m, "dst", cp->dst, strlen(cp->dst));
	}
	json_object_set_new(m, "job", json_string("pull"));
	srcs = json_array();
	json_object_set_new(m, "src", srcs);
	for (i = 0; i < cp->n_src; i++)
		if (json_array_append_new(srcs, eng__proto_hex(cp->src[i], strlen(cp->src[i]))))
			return -ENOMEM;
	return 0;
}

static json_t *hello_make(struct client *c)
{
	const struct topo_plan *plan = c->o->plan;
	json_t *m = eng__proto_msg("hello", true), *stripes = json_array();
	unsigned r, q;

	json_object_set_new(m, "chunk", json_integer(c->o->chunk));
	for (r = 0; r < plan->n_rails; r++)
		for (q = 0; q < plan->rail[r].qps; q++) {
			json_t *s = json_object();

			json_object_set_new(s, "addr", json_string(c->addr[r].text));
			json_object_set_new(s, "prefix", json_integer(c->addr[r].prefix));
			json_object_set_new(s, "rail", json_string(plan->rail[r].dev));
			json_array_append_new(stripes, s);
		}
	json_object_set_new(m, "stripes", stripes);
	if (hello_job(c, m) ||
	    (c->keyed && eng__proto_set_hex(m, "challenge", c->challenge, sizeof(c->challenge)))) {
		json_decref(m);
		return NULL;
	}
	return m;
}

/* The key, if one is configured; without one only a keyless server will talk. */
static int client_key(struct client *c)
{
	int err = eng__auth_key_find(c->o->key_file, &c->key);

	if (err == -ENOENT && !c->o->key_file) {
		rcp_err_clear();
		return 0;
	}
	if (!err) {
		c->keyed = true;
		err = eng__auth_challenge(c->challenge);
	}
	return err;
}

/* Check the server's proof of the key, then prove ours; nothing else is sent before. */
static int client_auth(struct client *c)
{
	uint8_t theirs[ENG_AUTH_CHALLENGE_LEN], proof[ENG_AUTH_RESPONSE_LEN];
	json_t *m = NULL;
	int err;

	if (!c->keyed)
		return 0;
	err = eng__proto_recv(c->fd, c->o->timeout_ms, NULL, &m);
	if (!err && strcmp(json_string_value(json_object_get(m, "type")) ?: "", "challenge") != 0)
		err = rcp_err(-EACCES, "the server did not prove it holds the key (it has none?): "
				       "refusing to send to it");
	if (!err)
		err = eng__proto_get_hex(m, "challenge", theirs, sizeof(theirs));
	if (!err)
		err = eng__proto_get_hex(m, "proof", proof, sizeof(proof));
	json_decref(m);
	if (!err)
		err = eng__auth_check(&c->key, ENG_AUTH_SERVER, c->challenge, theirs, proof);
	if (!err)
		err = eng__auth_prove(&c->key, ENG_AUTH_CLIENT, c->challenge, theirs, proof);
	if (err)
		return err;
	m = eng__proto_msg("proof", false);
	err = m ? eng__proto_set_hex(m, "proof", proof, sizeof(proof)) : -ENOMEM;
	if (!err)
		err = eng__proto_send(c->fd, m);
	json_decref(m);
	return err;
}

/* Push: the file list of the sources, walked before anything is sent. */
static int push_prepare(struct client *c)
{
	const struct eng_copy_opts *cp = c->copy;
	struct io_manifest *m;
	int err;

	err = io_manifest_walk(NULL, cp->src, cp->n_src, cp->recursive ? IO_WALK_RECURSIVE : 0, NULL, &m);
	if (!err)
		err = eng__files_create(ENG_SENDER, m, c->o->chunk, NULL, cp->direct ? IO_DIRECT : 0,
					&c->files);
	return err;
}

/*
 * A pull takes from the server only what was asked for: each top-level
 * entry must carry the last name of a requested source, and directories
 * come only with -r. A source with no name of its own ("HOST:" or
 * "HOST:dir/.") asks for its contents, whatever their names.
 */
static int pull_names_check(const struct eng_copy_opts *cp, const struct io_manifest *m)
{
	char esc[IO_ESC_MAX];
	bool any = false;
	size_t i, k, n;

	for (k = 0; k < cp->n_src; k++) {
		const char *name;

		any |= last_name(cp->src[k], &name) == 0;
	}
	for (i = 0; i < m->n; i++) {
		const struct io_entry *e = &m->entry[i];
		bool asked = any;

		if (e->type == IO_DIR && !cp->recursive)
			return rcp_err(-EPROTO, "the server sent the directory \"%s\", but -r was not given",
				       io_path_printable(e->path, esc));
		if (strchr(e->path, '/'))
			continue;
		for (k = 0; k < cp->n_src && !asked; k++) {
			const char *name;

			n = last_name(cp->src[k], &name);
			asked = n == strlen(e->path) && !memcmp(name, e->path, n);
		}
		if (!asked)
			return rcp_err(-EPROTO, "the server sent \"%s\", which was not asked for: refusing "
						"the whole copy", io_path_printable(e->path, esc));
	}
	return 0;
}

/* Pull: the server's file list, and the local destination made ready for it. */
static int pull_prepare(struct client *c)
{
	const struct eng_copy_opts *cp = c->copy;
	struct io_manifest *m = NULL;
	int err;

	err = eng__manifest_recv(c->fd, c->o->timeout_ms, &m);
	if (!err && (err = pull_names_check(cp, m)) != 0)
		io_manifest_destroy(m);
	if (!err)
		err = eng__files_receiver(NULL, cp->dst, contents_only(cp),
					  eng__files_root_flags(cp->preserve, cp->fsync, cp->direct), m,
					  c->o->chunk, &c->files);
	if (!err)
		err = eng__files_prepare(c->files);
	return err;
}

static int handshake(struct client *c)
{
	const struct topo_plan *plan = c->o->plan;
	json_t *hello;
	unsigned r;
	int err;

	if ((err = client_key(c)) != 0 || (err = eng_device_list_create("/sys", &c->devs)) != 0)
		return err;
	for (r = 0; r < plan->n_rails; r++)
		if ((err = eng__rail_addr(c->devs, plan->rail[r].dev, plan->rail[r].port, &c->addr[r])) != 0)
			return err;
	if ((err = tcp_connect(c->o->host, c->o->port ? c->o->port : ENG_DEFAULT_PORT,
			       c->o->timeout_ms, &c->fd)) != 0)
		return err;
	hello = hello_make(c);
	err = hello ? eng__proto_send(c->fd, hello) : -ENOMEM;
	json_decref(hello);
	if (!err)
		err = client_auth(c);
	if (!err && c->copy && c->copy->dir == ENG_PUSH) {
		/* The server accepts the job before the list goes: a refusal then reads as one. */
		json_t *ready = NULL;

		err = eng__proto_recv(c->fd, c->o->timeout_ms, "ready", &ready);
		json_decref(ready);
		if (!err)
			err = eng__manifest_send(c->fd, eng__files_manifest(c->files));
	} else if (!err && c->copy) {
		err = pull_prepare(c);
	}
	if (!err)
		err = eng__proto_recv(c->fd, c->o->timeout_ms, "welcome", &c->welcome);
	if (!err)
		err = eng__proto_check_hello(c->welcome);
	return err;
}

/* Connect stripe i as the welcome says. */
static int stripe_connect(struct client *c, unsigned i, json_t *w)
{
	struct eng_stripe *s = &c->job->stripe[i];
	const struct topo_plan_rail *pr = &c->o->plan->rail[s->rail];
	const char *addr = json_string_value(json_object_get(w, "addr"));
	const char *rail = json_string_value(json_object_get(w, "rail"));
	uint64_t port, peer;
	struct sockaddr_in dst = {.sin_family = AF_INET}, src = c->addr[s->rail].addr;
	int err;

	if ((err = eng__proto_get_u64(w, "port", &port)) != 0 ||
	    (err = eng__proto_get_u64(w, "stripe", &peer)) != 0)
		return err;
	if (!addr || !rail || inet_pton(AF_INET, addr, &dst.sin_addr) != 1 || port == 0 || port > 65535)
		return rcp_err(-EPROTO, "the server sent an unusable address for stripe %u", i);
	dst.sin_port = htons((uint16_t)port);
	if (!c->peer[s->rail][0] || !strstr(c->peer[s->rail], rail))
		snprintf(c->peer[s->rail] + strlen(c->peer[s->rail]),
			 sizeof(c->peer[s->rail]) - strlen(c->peer[s->rail]), "%s%s",
			 c->peer[s->rail][0] ? "," : "", rail);
	return eng__verbs_connect(c->vb, s, pr->dev, &src, &dst, (uint32_t)peer, c->o->timeout_ms);
}

static int job_setup(struct client *c)
{
	json_t *stripes = json_object_get(c->welcome, "stripes");
	const char *token = json_string_value(json_object_get(c->welcome, "token"));
	uint64_t n_slots, chunks;
	unsigned i;
	int err;

	if ((err = eng__proto_get_u64(c->welcome, "slots", &n_slots)) != 0 ||
	    (err = eng__proto_get_u64(c->welcome, "chunks", &chunks)) != 0)
		return err;
	if (!token || n_slots == 0 || n_slots > 1024 || !json_is_array(stripes))
		return rcp_err(-EPROTO, "the server's welcome is incomplete");
	if (c->files && chunks != eng__files_chunks(c->files))
		return rcp_err(-EPROTO, "the server planned %" PRIu64 " chunks, this side %" PRIu64,
			       chunks, eng__files_chunks(c->files));
	err = eng__job_create(c->role, c->o->plan, (unsigned)n_slots, c->o->chunk, true, &c->job);
	if (err)
		return err;
	if (json_array_size(stripes) != c->job->n_stripes)
		return rcp_err(-EPROTO, "the server answered for %zu stripes, not %u",
			       json_array_size(stripes), c->job->n_stripes);
	c->job->token = strtoull(token, NULL, 16);
	if (c->files)
		eng__files_attach(c->files, c->job);
	else
		eng__bench_attach(c->job, c->bench->bytes, c->o->chunk);
	if ((err = eng__verbs_create(c->job, &c->vb)) != 0)
		return err;
	for (i = 0; i < c->job->n_stripes && !err; i++)
		err = stripe_connect(c, i, json_array_get(stripes, i));
	return err;
}

/* The figures so far, with the files and the whole run's time for copies. */
static void client_report(const struct client *c, struct eng_report *r)
{
	eng__job_report(c->job, r);
	if (c->files) {
		r->files = eng__files_done(c->files);
		r->files_total = eng__files_manifest(c->files)->n_files;
		r->wall_seconds = (double)(eng__now_ns() - c->t0_ns) / 1e9;
	}
}

static void client_watch(const struct eng_job *job, void *ctx)
{
	struct client *c = ctx;
	struct eng_report so_far;

	if (c->copy && c->copy->cancel && atomic_load(c->copy->cancel) && !atomic_load(&job->stop))
		eng__job_fail((struct eng_job *)job, -EINTR, "interrupted");
	if (eng__session_watch((struct eng_job *)job, c->fd, c->vb, "the server",
			       c->role == ENG_RECEIVER ? "done" : NULL, &c->done))
		atomic_store(&((struct eng_job *)job)->stop, true); /* the sender has every credit back */
	if (c->o->progress) {
		client_report(c, &so_far);
		c->o->progress(&so_far, c->o->ctx);
	}
}

/* The sender asks what arrived; the receiver answers after its files are in place. */
static int finish(struct client *c)
{
	if (c->role == ENG_SENDER)
		return eng__session_sender_end(c->fd, c->o->timeout_ms, c->job);
	return eng__session_receiver_end(c->fd, c->o->timeout_ms, c->job, &c->done, c->files);
}

/* One session from connection to report; the job's options are in c->bench or c->copy. */
static int client_run(struct client *c, struct eng_report *report_out)
{
	unsigned r;
	int err;

	c->o = &c->o_;
	c->fd = -1;
	c->t0_ns = eng__now_ns();
	err = c->copy && c->copy->dir == ENG_PUSH ? push_prepare(c) : 0;
	if (!err)
		err = handshake(c);
	if (!err)
		err = job_setup(c);
	if (!err)
		err = eng__job_run(c->job, client_watch, c);
	if (!err)
		err = finish(c);
	if (err && c->fd >= 0)
		eng__proto_send_error(c->fd, err);
	if (!err) {
		client_report(c, report_out);
		for (r = 0; r < report_out->n_rails; r++)
			snprintf(report_out->rail[r].peer, sizeof(report_out->rail[r].peer), "%s", c->peer[r]);
	}
	eng__verbs_destroy(c->vb);
	eng__job_destroy(c->job);
	eng__files_destroy(c->files);
	json_decref(c->welcome);
	json_decref(c->done);
	eng__auth_key_wipe(&c->key);
	eng_device_list_destroy(c->devs);
	if (c->fd >= 0)
		close(c->fd);
	return err;
}

int eng_bench_run(const struct eng_bench_opts *o, struct eng_report *report_out)
{
	struct client c = {.o_ = {o->host, o->port, o->chunk, o->plan, o->timeout_ms, o->key_file,
				  o->progress, o->ctx},
			   .bench = o, .role = ENG_SENDER};

	if (o->chunk == 0 || o->chunk % 4096 || o->bytes == 0)
		return rcp_err(-EINVAL, "the chunk size must be a multiple of 4 KiB and bytes more than 0");
	return client_run(&c, report_out);
}

int eng_copy_run(const struct eng_copy_opts *o, struct eng_report *report_out)
{
	struct client c = {.o_ = {o->host, o->port, o->chunk, o->plan, o->timeout_ms, o->key_file,
				  o->progress, o->ctx},
			   .copy = o, .role = o->dir == ENG_PUSH ? ENG_SENDER : ENG_RECEIVER};

	if (o->chunk == 0 || o->chunk % 4096 || o->n_src == 0 || !o->dst)
		return rcp_err(-EINVAL, "a copy needs sources, a destination and a chunk size that is a "
					"multiple of 4 KiB");
	return client_run(&c, report_out);
}
