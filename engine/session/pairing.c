/*
 * pairing.c - which of the server's rails carries each of the client's
 * stripes, and how many slots each stripe gets.
 *
 * Rails are paired by subnet: separate rails of a multi-rail fabric sit on
 * separate subnets, and a stripe can only reach a receiver rail on its own.
 * Where no subnet matches (routed fabrics) the least loaded rail of the
 * stripe's family (IPv4 or IPv6) is used.
 * A server rail whose port is not ACTIVE when the session starts takes no
 * stripe, and a stripe whose subnet has no such rail is left out of the
 * session (the client goes without that rail, and says so).
 * Slots come from the server's buffer budget per worker (--buffer-mib): the
 * client chooses stripes and chunk size, and must not make the server
 * allocate beyond what its operator allowed. Where a worker's budget cannot
 * give each of its stripes 2 slots, it takes only as many as it can (the
 * most loaded of its rails giving one up at a time) and the others are left
 * out as a stripe with no rail is, each time the last stripe of the client
 * rail that keeps the most, so the client keeps as many of its rails as it
 * can; only a session none of whose stripes fits is refused. A session's
 * share of serve --max-memory caps its workers' buffers first (admit.c).
 * The client fits its own plan to its own buffer the same way.
 *
 * Threading: thread-safe (no shared state).
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/*
 * The least loaded of the rails that may take from; on its subnet first
 * unless same_only. A rail of the other family (IPv4, IPv6) never does: a
 * connection cannot cross from one to the other.
 */
static unsigned rail_pick(const struct eng_rail_addr *from, const struct eng_rail_addr *to,
			  unsigned n_to, const bool *usable, bool same_only, unsigned *load)
{
	unsigned i, best = ENG_NO_RAIL;
	bool best_match = false;

	for (i = 0; i < n_to; i++) {
		bool match = eng__addr_same_subnet(&from->addr, &to[i].addr, from->prefix);

		if ((usable && !usable[i]) || (same_only && !match) ||
		    from->addr.sa.sa_family != to[i].addr.sa.sa_family)
			continue;
		if (best == ENG_NO_RAIL || (match && !best_match) ||
		    (match == best_match && load[i] < load[best])) {
			best = i;
			best_match = match;
		}
	}
	if (best != ENG_NO_RAIL)
		load[best]++;
	return best;
}

unsigned eng__rail_pair(const struct eng_rail_addr *from, const struct eng_rail_addr *to,
			unsigned n_to, unsigned *load)
{
	return rail_pick(from, to, n_to, NULL, false, load);
}

/* Stripe i of the hello, as an address and prefix. */
static int stripe_addr(const json_t *stripes, size_t i, struct eng_rail_addr *from)
{
	json_t *st = json_array_get(stripes, i);
	const char *a = json_string_value(json_object_get(st, ENG_KEY_ADDR));
	uint64_t prefix;
	socklen_t len;

	memset(from, 0, sizeof(*from));
	if (!a || eng__addr_parse(a, 0, &from->addr.ss, &len) ||
	    eng__proto_get_u64(st, ENG_KEY_PREFIX, &prefix) ||
	    prefix > (from->addr.sa.sa_family == AF_INET ? 32u : 128u))
		return rcp_err(-EINVAL, "stripe %zu has no valid IP address and prefix", i);
	from->prefix = (unsigned)prefix;
	return 0;
}

/* Whether any of the n stripes has a rail of ours of its family (IPv4, IPv6). */
static bool family_shared(const struct eng_rail_addr *from, size_t n,
			  const struct eng_rail_addr *ours, unsigned n_ours)
{
	size_t i;
	unsigned r;

	for (i = 0; i < n; i++)
		for (r = 0; r < n_ours; r++)
			if (from[i].addr.sa.sa_family == ours[r].addr.sa.sa_family)
				return true;
	return false;
}

/*
 * Rails of a multi-rail fabric sit on separate subnets: a stripe whose
 * subnet has rails of ours only pairs with one of them, and when none of
 * them can be used now (down since the server started) it is left out
 * rather than sent to a subnet it may not reach. A stripe whose subnet we
 * have no rail on at all (a routed fabric) goes to the least loaded rail.
 */
int eng__stripes_pair(const json_t *stripes, const struct eng_rail_addr *ours,
		      struct topo_plan *plan, const bool *usable,
		      unsigned peer_rail[ENG_MAX_STRIPES])
{
	struct eng_rail_addr from[ENG_MAX_STRIPES];
	unsigned load[TOPO_MAX_RAILS] = {0}, r, paired = 0;
	size_t i, n = json_array_size(stripes);
	bool partner;
	int err;

	if (!json_is_array(stripes) || n == 0 || n > ENG_MAX_STRIPES)
		return rcp_err(-EINVAL, "a session needs 1 to %d stripes", ENG_MAX_STRIPES);
	for (i = 0; i < n; i++)
		if ((err = stripe_addr(stripes, i, &from[i])) != 0)
			return err;
	for (i = 0; i < n; i++) {
		for (r = 0, partner = false; r < plan->n_rails; r++)
			partner |=
				eng__addr_same_subnet(&from[i].addr, &ours[r].addr, from[i].prefix);
		peer_rail[i] =
			rail_pick(&from[i], ours, (unsigned)plan->n_rails, usable, partner, load);
		paired += peer_rail[i] != ENG_NO_RAIL;
	}
	if (paired == 0 && !family_shared(from, n, ours, (unsigned)plan->n_rails))
		return rcp_err(-ENETUNREACH,
			       "the client's rails are %s and none of this server's is: give the "
			       "rails of both ends addresses of one family",
			       from[0].addr.sa.sa_family == AF_INET6 ? "IPv6" : "IPv4");
	if (paired == 0)
		return rcp_err(-ENETUNREACH,
			       "none of the client's %zu stripes can reach a rail of this server "
			       "that is ACTIVE now",
			       n);
	for (r = 0; r < plan->n_rails; r++)
		plan->rail[r].qps = load[r];
	return 0;
}

/* The stripes plan's rails of worker w take. */
static uint64_t worker_stripes(const struct topo_plan *plan, unsigned w)
{
	uint64_t stripes = 0;
	unsigned r;

	for (r = 0; r < plan->n_rails; r++)
		if (plan->rail[r].worker == w)
			stripes += plan->rail[r].qps;
	return stripes;
}

/*
 * Worker w's stripes down to what its buffer gives 2 slots each: the most
 * loaded of its rails (the lower index on a tie) gives one up at a time, so
 * the spread over its rails stays as even as the pairing made it.
 */
static unsigned worker_fit(struct topo_plan *plan, unsigned w, uint32_t chunk)
{
	uint64_t held = plan->worker[w].buffer_bytes / (2 * (uint64_t)chunk),
		 stripes = worker_stripes(plan, w);
	unsigned r, top, dropped = 0;

	for (; stripes > held; stripes--, dropped++) {
		for (r = 0, top = ENG_NO_RAIL; r < plan->n_rails; r++)
			if (plan->rail[r].worker == w &&
			    (top == ENG_NO_RAIL || plan->rail[r].qps > plan->rail[top].qps))
				top = r;
		plan->rail[top].qps--;
	}
	return dropped;
}

int eng__stripes_fit(struct topo_plan *plan, uint32_t chunk, const char *whose,
		     unsigned *dropped_out)
{
	unsigned w, r, dropped = 0, left = 0, first = ENG_NO_RAIL, qps[TOPO_MAX_RAILS];
	char need[32], may[32];

	for (r = 0; r < plan->n_rails; r++)
		qps[r] = plan->rail[r].qps;
	for (w = 0; w < plan->n_workers; w++) {
		unsigned d = worker_fit(plan, w, chunk);

		if (d && first == ENG_NO_RAIL && plan->worker[w].buffer_bytes < 2 * (uint64_t)chunk)
			first = w;
		dropped += d;
	}
	for (r = 0; r < plan->n_rails; r++)
		left += plan->rail[r].qps;
	if (dropped && left == 0) {
		for (r = 0; r < plan->n_rails; r++) /* the plan as it came */
			plan->rail[r].qps = qps[r];
		w = first == ENG_NO_RAIL ? 0 : first;
		return rcp_err(-ENOMEM,
			       "1 stripe of %u KiB chunks needs %s of slots on the node %d worker, "
			       "which may use %s: use a smaller --chunk, or give %s a larger "
			       "--buffer-mib",
			       chunk >> 10, rcp_size_text(2 * (uint64_t)chunk, need, sizeof(need)),
			       plan->worker[w].node,
			       rcp_size_text(plan->worker[w].buffer_bytes, may, sizeof(may)),
			       whose);
	}
	*dropped_out = dropped;
	return 0;
}

/* For each of the n stripes, the first stripe of its client rail (the same address). */
static void stripes_source(const json_t *stripes, size_t n, unsigned *src)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		const char *a = json_string_value(
			json_object_get(json_array_get(stripes, i), ENG_KEY_ADDR));

		for (j = 0, src[i] = (unsigned)i; j < i && a; j++) {
			const char *b = json_string_value(
				json_object_get(json_array_get(stripes, j), ENG_KEY_ADDR));

			if (b && strcmp(a, b) == 0) {
				src[i] = src[j];
				break;
			}
		}
	}
}

/*
 * The stripe to unpair next, of a rail paired with more than it keeps: the
 * last one of the client rail that keeps the most stripes (of those on
 * such rails), so that each client rail keeps a stripe while it can. n
 * when every rail is within what it keeps.
 */
static size_t unpair_next(const struct topo_plan *plan, const unsigned *peer_rail, size_t n,
			  const unsigned *src)
{
	unsigned on[TOPO_MAX_RAILS] = {0}, kept[ENG_MAX_STRIPES] = {0};
	size_t i, best = n;

	for (i = 0; i < n; i++)
		if (peer_rail[i] != ENG_NO_RAIL) {
			on[peer_rail[i]]++;
			kept[src[i]]++;
		}
	for (i = 0; i < n; i++) {
		unsigned r = peer_rail[i];

		if (r != ENG_NO_RAIL && on[r] > plan->rail[r].qps &&
		    (best == n || kept[src[i]] >= kept[src[best]]))
			best = i;
	}
	return best;
}

void eng__stripes_unpair(const struct topo_plan *plan, const json_t *stripes, unsigned *peer_rail,
			 bool *trimmed_out)
{
	unsigned src[ENG_MAX_STRIPES];
	size_t i, n = json_array_size(stripes);

	stripes_source(stripes, n, src);
	memset(trimmed_out, 0, n * sizeof(*trimmed_out));
	while ((i = unpair_next(plan, peer_rail, n, src)) < n) {
		peer_rail[i] = ENG_NO_RAIL;
		trimmed_out[i] = true;
	}
}

/*
 * Cap the buffers of the workers that have stripes to cap bytes in all.
 * First each gets one stripe's 2 slots at a time, in turn, while its
 * buffer and its stripes take them, so that the cap keeps every worker a
 * stripe while it can; what is left goes in proportion to the stripes so
 * given, within each one's buffer.
 */
bool eng__plan_buffers_cap(struct topo_plan *plan, uint32_t chunk, uint64_t cap)
{
	uint64_t unit = 2 * (uint64_t)chunk, sum = 0, left = cap, n = 0, got[TOPO_MAX_NODES] = {0};
	unsigned w;
	bool more = true;

	for (w = 0; w < plan->n_workers; w++)
		if (worker_stripes(plan, w))
			sum += plan->worker[w].buffer_bytes;
	if (sum <= cap)
		return false;
	while (more)
		for (w = 0, more = false; w < plan->n_workers; w++)
			if (left >= unit && got[w] / unit < worker_stripes(plan, w) &&
			    got[w] + unit <= plan->worker[w].buffer_bytes) {
				got[w] += unit;
				left -= unit;
				n++;
				more = true;
			}
	if (n == 0) /* no buffer holds one stripe's 2 slots: the fit refuses, naming it */
		return false;
	for (w = 0; w < plan->n_workers; w++) {
		uint64_t more_w = (uint64_t)((unsigned __int128)left * (got[w] / unit) / n);
		uint64_t room = plan->worker[w].buffer_bytes - got[w];

		if (worker_stripes(plan, w))
			plan->worker[w].buffer_bytes = got[w] + (more_w < room ? more_w : room);
	}
	return true;
}

int eng__slots_per_stripe(const struct topo_plan *plan, uint32_t chunk, const char *whose,
			  unsigned *n_out)
{
	unsigned w, r, n = ENG_MAX_SLOTS;

	for (w = 0; w < plan->n_workers; w++) {
		uint64_t stripes = 0, k;

		for (r = 0; r < plan->n_rails; r++)
			if (plan->rail[r].worker == w)
				stripes += plan->rail[r].qps;
		if (!stripes)
			continue;
		k = plan->worker[w].buffer_bytes / (stripes * chunk);
		if (k < 2) /* past eng__stripes_fit, as both ends call it, never */
			return rcp_err(-ENOMEM,
				       "%" PRIu64 " stripes of %u KiB chunks need %" PRIu64
				       " MiB of slots on the node %d worker, which may use %" PRIu64
				       " MiB: use a smaller --chunk or fewer QPs, or give %s "
				       "a larger --buffer-mib",
				       stripes, chunk >> 10, (2 * stripes * chunk) >> 20,
				       plan->worker[w].node, plan->worker[w].buffer_bytes >> 20,
				       whose);
		if (k < n)
			n = (unsigned)k;
	}
	*n_out = n;
	return 0;
}

unsigned eng__slots_for_job(unsigned n_slots, uint64_t chunks)
{
	uint64_t need = chunks < 2 ? 2 : chunks;

	return need < n_slots ? (unsigned)need : n_slots;
}
