/*
 * admit.c - serve --max-memory: the slot memory the sessions of one server
 * may hold at once.
 *
 * Each session's pools are pinned (registered) for its whole run, so many
 * sessions at once could take the host's memory. When a proven client's
 * hello is accepted (server.c, session_admit), the session reserves the
 * most its server-side pools can take, from the hello alone: its stripes
 * times its slots per stripe (the client's offer, at most ENG_MAX_SLOTS)
 * times its chunk, and never more than its workers' --buffer-mib. Pairing
 * may use fewer stripes later, never more, so the reservation holds what
 * the job allocates. A session larger than the whole budget reserves the
 * whole budget: it gets fewer slots per stripe, and where even 2 slots for
 * each of its stripes do not fit, server_setup.c caps its workers' buffers
 * to its share so that it takes as many stripes as that holds; only a
 * chunk whose one stripe cannot have 2 slots is refused for good. A session that would fit
 * but not beside those running is told the server is busy, and its client
 * asks again within its --timeout (client.c), as past --max-sessions.
 *
 * The default budget (railcp serve without --max-memory) is a quarter of
 * the host's memory, and no more than RLIMIT_MEMLOCK where that binds
 * (no CAP_IPC_LOCK): past it the sessions' registrations would fail
 * together, each within its own check.
 *
 * Threading: the reserved total is one atomic, reserved by compare and
 * swap, so sessions on their own threads never overdraw it.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The plan's slot memory per session: every worker's --buffer-mib. */
static uint64_t plan_buffer_bytes(const struct topo_plan *plan)
{
	uint64_t sum = 0;
	unsigned w;

	for (w = 0; w < plan->n_workers; w++)
		sum += plan->worker[w].buffer_bytes;
	return sum;
}

/* Take need bytes of the budget if they fit beside what is held; false if not. */
static bool budget_take(struct eng_server *srv, uint64_t need, uint64_t *held_out)
{
	uint64_t held = atomic_load(&srv->mem_held);

	do {
		*held_out = held;
		if (held + need > srv->o->max_memory)
			return false;
	} while (!atomic_compare_exchange_weak(&srv->mem_held, &held, held + need));
	return true;
}

int eng__admit_memory(struct eng_server *srv, const struct topo_plan *plan, const json_t *hello,
		      uint32_t chunk, struct eng_admit *out)
{
	uint64_t max = srv->o->max_memory, stripes, slots = ENG_MAX_SLOTS, offer, need, held;
	char a[32], b[32], c[32];

	memset(out, 0, sizeof(*out));
	out->max_slots = ENG_MAX_SLOTS;
	if (max == 0)
		return 0; /* no budget set */
	stripes = json_array_size(json_object_get(hello, ENG_KEY_STRIPES));
	if (eng__proto_get_u64(hello, ENG_KEY_SLOTS, &offer) == 0 && offer < slots)
		slots = offer < 2 ? 2 : offer; /* fewer than 2: session_setup refuses it */
	/* The server takes as many stripes as give 2 slots each within its share (server_setup.c).
	 */
	if (2 * (uint64_t)chunk > max)
		return rcp_err(-ENOMEM,
			       "one stripe of %u KiB chunks needs at least %s of slots, more than "
			       "this server's --max-memory of %s allows all sessions together",
			       chunk >> 10, rcp_size_text(2 * (uint64_t)chunk, a, sizeof(a)),
			       rcp_size_text(max, b, sizeof(b)));
	if (stripes * slots * chunk > max)
		slots = max / (stripes * chunk) < 2 ? 2 : max / (stripes * chunk);
	need = stripes * slots * chunk;
	if (need > plan_buffer_bytes(plan))
		need = plan_buffer_bytes(plan);
	if (need > max) /* the stripes past it are trimmed */
		need = max;
	if (!budget_take(srv, need, &held))
		return rcp_err(-EBUSY,
			       "the server's sessions hold %s of its %s for slots (--max-memory) "
			       "and this one needs up to %s; try again later",
			       rcp_size_text(held, a, sizeof(a)), rcp_size_text(max, b, sizeof(b)),
			       rcp_size_text(need, c, sizeof(c)));
	out->max_slots = (unsigned)slots;
	out->bytes = need;
	return 0;
}

void eng__admit_release(struct eng_server *srv, struct eng_admit *a)
{
	if (a->bytes)
		atomic_fetch_sub(&srv->mem_held, a->bytes);
	a->bytes = 0;
}

uint64_t eng_serve_memory_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t quarter =
		pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 : 1ull << 30;
	struct rlimit rl;

	if (!topo_can_lock_any() && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < quarter)
		return rl.rlim_cur;
	return quarter;
}
