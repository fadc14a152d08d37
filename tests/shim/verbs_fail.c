/*
 * verbs_fail.c - an LD_PRELOAD shim that makes one call of the verbs and
 * rdma_cm functions railcp sets its rails up with fail, as a device, a
 * driver or the kernel may: the k-th call of any of them, counted across the
 * process from its start. tests/integration/testbed/fault_verbs_client.sh
 * and fault_verbs_server.sh sweep k over every call a bench makes, at the
 * client and at the server (tests/integration/verbs_fail.sh), and hold
 * railcp to one sentence and a clean end for each.
 *
 *   RAILCP_VERBS_FAIL_AT=k   the k-th call (1-based) fails; unset or 0: none
 *   RAILCP_VERBS_FAIL=NAME:N the N-th call of NAME fails (counted apart from
 *                            the others): one step of one rail's set-up,
 *                            such as a server's third rdma_accept, whatever
 *                            calls come before it
 *   RAILCP_VERBS_TRACE=FILE  each call appended to FILE: "<k> <name>", and
 *                            "<k> <name> failed" for the one made to fail;
 *                            rdma_set_option's with what it sets ("<k>
 *                            rdma_set_option tos=106": --tos reached the id)
 *   RAILCP_VERBS_HOLD=NAME:N:FILE  the N-th call of NAME waits, before it
 *                            reaches the library, until FILE exists (at
 *                            most 120 s), having made FILE.held: a test
 *                            holds a side at one step of its set-up (the
 *                            second rdma_connect of a rail, say), does
 *                            something to the fabric, then lets it go on
 *
 * A call made to fail does not reach the library. It fails the way the
 * function reports failure: NULL or -1 with errno EIO, EIO returned (the
 * ibv_ calls that return an errno), or -EIO (_ibv_query_gid_table).
 * Nothing is written to stderr: what railcp prints is what is checked.
 *
 * The prototypes are written here with opaque pointers rather than taken
 * from <infiniband/verbs.h>, where some of these names are macros or inline
 * wrappers; each forwards its arguments unchanged to the library's own
 * function (dlsym RTLD_NEXT: the default version, the one railcp links).
 *
 * Threading: the count is atomic; any thread may call.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static _Atomic long calls, hold_calls, name_calls;
static long fail_at, hold_at, name_at;
static int trace_fd = -1;
static char hold_name[64], hold_file[4096], fail_name[64];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void setup(void)
{
	const char *at = getenv("RAILCP_VERBS_FAIL_AT"), *trace = getenv("RAILCP_VERBS_TRACE");
	const char *hold = getenv("RAILCP_VERBS_HOLD"), *named = getenv("RAILCP_VERBS_FAIL");

	fail_at = at ? strtol(at, NULL, 10) : 0;
	if (trace)
		trace_fd = open(trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (hold && sscanf(hold, "%63[^:]:%ld:%4095s", hold_name, &hold_at, hold_file) != 3)
		hold_at = 0;
	if (named && sscanf(named, "%63[^:]:%ld", fail_name, &name_at) != 2)
		name_at = 0;
}

/* Whether this call of name is the N-th of RAILCP_VERBS_FAIL's. */
static bool named_fails(const char *name)
{
	return name_at && !strcmp(name, fail_name) &&
	       atomic_fetch_add(&name_calls, 1) + 1 == name_at;
}

/* The hold's call of name: say so (FILE.held), then wait for FILE. */
static void hold_maybe(const char *name)
{
	char held[4200];
	int i, fd;

	if (!hold_at || strcmp(name, hold_name) || atomic_fetch_add(&hold_calls, 1) + 1 != hold_at)
		return;
	snprintf(held, sizeof(held), "%s.held", hold_file);
	if ((fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
	for (i = 0; i < 2400 && access(hold_file, F_OK) != 0; i++)
		usleep(50000);
}

/* Count a call of name (detail: " what it sets", or ""): whether it is one to fail. */
static bool fails_with(const char *name, const char *detail)
{
	bool named;
	long k;

	pthread_once(&once, setup);
	hold_maybe(name);
	k = atomic_fetch_add(&calls, 1) + 1;
	named = named_fails(name);
	if (trace_fd >= 0)
		dprintf(trace_fd, "%ld %s%s%s\n", k, name, detail,
			k == fail_at || named ? " failed" : "");
	if (k != fail_at && !named)
		return false;
	errno = EIO;
	return true;
}

static bool fails(const char *name)
{
	return fails_with(name, "");
}

/* The library's own function of this name. */
#define REAL(name, ret, ...)                                                                       \
	static ret (*real_)(__VA_ARGS__);                                                          \
	if (!real_)                                                                                \
	*(void **)&real_ = dlsym(RTLD_NEXT, name)

/* Functions that return a pointer (NULL and errno on failure). */
#define SHIM_PTR(name, params, args, ...)                                                          \
	void *name params;                                                                         \
	void *name params                                                                          \
	{                                                                                          \
		REAL(#name, void *, __VA_ARGS__);                                                  \
		return fails(#name) ? NULL : real_ args;                                           \
	}

/* Functions that return -1 and set errno (rdma_cm). */
#define SHIM_NEG(name, params, args, ...)                                                          \
	int name params;                                                                           \
	int name params                                                                            \
	{                                                                                          \
		REAL(#name, int, __VA_ARGS__);                                                     \
		return fails(#name) ? -1 : real_ args;                                             \
	}

/* Functions that return an errno value (verbs). */
#define SHIM_ERRNO(name, params, args, ...)                                                        \
	int name params;                                                                           \
	int name params                                                                            \
	{                                                                                          \
		REAL(#name, int, __VA_ARGS__);                                                     \
		return fails(#name) ? EIO : real_ args;                                            \
	}

SHIM_PTR(ibv_get_device_list, (int *n), (n), int *)
SHIM_PTR(ibv_open_device, (void *dev), (dev), void *)
SHIM_ERRNO(ibv_query_device, (void *ctx, void *attr), (ctx, attr), void *, void *)
SHIM_PTR(ibv_alloc_pd, (void *ctx), (ctx), void *)
SHIM_PTR(ibv_reg_mr, (void *pd, void *addr, size_t len, int access), (pd, addr, len, access),
	 void *, void *, size_t, int)
SHIM_PTR(ibv_create_comp_channel, (void *ctx), (ctx), void *)
SHIM_PTR(ibv_create_cq, (void *ctx, int cqe, void *cq_ctx, void *ch, int vec),
	 (ctx, cqe, cq_ctx, ch, vec), void *, int, void *, void *, int)
SHIM_ERRNO(ibv_modify_qp, (void *qp, void *attr, int mask), (qp, attr, mask), void *, void *, int)
SHIM_PTR(rdma_create_event_channel, (void), (), void)
SHIM_NEG(rdma_create_id, (void *ch, void **id, void *ctx, int ps), (ch, id, ctx, ps), void *,
	 void **, void *, int)
SHIM_NEG(rdma_bind_addr, (void *id, void *addr), (id, addr), void *, void *)
SHIM_NEG(rdma_listen, (void *id, int backlog), (id, backlog), void *, int)
SHIM_NEG(rdma_resolve_addr, (void *id, void *src, void *dst, int ms), (id, src, dst, ms), void *,
	 void *, void *, int)
SHIM_NEG(rdma_resolve_route, (void *id, int ms), (id, ms), void *, int)
SHIM_PTR(ibv_create_qp, (void *pd, void *attr), (pd, attr), void *, void *)
SHIM_NEG(rdma_init_qp_attr, (void *id, void *attr, int *mask), (id, attr, mask), void *, void *,
	 int *)
SHIM_NEG(rdma_connect, (void *id, void *param), (id, param), void *, void *)
SHIM_NEG(rdma_establish, (void *id), (id), void *)
SHIM_NEG(rdma_accept, (void *id, void *param), (id, param), void *, void *)
SHIM_NEG(rdma_get_cm_event, (void *ch, void **event), (ch, event), void *, void **)

/* rdma_set_option, traced with what it sets: level 0 option 0 is RDMA_OPTION_ID_TOS, a byte. */
int rdma_set_option(void *id, int level, int name, void *val, size_t len);
int rdma_set_option(void *id, int level, int name, void *val, size_t len)
{
	char detail[64];

	REAL("rdma_set_option", int, void *, int, int, void *, size_t);
	if (level == 0 && name == 0 && len == 1)
		snprintf(detail, sizeof(detail), " tos=%u", *(const uint8_t *)val);
	else
		snprintf(detail, sizeof(detail), " level=%d option=%d", level, name);
	return fails_with("rdma_set_option", detail) ? -1 : real_(id, level, name, val, len);
}

ssize_t _ibv_query_gid_table(void *ctx, void *entries, size_t max, uint32_t flags, size_t size);
ssize_t _ibv_query_gid_table(void *ctx, void *entries, size_t max, uint32_t flags, size_t size)
{
	REAL("_ibv_query_gid_table", ssize_t, void *, void *, size_t, uint32_t, size_t);
	return fails("_ibv_query_gid_table") ? -EIO : real_(ctx, entries, max, flags, size);
}
