/*
 * mpi_move.c - railcp-mpi's server failover, the parts without MPI (the
 * session loop that uses them is cli/mpi_failover.c): whether a session's
 * error says its server is gone, which server a rank takes next, and the
 * probe that settles an error that could be either.
 *
 * The engine returns a negative errno with one sentence. A server that is
 * gone shows as a control connection refused, reset or closed; its own
 * refusals (a bad key, a missing source, a full disk) come as its "error"
 * frame, -ECONNABORTED. Several codes can be either: -EIO is the fabric's
 * "every rail failed" (a host that died without closing its sockets) as
 * well as a local disk's error; -ECONNABORTED is also a server that said
 * it is shutting down; -ETIMEDOUT is a dead host as well as a live but
 * slow server or this rank's own stalled disk; an unreachable host or
 * network, or a socket no longer connected, can be this rank's own
 * interface. For those the rank asks the server's port once more
 * (cli_mpi_probe): nothing accepting there means gone, so a live server
 * keeps the job and its failure's own sentence. Threading: none of its
 * own; any thread.
 */
#include "cli/cli.h"
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

enum cli_mpi_gone cli_mpi_server_gone(int err)
{
	switch (-err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case EHOSTDOWN:
	case ENETRESET:
		return CLI_MPI_GONE;
	case EIO:
	case ECONNABORTED:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ENETDOWN:
	case ENOTCONN:
		return CLI_MPI_GONE_ASK;
	default:
		return CLI_MPI_NOT_GONE;
	}
}

/*
 * Rank r's home is r mod S; the ranks of one home are its k-th, k = r div
 * S. Its move number m (1 to S - 1) takes the other servers in a ring after
 * home, starting k places on, so the ranks of a server that fails spread
 * over the survivors one each in turn, and each rank tries every other
 * server once.
 */
size_t cli_mpi_next_server(unsigned rank, size_t n_srv, unsigned moves)
{
	size_t home = rank % n_srv, k = rank / n_srv;

	if (n_srv < 2 || moves == 0 || moves >= n_srv)
		return home;
	return (home + 1 + (k + moves - 1) % (n_srv - 1)) % n_srv;
}

/*
 * A connection accepted by the kernel's backlog proves little: a server
 * killed a moment ago may still hold its listener while it exits, which
 * on a loaded host took more than 0.3 s (host/mpi_failover under
 * tools/check). So the probe waits a little: a connection reset or closed
 * in that time means gone; one left open (a server waits for the hello)
 * counts only if a second one, a moment later, is taken and left open too.
 * All of it, over every address of the host, within one budget: what is
 * left of it when a wait begins bounds that wait, and a probe out of time
 * is -ETIMEDOUT.
 */
#define PROBE_SETTLE_MS 300
#define PROBE_GAP_MS 500

/* What is left of the probe's budget, in ms (0: none). */
static int left_ms(uint64_t deadline_ns)
{
	uint64_t now = rcp_now_ns();

	return now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
}

static int min_ms(int a, int b)
{
	return a < b ? a : b;
}

static int probe_settle(int fd, uint64_t deadline_ns)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char c;
	int r = poll(&pfd, 1, min_ms(PROBE_SETTLE_MS, left_ms(deadline_ns)));

	if (r <= 0)
		return 0;
	r = (int)recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return r > 0 ? 0 : r == 0 ? -ECONNRESET : -errno;
}

/* One address of ai: 0 once connected and not dropped at once, else -errno. */
static int probe_one(const struct addrinfo *ai, uint64_t deadline_ns)
{
	struct pollfd pfd = {.events = POLLOUT};
	int soerr = 0, r;
	socklen_t sl = sizeof(soerr);

	if (left_ms(deadline_ns) == 0)
		return -ETIMEDOUT;
	pfd.fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);
	if (pfd.fd < 0)
		return -errno;
	r = connect(pfd.fd, ai->ai_addr, ai->ai_addrlen) ? -errno : 0;
	if (r == -EINPROGRESS) {
		r = poll(&pfd, 1, left_ms(deadline_ns));
		r = r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
		if (!r && getsockopt(pfd.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0)
			r = -soerr;
	}
	if (!r)
		r = probe_settle(pfd.fd, deadline_ns);
	close(pfd.fd);
	return r;
}

int cli_mpi_probe(const char *host, uint16_t port, int budget_ms)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	uint64_t deadline = rcp_now_ns() + (uint64_t)(budget_ms > 0 ? budget_ms : 0) * 1000000u;
	char svc[8];
	int r;

	snprintf(svc, sizeof(svc), "%u", port);
	if (getaddrinfo(host, svc, &hints, &res))
		return -EHOSTUNREACH;
	for (r = -EHOSTUNREACH, ai = res; ai && r; ai = ai->ai_next) {
		r = probe_one(ai, deadline);
		if (!r) {
			usleep((useconds_t)min_ms(PROBE_GAP_MS, left_ms(deadline)) * 1000);
			r = probe_one(ai, deadline);
		}
	}
	freeaddrinfo(res);
	return r;
}
