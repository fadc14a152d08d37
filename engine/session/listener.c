/*
 * listener.c - railcp serve: listen for control connections, start a
 * session thread for each (server.c), stop on request.
 *
 * Sessions proceed at once and one that fails or hangs (every step has a
 * timeout) touches no other. Without a key the server listens on loopback
 * only and says so, and serves only its own user: each connection's owner
 * is looked up (peercred.c) before it gets a thread, and where that
 * lookup does not work the server does not start. Strangers get little
 * (session_int.h): at most ENG_MAX_PENDING connections may wait to
 * authenticate, at most ENG_MAX_PENDING_PER_ADDR of them from one address,
 * each for at most ENG_PREAUTH_MS; past the address's share a connection
 * waits its turn, parked (a descriptor; no thread, nothing read), and is
 * served in arrival order when its address's place frees (a session that
 * authenticates or fails says so on an eventfd), so a burst of honest
 * clients from one host is served, not refused; a connection that waited
 * ENG_PREAUTH_MS, or finds the queue full, is refused with a sentence the
 * client takes as "try again" (client.c). When every place is taken,
 * the connection that has waited longest gives its place to the newcomer:
 * idle connections from a few addresses, renewed as they expire, then hold
 * places only until newer ones come, and a client that proves the key at
 * once still gets in. Once proven, a session past --max-sessions or
 * --max-memory waits its turn in a second queue (queue.c). When accept4 runs out of descriptors or
 * memory the loop backs off rather than spin. On stop, running sessions are told to end (their
 * cancel flag) and are waited for.
 *
 * Threading: the caller's thread listens; sessions run on threads of their
 * own; the server's state is read-only after start-up except the counts and
 * the pending slots (atomics: only the listener fills a slot) and the
 * parked connections (the listener's alone).
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Connections the kernel queues for accept. */
#define ENG_LISTEN_BACKLOG 64

/* How often a server serving once looks whether its session ended. */
#define ENG_ONCE_POLL_MS 100

/* Every place taken: the oldest waiter's, its socket shut down (under pending_lock). */
static unsigned pending_evict(struct eng_server *srv, const char *who)
{
	char old[INET6_ADDRSTRLEN];
	unsigned i, oldest = 0;

	for (i = 1; i < ENG_MAX_PENDING; i++)
		if (srv->pending_ns[i] < srv->pending_ns[oldest])
			oldest = i;
	/* Its session's read ends; it no longer owns the slot (the generation). */
	shutdown(srv->pending_fd[oldest], SHUT_RDWR);
	rcp_log(RCP_LOG_INFO,
		"%u connections wait to authenticate: the one from %s that waited longest "
		"gives its place to %s",
		ENG_MAX_PENDING, eng__addr_key_text(&srv->pending[oldest], old, sizeof(old)), who);
	return oldest;
}

/*
 * A pending slot for the connection fd from addr (who, as text): its index
 * and generation, or -EAGAIN when addr has its share (the connection then
 * waits its turn: park_add).
 */
static int pending_claim(struct eng_server *srv, int fd, const struct in6_addr *addr,
			 const char *who, unsigned *slot_out, uint32_t *gen_out)
{
	unsigned i, same = 0, slot = ENG_MAX_PENDING;
	int err = 0;

	pthread_mutex_lock(&srv->pending_lock);
	for (i = 0; i < ENG_MAX_PENDING; i++) {
		const struct in6_addr *a = &srv->pending[i];

		if (IN6_IS_ADDR_UNSPECIFIED(a)) {
			if (slot == ENG_MAX_PENDING)
				slot = i;
			continue; /* a free place: no peer's (and :: is of no peer's /64) */
		}
		same += eng__addr_same_peer(a, addr);
	}
	if (same >= ENG_MAX_PENDING_PER_ADDR) {
		err = -EAGAIN;
	} else {
		if (slot == ENG_MAX_PENDING)
			slot = pending_evict(srv, who);
		srv->pending[slot] = *addr;
		srv->pending_fd[slot] = fd;
		srv->pending_ns[slot] = rcp_now_ns();
		*gen_out = ++srv->pending_gen[slot];
		*slot_out = slot;
	}
	pthread_mutex_unlock(&srv->pending_lock);
	return err;
}

void eng__server_pending_release(struct eng_server *srv, unsigned slot, uint32_t gen)
{
	pthread_mutex_lock(&srv->pending_lock);
	if (srv->pending_gen[slot] == gen) {
		srv->pending[slot] = in6addr_any;
		srv->pending_fd[slot] = -1;
	}
	pthread_mutex_unlock(&srv->pending_lock);
	/* A place freed: the listener serves the next connection waiting its turn. */
	if (eventfd_write(srv->wake_fd, 1))
		(void)0; /* the counter is full: a wake-up is pending anyway */
}

/*
 * Refuse fd from who with err's sentence, logged at level (a flood's
 * refusals at INFO, so that it cannot flood the log), and close it.
 */
static void refuse(enum rcp_log_level level, int fd, int err, const char *who)
{
	rcp_log(level, "connection from %s refused: %s", who, rcp_err_msg(err));
	/* a few bytes into an empty send buffer */
	eng__proto_send_error(&ENG_CTL_PLAIN(fd), err, false);
	close(fd);
}

/* Connections from addr waiting their turn. */
static unsigned parked_from(const struct eng_server *srv, const struct in6_addr *addr)
{
	unsigned i, n = 0;

	for (i = 0; i < srv->park_n; i++)
		n += eng__addr_same_peer(&srv->park[(srv->park_head + i) % ENG_MAX_PARKED].addr,
					 addr);
	return n;
}

/* fd from addr waits its turn at the queue's end; refused when the queue is full. */
static void park_add(struct eng_server *srv, int fd, const struct in6_addr *addr, const char *who)
{
	unsigned mine = parked_from(srv, addr);

	if (mine >= ENG_MAX_PARKED_PER_ADDR || srv->park_n >= ENG_MAX_PARKED) {
		refuse(RCP_LOG_INFO, fd,
		       rcp_err(-EBUSY,
			       "the server has %u connections from %s waiting to authenticate "
			       "and %u more waiting their turn; try again later",
			       ENG_MAX_PENDING_PER_ADDR, who, mine),
		       who);
		return;
	}
	srv->park[(srv->park_head + srv->park_n++) % ENG_MAX_PARKED] =
		(struct eng_parked){.fd = fd, .addr = *addr, .since_ns = rcp_now_ns()};
	atomic_store(&srv->parked, srv->park_n);
}

/*
 * Without a key, the server's own user only: loopback is no boundary
 * between the users of one host. Checked here on the listener's thread, not
 * in the session's, because it is cheap (one sock_diag query, answered
 * within its sendto) and because a refused user then gets no thread and no
 * pending slot, so other local users cannot crowd the server's own out of
 * the slots that 127.0.0.1 shares. Fails closed: no answer, no session.
 */
static int peer_owner_check(const struct eng_server *srv, int fd)
{
	uid_t uid, ours = geteuid();
	int err;

	if (srv->keyed)
		return 0;
	if ((err = eng__tcp_peer_uid(fd, &uid)) != 0)
		return rcp_err(err,
			       "this server has no key and serves only its own user (uid %u), "
			       "so it refuses a connection it cannot trace: %s",
			       (unsigned)ours, rcp_err_msg(err));
	if (uid != ours)
		return rcp_err(-EACCES,
			       "this server has no key and serves only its own user (uid %u); "
			       "connections from uid %u are refused: configure a key to serve "
			       "others",
			       (unsigned)ours, (unsigned)uid);
	return 0;
}

/*
 * fd from addr (who) a session thread when its address has a place free
 * (true: fd is given up), else false: nothing done.
 */
static bool session_try(struct eng_server *srv, int fd, const struct in6_addr *addr,
			const char *who)
{
	unsigned slot = 0;
	uint32_t gen = 0;
	int err;

	if (pending_claim(srv, fd, addr, who, &slot, &gen))
		return false;
	eng__tcp_tune(fd, srv->o->timeout_ms);
	atomic_fetch_add(&srv->active, 1);
	err = eng__server_session_start(srv, fd, who, slot, gen);
	if (err) {
		rcp_log(RCP_LOG_NOTICE, "session from %s refused: cannot start a thread: %s", who,
			strerror(-err));
		atomic_fetch_sub(&srv->active, 1);
		eng__server_pending_release(srv, slot, gen);
		close(fd);
	}
	return true;
}

/* The connections waiting their turn, oldest first: served if they may be, or refused if late. */
static void park_serve(struct eng_server *srv)
{
	uint64_t now = rcp_now_ns(), wait_ms = (uint64_t)eng__preauth_ms(srv->o->timeout_ms);
	unsigned i, n = srv->park_n, kept = 0;

	for (i = 0; i < n; i++) {
		struct eng_parked p = srv->park[(srv->park_head + i) % ENG_MAX_PARKED];
		char who[INET6_ADDRSTRLEN];

		eng__addr_key_text(&p.addr, who, sizeof(who));
		if (now - p.since_ns >= wait_ms * 1000000u)
			refuse(RCP_LOG_INFO, p.fd,
			       rcp_err(-EBUSY,
				       "waited %" PRIu64
				       " s for its turn behind %u connections from "
				       "%s waiting to authenticate; try again later",
				       wait_ms / 1000, ENG_MAX_PENDING_PER_ADDR, who),
			       who);
		else if (!session_try(srv, p.fd, &p.addr, who))
			srv->park[(srv->park_head + kept++) % ENG_MAX_PARKED] = p;
	}
	srv->park_n = kept;
	atomic_store(&srv->parked, kept);
}

static void session_start(struct eng_server *srv, int fd, const struct sockaddr *from)
{
	char who[INET6_ADDRSTRLEN], port[INET6_ADDRSTRLEN + 16];
	struct in6_addr key;
	int err;

	eng__addr_key(from, &key);
	eng__addr_key_text(&key, who, sizeof(who));
	if ((err = peer_owner_check(srv, fd)) != 0) {
		/* Only local users get here, and the sentence names their uid: NOTICE. */
		snprintf(port, sizeof(port), "%s port %u", who, eng__addr_port(from));
		refuse(RCP_LOG_NOTICE, fd, err, port);
		return;
	}
	/* Behind those of its address that wait already, or its address's share is taken. */
	if (parked_from(srv, &key) > 0 || !session_try(srv, fd, &key, who))
		park_add(srv, fd, &key, who);
}

int eng__serve_key(const struct eng_serve_opts *o, struct eng_auth_key *key, bool *keyed,
		   struct sockaddr_storage *addr, socklen_t *len)
{
	int err = o->key ? eng__auth_key_text(o->key, ENG_AUTH_SSH, key)
			 : eng__auth_key_find(o->key_file, key);

	*keyed = false;
	memset(addr, 0, sizeof(*addr)); /* AF_UNSPEC: both families */
	*len = 0;
	if (o->listen_addr && eng__addr_parse(o->listen_addr, 0, addr, len))
		return rcp_err(-EINVAL, "cannot listen on '%s': not an IPv4 or IPv6 address",
			       o->listen_addr);
	if (err == 0) {
		*keyed = true;
		return 0;
	}
	if (err != -ENOENT || o->key_file || o->key)
		return err;
	rcp_err_clear();
	if (!o->listen_addr)
		eng__addr_parse("127.0.0.1", 0, addr, len);
	else if (!eng__addr_loopback((const struct sockaddr *)addr))
		return rcp_err(-EACCES,
			       "no key is configured, so railcp serve listens only on "
			       "loopback: create ~/.config/railcp/key (chmod 600) or give "
			       "--key-file or RAILCP_KEY to listen on %s",
			       o->listen_addr);
	return 0;
}

/*
 * A listening socket on a (port set): an IPv6 one takes IPv4 peers too
 * (IPV6_V6ONLY off, whatever net.ipv6.bindv6only says), as mapped
 * addresses. The descriptor, or -errno.
 */
static int listen_on(const struct sockaddr_storage *a, socklen_t len)
{
	int one = 1, off = 0, fd = socket(a->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, (const struct sockaddr *)a, len) || listen(fd, ENG_LISTEN_BACKLOG)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/*
 * Every address of both families: "::" with IPv4 mapped; "0.0.0.0" where
 * this host has no IPv6 (the module not loaded, or disabled).
 */
static int listen_any(struct sockaddr_storage *a, socklen_t *len, uint16_t port)
{
	int fd;

	eng__addr_parse("::", port, a, len);
	fd = listen_on(a, *len);
	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL) {
		eng__addr_parse("0.0.0.0", port, a, len);
		fd = listen_on(a, *len);
	}
	return fd;
}

static int server_listen(struct eng_server *srv, bool port_any)
{
	const struct eng_serve_opts *o = srv->o;
	uint16_t port = port_any || (o->once && !o->port) ? 0
			: o->port			  ? o->port
							  : ENG_DEFAULT_PORT;
	struct sockaddr_storage a;
	socklen_t len;
	char where[INET6_ADDRSTRLEN], how[300];
	int err;

	if ((err = eng__serve_key(o, &srv->key, &srv->keyed, &a, &len)) != 0)
		return err;
	if (a.ss_family == AF_UNSPEC) {
		srv->lfd = listen_any(&a, &len, port);
	} else {
		eng__addr_set_port(&a, port);
		srv->lfd = listen_on(&a, len);
	}
	if (srv->lfd < 0)
		return rcp_err(srv->lfd, "cannot listen on %s port %u: %s",
			       eng__addr_text((struct sockaddr *)&a, where, sizeof(where)), port,
			       strerror(-srv->lfd));
	if (!srv->keyed && (err = eng__tcp_peer_uid_probe(srv->lfd)) != 0)
		return rcp_err(err,
			       "no key is configured, so railcp serve would serve only its own "
			       "user, but it cannot tell which user makes a connection (%s): "
			       "create ~/.config/railcp/key (chmod 600) or give --key-file or "
			       "RAILCP_KEY",
			       rcp_err_msg(err));
	len = sizeof(a);
	getsockname(srv->lfd, (struct sockaddr *)&a, &len);
	srv->port = eng__addr_port((struct sockaddr *)&a);
	eng__addr_text((struct sockaddr *)&a, where, sizeof(where));
	if (srv->keyed)
		snprintf(how, sizeof(how), "senders must prove the key from %s", srv->key.origin);
	else
		snprintf(how, sizeof(how), "no key configured: loopback only");
	if (o->ready)
		o->ready(where, srv->port, how, o->ctx);
	return 0;
}

/* accept4's errors that leave the connection queued until descriptors or memory free up. */
static bool accept_starved(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/*
 * After a starved accept4 the listening socket stays readable, so polling
 * it again at once would spin: wait ENG_ACCEPT_BACKOFF_MS for the stop fd
 * alone. One line per burst, at its start. True when told to stop.
 */
static bool accept_backoff(struct eng_server *srv, int err, bool *starved)
{
	struct pollfd stop = {.fd = srv->o->stop_fd, .events = POLLIN};

	if (!*starved)
		rcp_log(RCP_LOG_NOTICE,
			"cannot accept connections: %s; trying again every %d ms until it clears",
			strerror(err), ENG_ACCEPT_BACKOFF_MS);
	*starved = true;
	return poll(&stop, 1, ENG_ACCEPT_BACKOFF_MS) > 0;
}

/*
 * Serving once: true when the session has ended, or (-ETIMEDOUT in *err)
 * when no client proved the key by the deadline.
 */
static bool once_done(struct eng_server *srv, uint64_t deadline_ns, int *err)
{
	uint64_t again = atomic_load(&srv->again_ns);

	if (atomic_load(&srv->served) > 0) {
		*err = atomic_load(&srv->served_err);
		return true;
	}
	/* A session whose rails all failed: its client is due back over tcp (fallback.c). */
	if (again && rcp_now_ns() < again + (uint64_t)srv->o->timeout_ms * 1000000u)
		return false;
	if (atomic_load(&srv->sessions) > 0 || rcp_now_ns() < deadline_ns)
		return false;
	if (again) {
		*err = rcp_err(-ETIMEDOUT,
			       "every rail of the session failed, and its client did not come "
			       "back over tcp within %d s",
			       srv->o->timeout_ms / 1000);
		return true;
	}
	*err = rcp_err(-ETIMEDOUT, "no client proved the key within %d s",
		       srv->o->timeout_ms / 1000);
	return true;
}

/* Accept until told to stop (once: until the one session ended); 0 or once's status. */
static int server_loop(struct eng_server *srv)
{
	struct pollfd pfd[3] = {{.fd = srv->lfd, .events = POLLIN},
				{.fd = srv->o->stop_fd, .events = POLLIN},
				{.fd = srv->wake_fd, .events = POLLIN}};
	uint64_t deadline_ns = rcp_now_ns() + (uint64_t)srv->o->timeout_ms * 1000000u;
	bool starved = false;
	int err = 0;

	for (;;) {
		struct sockaddr_storage from;
		socklen_t len = sizeof(from);
		int fd;

		if (srv->o->once && once_done(srv, deadline_ns, &err))
			break;
		if (poll(pfd, 3, srv->o->once || srv->park_n ? ENG_ONCE_POLL_MS : -1) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (pfd[2].revents) {
			eventfd_t n;

			(void)eventfd_read(srv->wake_fd, &n);
		}
		if (srv->park_n) /* before any newcomer: in arrival order */
			park_serve(srv);
		if (!(pfd[0].revents & POLLIN))
			continue;
		fd = accept4(srv->lfd, (struct sockaddr *)&from, &len, SOCK_CLOEXEC);
		if (fd >= 0) {
			if (starved)
				rcp_log(RCP_LOG_NOTICE, "accepting connections again");
			starved = false;
			session_start(srv, fd, (struct sockaddr *)&from);
		} else if (accept_starved(errno) && accept_backoff(srv, errno, &starved)) {
			break;
		}
	}
	return err;
}

int eng__serve(const struct eng_serve_opts *o, const struct eng_transport *tr, bool port_any)
{
	struct eng_server srv = {.o = o,
				 .tr = tr,
				 .lfd = -1,
				 .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
				 .pending_lock = PTHREAD_MUTEX_INITIALIZER,
				 .queue_lock = PTHREAD_MUTEX_INITIALIZER};
	pthread_condattr_t ca;
	const char *const *name;
	char host[256];
	uint16_t port;
	int err = 0;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv.queue_cond, &ca);
	pthread_condattr_destroy(&ca);
	for (name = o->names; name && *name && !err; name++)
		err = eng__identity_parse(*name, ENG_DEFAULT_PORT, host, &port);
	if (!err && srv.wake_fd < 0)
		err = rcp_err(-errno, "eventfd: %s", strerror(errno));
	if (!err && o->plan->n_rails == 0)
		err = rcp_err(-ENODEV, "the plan has no rail to serve on");
	if (!err)
		err = tr->rail_addrs(o->plan, srv.addr);
	if (!err && o->plan_tcp && o->plan_tcp->n_rails) {
		srv.tr_tcp = eng__transport_tcp();
		err = srv.tr_tcp->rail_addrs(o->plan_tcp, srv.addr_tcp);
	}
	if (!err && o->root)
		err = io_root_open(o->root, 0, &srv.root);
	if (!err)
		err = server_listen(&srv, port_any);
	if (!err) {
		err = server_loop(&srv);
		close(srv.lfd); /* refused from now on, not queued while the sessions drain */
		srv.lfd = -1;
		atomic_store(&srv.stopping, true);
		eng__queue_wake(&srv); /* the sessions waiting their turn are told at once */
		while (atomic_load(&srv.active) > 0)
			usleep(10 * 1000);
	}
	while (srv.park_n > 0) /* stopping: no turn will come */
		close(srv.park[(srv.park_head + --srv.park_n) % ENG_MAX_PARKED].fd);
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.wake_fd >= 0)
		close(srv.wake_fd);
	pthread_cond_destroy(&srv.queue_cond);
	eng__auth_key_wipe(&srv.key);
	io_root_close(srv.root);
	return err;
}

int eng_serve(const struct eng_serve_opts *o)
{
	return eng__serve(o, eng__transport_of(o->transport), false);
}
