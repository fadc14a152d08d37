/*
 * client.c - the client's end of a session: railcp bench, push and pull.
 *
 * In order: TCP connect (dial.c; without a key: only to a loopback listener
 * of this user, else -ENOKEY before anything is sent); hello with the job and
 * one entry per stripe (its rail's address and subnet); mutual
 * authentication; for a push the file list goes to the server once it says
 * "ready", for a pull it comes back, is checked against what was asked for
 * (io_pull_names_check) and the destination is prepared here; the server's
 * welcome names the session token, the slot count and size, and for each
 * stripe the server's address, port and stripe to connect to. Then every
 * stripe connects, each within --connect-timeout (with failover a rail
 * that cannot is left out and the server told at once), the job runs, and the end-of-job exchange
 * confirms what arrived (session.c). The client sends for bench and push and receives for pull.
 *
 * Threading: eng_bench_run and eng_copy_run run on the caller's thread plus
 * one thread per worker; they return after all of them have stopped.
 */
#include "engine/session/fallback.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct client {
	struct eng_session s;
	const struct eng_client_opts *o;
	uint64_t t0_ns;
	struct eng_auth_key key;
	json_t *welcome;
	unsigned max_slots;	       /* per stripe, within this side's buffer budget */
	char peer[TOPO_MAX_RAILS][80]; /* per rail: the server rails it was paired with */
	struct topo_plan asked;	       /* the options' fitted to this side's buffer: the hello's */
	struct topo_plan plan;	       /* the session's: the hello's less unpaired stripes */
	char unpaired[TOPO_MAX_RAILS][128];   /* per rail: why all its stripes were left out */
	unsigned fit_held, fit_dropped;	      /* the stripes this side's buffer holds, and not */
	unsigned left[TOPO_MAX_RAILS];	      /* per rail: its stripes the server left unpaired */
	const char *left_why[TOPO_MAX_RAILS]; /* and why (the first's reason) */
	char rail_out[TOPO_MAX_RAILS][256]; /* per rail: why it was left out at set-up ("": not) */
	uint64_t ranges_settled;	    /* a "ranges" session: the files the server settled */
};

/* The job's own part of the hello. */
static int hello_job(struct client *c, json_t *m)
{
	const struct eng_copy_opts *cp = c->o->copy;

	if (!cp) {
		json_object_set_new(m, ENG_KEY_JOB, json_string(ENG_JOB_BENCH));
		json_object_set_new(m, ENG_KEY_BYTES, json_integer((json_int_t)c->s.bench_bytes));
		return 0;
	}
	json_object_set_new(m, ENG_KEY_FLAGS, eng__hello_flags(cp, c->s.fallback));
	if (cp->dir == ENG_PUSH) {
		json_object_set_new(m, ENG_KEY_JOB, json_string(ENG_JOB_PUSH));
		json_object_set_new(m, ENG_KEY_CHUNKS,
				    json_integer((json_int_t)eng__files_chunks(c->s.files)));
		if (cp->delete_extra && eng__delete_filter_set(m, cp->filter))
			return -ENOMEM;
		if (eng__ranges_hello(m, cp))
			return -ENOMEM;
		return eng__proto_set_hex(m, ENG_KEY_DST, cp->dst, strlen(cp->dst));
	}
	json_object_set_new(m, ENG_KEY_JOB, json_string(ENG_JOB_PULL));
	return 0;
}

/* The server as its user named it, which only that server will serve (identity.c). */
static json_t *dialed(const struct eng_client_opts *o)
{
	json_t *server = json_object();

	json_object_set_new(server, ENG_KEY_HOST, json_string(o->host));
	json_object_set_new(server, ENG_KEY_PORT,
			    json_integer(o->port ? o->port : ENG_DEFAULT_PORT));
	return server;
}

static json_t *hello_make(struct client *c)
{
	const struct topo_plan *plan = &c->asked;
	json_t *m = eng__proto_msg(ENG_MSG_HELLO, true), *stripes = json_array();
	unsigned r, q;

	json_object_set_new(m, ENG_KEY_CHUNK, json_integer(c->s.chunk));
	json_object_set_new(m, ENG_KEY_SLOTS, json_integer(c->max_slots));
	for (r = 0; r < plan->n_rails; r++)
		for (q = 0; q < plan->rail[r].qps; q++) {
			json_t *st = json_object();

			json_object_set_new(st, ENG_KEY_ADDR, json_string(c->s.addr[r].text));
			json_object_set_new(st, ENG_KEY_PREFIX, json_integer(c->s.addr[r].prefix));
			json_object_set_new(st, ENG_KEY_RAIL, json_string(plan->rail[r].dev));
			json_array_append_new(stripes, st);
		}
	json_object_set_new(m, ENG_KEY_STRIPES, stripes);
	eng__transport_hello(m, c->s.tr, c->o->plan_tcp != NULL);
	json_object_set_new(m, ENG_KEY_SERVER, dialed(c->o));
	json_object_set_new(m, ENG_KEY_TIMEOUT_MS, json_integer(c->o->timeout_ms));
	if (hello_job(c, m) || (c->s.key && eng__proto_set_hex(m, ENG_KEY_CHALLENGE, c->s.challenge,
							       sizeof(c->s.challenge)))) {
		json_decref(m);
		return NULL;
	}
	return m;
}

/* The key, if one is configured; without one only a keyless server will talk. */
static int client_key(struct client *c)
{
	const char *text = c->o->copy ? c->o->copy->key : NULL;
	int err = text ? eng__auth_key_text(text, ENG_AUTH_SSH, &c->key)
		       : eng__auth_key_find(c->o->key_file, &c->key);

	if (err == -ENOENT && !c->o->key_file && !text) {
		rcp_err_clear();
		return 0;
	}
	if (!err) {
		c->s.key = &c->key;
		err = eng__auth_challenge(c->s.challenge);
	}
	return err;
}

/* Push: the file list of the sources, walked before anything is sent. */
static int push_prepare(struct client *c)
{
	const struct eng_copy_opts *cp = c->o->copy;
	struct io_manifest *m;
	int err;

	if (cp->manifest) /* walked already: a copy, as each try takes its own */
		err = io_manifest_pick(cp->manifest, NULL, &m);
	else
		err = io_manifest_walk_filtered(NULL, cp->src, cp->n_src,
						cp->recursive ? IO_WALK_RECURSIVE : 0, NULL,
						cp->filter, &m);
	if (!err && cp->chunk_fit)
		c->s.chunk = io_plan_chunk_fit(m, c->s.chunk, ENG_CHUNK_MIN);
	if (!err)
		err = eng__files_create(ENG_SENDER, m, c->s.chunk, NULL,
					eng__direct_io_flags(cp->direct), &c->s.files);
	return err;
}

/* Pull: the server's file list, checked, and the local destination made ready for it. */
static int pull_prepare(struct client *c)
{
	const struct eng_copy_opts *cp = c->o->copy;
	struct io_manifest *m = NULL;
	uint8_t *holds = NULL, *kept = NULL;
	int err;

	err = eng__sources_send(&c->s, cp);
	if (!err)
		err = eng__manifest_recv(&c->s.ctl, c->s.timeout_ms, &m);
	if (!err && (err = io_pull_names_check(cp->src, cp->n_src, cp->recursive, m)) != 0)
		io_manifest_destroy(m);
	/* A pull names no job: ranges would land in a temporary never put in place. */
	if (!err && eng__ranges_any(m)) {
		io_manifest_destroy(m);
		err = rcp_err(-EPROTO, "the server's list has byte ranges of files, which a pull "
				       "never asks for");
	}
	if (!err && cp->dry_run)
		return eng__dry_pull(&c->s, cp, m);
	if (!err)
		err = eng__dest_files(NULL, cp->dst, io_src_contents_only(cp->src, cp->n_src),
				      eng__dest_flags(cp->preserve, cp->fsync, cp->direct,
						      cp->partial, cp->checksum, c->s.fallback),
				      0, m, c->s.chunk, cp->update ? &holds : NULL,
				      cp->partial || cp->checksum ? &kept : NULL, &c->s.files);
	if (!err)
		err = eng__session_maps_send(&c->s, holds, kept);
	free(holds);
	free(kept);
	return err;
}

/*
 * The options' plan with as many stripes as this side's buffer gives 2 slots
 * each (as a server fits a client's: pairing.c), and the slots it gives.
 */
static int plan_fit(struct client *c)
{
	unsigned r, dropped = 0, n = 0;
	int err;

	c->asked = *c->o->plan;
	if ((err = eng__stripes_fit(&c->asked, c->s.chunk, "this side", &dropped)) != 0)
		return err;
	for (r = 0; r < c->asked.n_rails; r++) {
		n += c->asked.rail[r].qps;
		if (!c->asked.rail[r].qps && c->o->plan->rail[r].qps)
			snprintf(c->unpaired[r], sizeof(c->unpaired[r]), "%s",
				 "this side's buffer (--buffer-mib) holds no more stripes");
	}
	c->fit_held = n;
	c->fit_dropped = dropped;
	return eng__slots_per_stripe(&c->asked, c->s.chunk, "this side", &c->max_slots);
}

/* Hello, authentication, the file list either way, the welcome. */
static int handshake(struct client *c)
{
	const struct eng_copy_opts *cp = c->o->copy;
	uint16_t port = c->o->port ? c->o->port : ENG_DEFAULT_PORT;
	json_t *hello;
	int err;

	err = client_key(c);
	if (!err)
		err = eng__session_rails(&c->s, c->o->plan);
	if (!err) /* what this side's buffers take, before anything is asked of the server */
		err = plan_fit(c);
	if (!err)
		err = eng__ctl_dial(c->o->host, port, c->o->copy ? c->o->copy->bind_addr : NULL,
				    c->s.timeout_ms, !c->s.key, &c->s.ctl.fd);
	if (!err && !c->s.key && (err = eng__ctl_peer_own(c->s.ctl.fd, c->o->host, port)) != 0) {
		/* Not even the error frame goes to a listener that is not ours. */
		close(c->s.ctl.fd);
		c->s.ctl.fd = -1;
	}
	if (err)
		return err;
	hello = hello_make(c);
	err = hello ? eng__proto_send(&c->s.ctl, hello) : -ENOMEM;
	json_decref(hello);
	if (!err)
		err = eng__session_auth(&c->s, NULL);
	rcp_steps_lap(&c->s.steps, RCP_STEP_CONTROL);
	if (!err && cp && cp->dir == ENG_PUSH) {
		/* The server accepts the job before the list goes: a refusal then reads as one. */
		json_t *ready = NULL;

		err = eng__proto_recv(&c->s.ctl, c->s.timeout_ms, ENG_MSG_READY, &ready);
		json_decref(ready);
		if (!err)
			err = eng__manifest_send(&c->s.ctl, eng__files_manifest(c->s.files));
		if (!err && cp->delete_extra) /* the server keeps what it excludes */
			err = eng__delete_filter_send(&c->s, cp->filter);
		if (!err && cp->dry_run)
			return eng__dry_push_recv(&c->s, cp);
		if (!err && cp->range_step != ENG_RANGES_LAND)
			return eng__ranges_heard(&c->s, &c->ranges_settled);
		if (!err)
			err = eng__session_maps_recv(&c->s, cp->update,
						     cp->partial || cp->checksum);
	} else if (!err && cp) {
		err = pull_prepare(c);
	}
	if (!err && cp && (cp->dry_run || cp->range_step != ENG_RANGES_LAND)) /* no welcome */
		return 0;
	if (!err)
		err = eng__proto_recv(&c->s.ctl, c->s.timeout_ms, ENG_MSG_WELCOME, &c->welcome);
	if (!err)
		err = eng__proto_check_hello(c->welcome);
	rcp_steps_lap(&c->s.steps, RCP_STEP_MANIFEST);
	return err;
}

/* Where stripe i connects, as the welcome's entry w says: into dst, the server's stripe set. */
static int stripe_target(struct client *c, unsigned i, const json_t *w, union eng_sockaddr *dst)
{
	unsigned r = eng__job_link_rail(c->s.job, i);
	const char *addr = json_string_value(json_object_get(w, ENG_KEY_ADDR));
	const char *rail = json_string_value(json_object_get(w, ENG_KEY_RAIL));
	char *peer = c->peer[r], esc[ENG_PROTO_ESC_SHORT];
	uint64_t port, peer_stripe;
	socklen_t len;
	int err;

	if ((err = eng__proto_get_u64(w, ENG_KEY_PORT, &port)) != 0 ||
	    (err = eng__proto_get_u64(w, ENG_KEY_STRIPE, &peer_stripe)) != 0)
		return err;
	if (!addr || !rail || port == 0 || port > 65535 ||
	    eng__addr_parse(addr, (uint16_t)port, &dst->ss, &len) ||
	    dst->sa.sa_family != c->s.addr[r].addr.sa.sa_family)
		return rcp_err(-EPROTO, "the server sent an unusable address for stripe %u", i);
	rcp_printable(rail, esc, sizeof(esc)); /* the server's word, for our report */
	if (!peer[0] || !strstr(peer, esc))
		snprintf(peer + strlen(peer), sizeof(c->peer[0]) - strlen(peer), "%s%s",
			 peer[0] ? "," : "", esc);
	eng__job_link(c->s.job, i)->token =
		eng__seal_token(c->s.tokens, ENG_TOKEN_LINK, (uint32_t)peer_stripe);
	c->s.peer_link[i] = (unsigned)peer_stripe;
	return 0;
}

/*
 * Connect stripe i. With failover a stripe that cannot connect is left out
 * and the server told at once, and so is every later stripe of its rail
 * (they would wait out the same dead path: a dead rail costs one connect
 * timeout); job_setup names the rail once, with the cause. A protocol error (the
 * receiver's slots not as agreed) fails the session whatever the mode.
 */
static int stripe_connect(struct client *c, unsigned i, const json_t *w, char *rail_out)
{
	unsigned r = eng__job_link_rail(c->s.job, i);
	union eng_sockaddr dst, src = c->s.addr[r].addr;
	int err = stripe_target(c, i, w, &dst);

	if (err)
		return err;
	if (!rail_out[0]) {
		err = c->s.tr->connect(c->s.conn, eng__job_link(c->s.job, i), &src, &dst,
				       c->s.peer_link[i], c->s.connect_timeout_ms);
		if (!err || c->s.no_failover || err == -EPROTO)
			return err;
		snprintf(rail_out, 256, "%s", rcp_err_msg(err));
		rcp_err_clear();
	}
	return eng__session_link_left_out(&c->s, i, rail_out);
}

/*
 * The session's plan: the options' plan less the stripes the server left
 * unpaired (its rail on their subnet is down, or missing), said once per
 * rail. The welcome answers for every stripe of the hello, in its order.
 */
/*
 * Whether the welcome pairs any stripe with a server rail of family: where
 * it pairs some and none of that family, a stripe left out of it is left out
 * for its family, not its subnet.
 */
static bool family_offered(const json_t *stripes, int family)
{
	struct sockaddr_storage ss;
	socklen_t len;
	size_t k;
	bool any = false;

	for (k = 0; k < json_array_size(stripes); k++) {
		const char *a = json_string_value(
			json_object_get(json_array_get(stripes, k), ENG_KEY_ADDR));

		if (!a || eng__addr_parse(a, 0, &ss, &len))
			continue;
		any = true;
		if (ss.ss_family == family)
			return true;
	}
	return !any;
}

/* Why a stripe of this side's rail r was left unpaired by the server. */
static const char *unpaired_why(const struct client *c, const json_t *st, const json_t *stripes,
				unsigned r)
{
	if (json_is_true(json_object_get(st, ENG_KEY_BUFFER_FULL)))
		return "the server's buffer (--buffer-mib, --max-memory) holds no more stripes";
	return family_offered(stripes, c->s.addr[r].addr.sa.sa_family)
		       ? "the server has no ACTIVE rail on its subnet"
	       : c->s.addr[r].addr.sa.sa_family == AF_INET6
		       ? "the server has no rail on IPv6 that is ACTIVE (its rails that are: IPv4)"
		       : "the server has no rail on IPv4 that is ACTIVE (its rails that are: IPv6)";
}

static int plan_paired(struct client *c, const json_t *stripes)
{
	unsigned r, q, k = 0, n = 0;

	c->plan = c->asked;
	for (r = 0; r < c->plan.n_rails; r++)
		n += c->plan.rail[r].qps;
	if (json_array_size(stripes) != n)
		return rcp_err(-EPROTO, "the server answered for %zu stripes, not %u",
			       json_array_size(stripes), n);
	for (r = 0; r < c->plan.n_rails; r++) {
		unsigned left = 0;
		const char *why = NULL;

		for (q = c->plan.rail[r].qps; q > 0; q--, k++) {
			const json_t *st = json_array_get(stripes, k);

			if (!json_is_true(json_object_get(st, ENG_KEY_UNPAIRED)))
				continue;
			left++;
			why = why ? why : unpaired_why(c, st, stripes, r);
		}
		c->left[r] = left;
		c->left_why[r] = why;
		if (left && left == c->plan.rail[r].qps)
			snprintf(c->unpaired[r], sizeof(c->unpaired[r]), "%s", why);
		if (left == c->plan.rail[r].qps)
			snprintf(c->peer[r], sizeof(c->peer[r]), "(none)");
		c->plan.rail[r].qps -= left;
	}
	return 0;
}

/* The job as the welcome describes it, every stripe connected. */
static int job_setup(struct client *c)
{
	const json_t *stripes = json_object_get(c->welcome, ENG_KEY_STRIPES);
	uint64_t n_slots, want = c->s.files ? eng__files_chunks(c->s.files) : 0;
	unsigned i, n, r;
	int err;

	if ((err = eng__welcome_terms(c->welcome, c->max_slots, c->s.key != NULL,
				      c->s.files ? &want : NULL, &n_slots, c->s.tokens)) != 0)
		return err;
	if ((err = plan_paired(c, stripes)) != 0)
		return err;
	err = eng__session_job(&c->s, &c->plan, (unsigned)n_slots);
	rcp_steps_lap(&c->s.steps, RCP_STEP_MEMORY);
	for (r = 0; r < c->plan.n_rails && !err; r++)
		if (!c->plan.rail[r].qps && c->o->plan->rail[r].qps)
			eng__job_rail_left_out(c->s.job, r, c->unpaired[r]);
	for (i = 0, n = 0; i < json_array_size(stripes) && !err; i++)
		if (!json_is_true(json_object_get(json_array_get(stripes, i), ENG_KEY_UNPAIRED))) {
			r = eng__job_link_rail(c->s.job, n);
			err = stripe_connect(c, n++, json_array_get(stripes, i), c->rail_out[r]);
		}
	/* When no rail connected, the one sentence of the failure names each cause. */
	if (err || (err = eng__session_any_connected(&c->s)) != 0)
		return err;
	return 0;
}

/*
 * The rails left out at set-up, a notice each, once the copy succeeded
 * (the summary and --json name them too). A copy that fails after all
 * (the server failing its side of the set-up, say) ends with its one
 * sentence alone.
 */
static void left_out_notices(const struct client *c)
{
	unsigned r;

	if (c->fit_dropped)
		rcp_log(RCP_LOG_NOTICE,
			"this side's buffer (--buffer-mib) holds %u of the %u stripes planned, 2 "
			"slots of %u KiB each: the others left out",
			c->fit_held, c->fit_held + c->fit_dropped, c->s.chunk >> 10);
	for (r = 0; r < c->plan.n_rails; r++)
		if (c->left[r])
			rcp_log(RCP_LOG_NOTICE, "%s:%u: %s: %u of its %u stripes left out",
				c->plan.rail[r].dev, c->plan.rail[r].port, c->left_why[r],
				c->left[r], c->asked.rail[r].qps);
	for (r = 0; r < c->plan.n_rails; r++)
		if (c->rail_out[r][0])
			rcp_log(RCP_LOG_NOTICE, "rail %s:%u left out: %s", c->plan.rail[r].dev,
				c->plan.rail[r].port, c->rail_out[r]);
}

static void client_progress(struct eng_session *s, void *ctx)
{
	struct client *c = ctx;
	struct eng_report so_far;

	eng__session_report(s, &so_far);
	if (s->files)
		so_far.wall_seconds = (double)(rcp_now_ns() - c->t0_ns) / 1e9;
	c->o->progress(&so_far, c->o->ctx);
}

/* One session; *busy_out when the server said, before any job began, to try again. */
static int client_once(const struct eng_client_opts *o, uint64_t t0_ns,
		       struct eng_report *report_out, bool *busy_out)
{
	struct client c = {.o = o, .t0_ns = t0_ns};
	const struct eng_copy_opts *cp = o->copy;
	unsigned r;
	int err;

	eng__session_init(&c.s, ENG_CLIENT, o->tr, -1, o->timeout_ms);
	c.s.role = cp && cp->dir == ENG_PULL ? ENG_RECEIVER : ENG_SENDER;
	c.s.chunk = o->chunk;
	c.s.no_failover = o->no_failover;
	c.s.stall_ms = o->stall_ms;
	c.s.rail_stall_ms = o->rail_stall_ms;
	c.s.connect_timeout_ms = eng__connect_timeout(o->connect_timeout_ms, o->timeout_ms);
	c.s.qp = o->qp;
	c.s.partial = cp && (cp->partial || cp->checksum);
	c.s.checksum = cp && cp->checksum;
	c.s.fallback = cp && o->fall && o->plan_tcp && !o->no_failover && !cp->dry_run &&
		       cp->range_step == ENG_RANGES_LAND;
	c.s.bench_bytes = o->bench_bytes;
	if (cp && cp->delete_extra)
		c.s.del = (struct eng_delete){.on = true,
					      .root_too = io_src_contents_only(cp->src, cp->n_src),
					      .filter = cp->filter,
					      .said = cp->deleted,
					      .ctx = cp->deleted_ctx};
	c.s.cancel = c.s.ctl.stop = cp ? cp->cancel : NULL; /* also while it waits its turn */
	c.s.cancel_err = -EINTR;
	c.s.cancel_why = c.s.ctl.stop_why = "interrupted";
	if (o->progress) {
		c.s.progress = client_progress;
		c.s.ctx = &c;
	}
	err = cp && cp->dir == ENG_PUSH ? push_prepare(&c) : 0;
	rcp_steps_lap(&c.s.steps, RCP_STEP_WALK);
	if (!err && (err = handshake(&c)) == -EBUSY)
		*busy_out = true;
	if (!err && cp && (cp->dry_run || cp->range_step != ENG_RANGES_LAND)) {
		memset(report_out, 0, sizeof(*report_out)); /* the list was told: nothing travels */
		report_out->deleted = c.s.del.count;
		report_out->files_total = c.ranges_settled; /* a "ranges" session's files */
		goto out;
	}
	if (!err)
		err = job_setup(&c);
	rcp_steps_lap(&c.s.steps, RCP_STEP_CONNECT);
	if (!err)
		err = eng__session_run(&c.s);
	rcp_steps_lap(&c.s.steps, RCP_STEP_DATA);
	if (!err)
		err = eng__session_end(&c.s);
	if (err)
		eng__session_send_error(&c.s, err);
	if (!err) {
		left_out_notices(&c);
		eng__session_report(&c.s, report_out);
		if (c.s.files)
			report_out->wall_seconds = (double)(rcp_now_ns() - c.t0_ns) / 1e9;
		for (r = 0; r < report_out->n_rails; r++) {
			snprintf(report_out->rail[r].peer, sizeof(report_out->rail[r].peer), "%s",
				 c.peer[r]);
			snprintf(report_out->rail[r].addr, sizeof(report_out->rail[r].addr), "%s",
				 c.s.addr[r].text);
		}
	} else {
		eng__fall_record(&c.s, o);
		eng__session_fallback_drop(&c.s, err);
	}
out:
	eng__session_fini(&c.s);
	json_decref(c.welcome);
	eng__auth_key_wipe(&c.key);
	rcp_steps_lap(&c.s.steps, RCP_STEP_TEARDOWN);
	if (!err)
		report_out->steps = c.s.steps;
	return err;
}

/* A number no other client of the burst draws alike. */
static unsigned jitter(void)
{
	unsigned r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (unsigned)(rcp_now_ns() ^ ((uint64_t)getpid() << 20));
	return r;
}

/* How often a client waiting to ask a busy server again looks at its cancel flag. */
#define CLIENT_RETRY_SLICE_MS 20

/* Sleep ms, or less when cancel (may be NULL) is set meanwhile: Ctrl-C is seen within a slice. */
static void backoff_sleep(unsigned ms, const _Atomic bool *cancel)
{
	uint64_t end = rcp_now_ns() + (uint64_t)ms * 1000000u, now;

	while (!(cancel && atomic_load(cancel)) && (now = rcp_now_ns()) < end) {
		uint64_t left_us = (end - now) / 1000u;

		usleep(left_us < CLIENT_RETRY_SLICE_MS * 1000u ? (useconds_t)left_us
							       : CLIENT_RETRY_SLICE_MS * 1000u);
	}
}

/*
 * A server that says it is busy (its queues full: a full server has a
 * proven session wait its turn, queue.c) is asked again, after a backoff
 * doubling from ENG_RETRY_FIRST_MS to ENG_RETRY_MAX_MS with jitter, until
 * --timeout has passed since the first try.
 */
int eng__client_ask(const struct eng_client_opts *o, struct eng_report *report_out)
{
	const _Atomic bool *cancel = o->copy ? o->copy->cancel : NULL;
	uint64_t t0 = rcp_now_ns(), end = t0 + (uint64_t)o->timeout_ms * 1000000u;
	unsigned backoff = ENG_RETRY_FIRST_MS, tries = 1;
	bool busy = false;
	int err;

	while ((err = client_once(o, t0, report_out, &busy)) == -EBUSY && busy &&
	       !(cancel && atomic_load(cancel))) {
		unsigned wait = backoff / 2 + jitter() % backoff;
		char why[512];

		if (rcp_now_ns() + (uint64_t)wait * 1000000u >= end)
			return rcp_err(err, "%s (asked %u times within %d s)", rcp_err_msg(err),
				       tries, o->timeout_ms / 1000);
		snprintf(why, sizeof(why), "%s", rcp_err_msg(err));
		rcp_log(RCP_LOG_INFO, "%s; asking again in %u ms", why, wait);
		backoff_sleep(wait, cancel);
		if (cancel && atomic_load(cancel))
			return rcp_err(-EINTR,
				       "interrupted while waiting to ask the server again: %s",
				       why);
		backoff = backoff * 2 > ENG_RETRY_MAX_MS ? ENG_RETRY_MAX_MS : backoff * 2;
		busy = false;
		tries++;
	}
	return err;
}

/* What eng_bench_opts and eng_copy_opts share, for eng__client_run over verbs. */
#define CLIENT_OPTS(o)                                                                             \
	{                                                                                          \
		.host = (o)->host, .port = (o)->port, .chunk = (o)->chunk, .plan = (o)->plan,      \
		.timeout_ms = (o)->timeout_ms, .key_file = (o)->key_file,                          \
		.progress = (o)->progress, .ctx = (o)->ctx,                                        \
		.tr = eng__transport_of((o)->transport), .plan_tcp = (o)->plan_tcp,                \
		.no_failover = (o)->no_failover, .stall_ms = (o)->stall_ms,                        \
		.rail_stall_ms = (o)->rail_stall_ms,                                               \
		.connect_timeout_ms = (o)->connect_timeout_ms, .qp = (o)->qp                       \
	}

int eng_bench_run(const struct eng_bench_opts *o, struct eng_report *report_out)
{
	struct eng_client_opts co = CLIENT_OPTS(o);

	co.bench_bytes = o->bytes;
	if (o->chunk == 0 || o->chunk % ENG_CHUNK_MIN || o->chunk > ENG_CHUNK_MAX || o->bytes == 0)
		return rcp_err(-EINVAL,
			       "the chunk size must be a multiple of 4 KiB up to 64 MiB and "
			       "bytes more than 0");
	return eng__client_run(&co, report_out);
}

int eng_copy_run(const struct eng_copy_opts *o, struct eng_report *report_out)
{
	struct eng_client_opts co = CLIENT_OPTS(o);

	co.copy = o;
	if (o->chunk == 0 || o->chunk % ENG_CHUNK_MIN || o->chunk > ENG_CHUNK_MAX ||
	    o->n_src == 0 || !o->dst)
		return rcp_err(-EINVAL,
			       "a copy needs sources, a destination and a chunk size that is a "
			       "multiple of 4 KiB up to 64 MiB");
	return eng__client_run(&co, report_out);
}
