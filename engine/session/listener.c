/*
 * listener.c - railcp serve: listen for control connections, start a
 * session thread for each (server.c), stop on request.
 *
 * Sessions proceed at once and one that fails or hangs (every step has a
 * timeout) touches no other. Without a key the server listens on loopback
 * only and says so; at most ENG_MAX_PENDING connections may wait to
 * authenticate, each for at most --timeout. On stop, running sessions are
 * told to end (their cancel flag) and are waited for.
 *
 * Threading: the caller's thread listens; sessions run on threads of their
 * own; the server's state is read-only after start-up except the counts.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Connections still to prove the key: each costs a thread for at most --timeout. */
#define ENG_MAX_PENDING 64
/* Connections the kernel queues for accept. */
#define ENG_LISTEN_BACKLOG 64

static void session_start(struct eng_server *srv, int fd, const struct sockaddr_in *from)
{
	char who[64];
	int err;

	inet_ntop(AF_INET, &from->sin_addr, who, sizeof(who));
	if (atomic_load(&srv->pending) >= ENG_MAX_PENDING) {
		rcp_err(-EBUSY,
			"the server has %u connections waiting to authenticate; try again later",
			ENG_MAX_PENDING);
		eng__proto_send_error(fd, -EBUSY);
		close(fd);
		return;
	}
	eng__tcp_tune(fd);
	atomic_fetch_add(&srv->active, 1);
	atomic_fetch_add(&srv->pending, 1);
	err = eng__server_session_start(srv, fd, who);
	if (err) {
		rcp_log(RCP_LOG_NOTICE, "session from %s refused: cannot start a thread: %s", who,
			strerror(-err));
		atomic_fetch_sub(&srv->active, 1);
		atomic_fetch_sub(&srv->pending, 1);
		close(fd);
	}
}

/* With a key: any address; without: loopback only, and say why. */
static int server_key(struct eng_server *srv, struct in_addr *addr)
{
	const struct eng_serve_opts *o = srv->o;
	int err = eng__auth_key_find(o->key_file, &srv->key);

	if (o->listen_addr && inet_pton(AF_INET, o->listen_addr, addr) != 1)
		return rcp_err(-EINVAL, "cannot listen on '%s': not an IPv4 address",
			       o->listen_addr);
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
		return rcp_err(-EACCES,
			       "no key is configured, so railcp serve listens only on "
			       "loopback: create ~/.config/railcp/key (chmod 600) or give "
			       "--key-file or RAILCP_KEY to listen on %s",
			       o->listen_addr);
	return 0;
}

static int server_listen(struct eng_server *srv, bool port_any)
{
	const struct eng_serve_opts *o = srv->o;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port_any  ? 0
						  : o->port ? o->port
							    : ENG_DEFAULT_PORT)};
	socklen_t len = sizeof(a);
	char where[INET_ADDRSTRLEN], how[300];
	int one = 1, err;

	if ((err = server_key(srv, &a.sin_addr)) != 0)
		return err;
	srv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0)
		return rcp_err(-errno, "socket: %s", strerror(errno));
	setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(srv->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(srv->lfd, ENG_LISTEN_BACKLOG))
		return rcp_err(-errno, "cannot listen on %s port %u: %s",
			       inet_ntop(AF_INET, &a.sin_addr, where, sizeof(where)),
			       ntohs(a.sin_port), strerror(errno));
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

static void server_loop(struct eng_server *srv)
{
	struct pollfd pfd[2] = {{.fd = srv->lfd, .events = POLLIN},
				{.fd = srv->o->stop_fd, .events = POLLIN}};

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

int eng__serve(const struct eng_serve_opts *o, const struct eng_transport *tr, bool port_any)
{
	struct eng_server srv = {.o = o, .tr = tr, .lfd = -1};
	int err = 0;

	if (o->plan->n_rails == 0)
		err = rcp_err(-ENODEV, "the plan has no rail to serve on");
	if (!err)
		err = tr->rail_addrs(o->plan, srv.addr);
	if (!err && o->root)
		err = io_root_open(o->root, 0, &srv.root);
	if (!err)
		err = server_listen(&srv, port_any);
	if (!err) {
		server_loop(&srv);
		atomic_store(&srv.stopping, true);
		while (atomic_load(&srv.active) > 0)
			usleep(10 * 1000);
	}
	if (srv.lfd >= 0)
		close(srv.lfd);
	eng__auth_key_wipe(&srv.key);
	io_root_close(srv.root);
	return err;
}

int eng_serve(const struct eng_serve_opts *o)
{
	return eng__serve(o, eng__transport_verbs(), false);
}
