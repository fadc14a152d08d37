/*
 * machine.c - NUMA nodes, distances and (from XML) rails, through hwloc.
 *
 * hwloc is loaded with HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED so that nodes
 * the process may not use are still listed, with the reason, instead of
 * vanishing from `railcp topo`. What is allowed is then computed here:
 * hwloc's allowed sets (cgroup cpuset, or the allowed_* sets saved in an XML
 * export) intersected with the caller's binding. hwloc does not see a
 * numactl --membind policy or a taskset affinity, which is why the live
 * binding comes from sched_getaffinity and get_mempolicy.
 *
 * Rails from an XML export are hwloc's OpenFabrics OS devices. hwloc stores
 * a port's state as the first digit of sysfs ports/N/state (4 = ACTIVE) in
 * info "PortNState", and no speed or link layer. Assumptions, stated where
 * made: a device without any PortNState has one port, 1, state unknown and
 * taken as active; speed comes from an optional "PortNSpeed" info in Gb/s
 * (railcp's extension, added by hand to an export), else unknown; the link
 * layer comes from the netdev hwloc lists next to the device (a 6-byte
 * address is Ethernet, a 20-byte one IPoIB).
 *
 * A file a user names is read in a child process (topo_machine_read_xml):
 * hwloc 2.9 dies on some malformed files (failed assertions, NULL
 * dereferences, a double free in its 1.x import; tests/fuzz/topo_hwloc.c
 * lists them) and spends up to 512 MiB and seconds on a PU without an OS
 * index. The machine is a flat struct, so the child sends it whole through
 * a pipe, or its error code and sentence; a child that dies or runs past
 * TOPO_XML_SECONDS becomes one sentence in the caller, whose memory hwloc
 * never touched.
 *
 * hwloc runs with its built-in components only (hwloc_plugins_none): the
 * same plan, and the same XML reader, with or without libhwloc-plugins.
 *
 * Threading: topo_machine_create is thread-safe (its hwloc topology is
 * private), but the process's first call sets HWLOC_PLUGINS_PATH in the
 * environment: make it before other threads read the environment, as the
 * command does. topo_machine_read_xml is not: it forks, and the child needs
 * locks another thread could hold at that instant (hwloc's, stdio's); call
 * it while the process has one thread, as the command does.
 */
#include "topology/topology.h"
#include "topology/topo_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * hwloc bitmap -> ours, ignoring indexes beyond TOPO_MAX_CPUS. Not
 * hwloc_bitmap_foreach: an XML file can give an infinite set ("0xf...f"),
 * on which it asserts.
 */
static void bitmap_from_hwloc(struct topo_bitmap *out, hwloc_const_bitmap_t hb)
{
	int i;

	topo_bitmap_zero(out);
	for (i = hwloc_bitmap_first(hb); i >= 0 && i < TOPO_MAX_CPUS; i = hwloc_bitmap_next(hb, i))
		topo_bitmap_set(out, (unsigned)i);
}

static void node_fill_pages(struct topo_node *n, hwloc_obj_t obj, bool live)
{
	unsigned i;

	if (live) {
		n->huge_2m = topo__huge_free(n->id, 2ull << 20);
		n->huge_1g = topo__huge_free(n->id, 1ull << 30);
		return;
	}
	for (i = 0; i < obj->attr->numanode.page_types_len; i++) {
		if (obj->attr->numanode.page_types[i].size == (2ull << 20))
			n->huge_2m = obj->attr->numanode.page_types[i].count;
		else if (obj->attr->numanode.page_types[i].size == (1ull << 30))
			n->huge_1g = obj->attr->numanode.page_types[i].count;
	}
}

static void node_fill(struct topo_node *n, hwloc_obj_t obj, const struct topo_bitmap *cpus_ok,
		      const struct topo_bitmap *nodes_ok, bool live)
{
	struct topo_bitmap all;

	n->id = (int)obj->os_index;
	bitmap_from_hwloc(&all, obj->complete_cpuset ? obj->complete_cpuset : obj->cpuset);
	n->n_cpus_all = topo_bitmap_count(&all);
	n->cpus = all;
	topo_bitmap_and(&n->cpus, cpus_ok);
	n->mem_bytes = obj->attr->numanode.local_memory;
	node_fill_pages(n, obj, live);

	n->usable = false;
	n->excluded = true;
	if (!topo_bitmap_isset(nodes_ok, (unsigned)n->id)) {
		snprintf(n->why, sizeof(n->why),
			 "its memory is outside the allowed nodes "
			 "(numactl --membind, cgroup cpuset)");
	} else if (n->n_cpus_all == 0) {
		n->excluded = false;
		snprintf(n->why, sizeof(n->why), "it has no CPUs");
	} else if (topo_bitmap_count(&n->cpus) == 0) {
		snprintf(n->why, sizeof(n->why),
			 "its CPUs are outside the allowed CPUs "
			 "(taskset, numactl --cpunodebind, cgroup cpuset)");
	} else {
		n->usable = true;
		n->excluded = false;
		n->why[0] = '\0';
	}
}

static void machine_fill_distances(struct topo_machine *m, hwloc_topology_t topo)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1, i, j;
	size_t a, b;

	for (a = 0; a < m->n_nodes; a++)
		for (b = 0; b < m->n_nodes; b++)
			m->dist[a][b] = a == b ? 10 : 20;
	if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d,
					HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
	    nr == 0)
		return;
	for (i = 0; i < d->nbobjs; i++) {
		int x = topo_machine_node_index(m, (int)d->objs[i]->os_index);

		for (j = 0; j < d->nbobjs && x >= 0; j++) {
			int y = topo_machine_node_index(m, (int)d->objs[j]->os_index);

			if (y >= 0)
				m->dist[x][y] = (unsigned)d->values[i * d->nbobjs + j];
		}
	}
	m->dist_known = true;
	hwloc_distances_release(topo, d);
}

/* Allowed CPUs and nodes: hwloc's allowed sets, narrowed by the binding. */
static void machine_allowed(hwloc_topology_t topo, const struct topo_binding *bind,
			    struct topo_bitmap *cpus, struct topo_bitmap *nodes)
{
	bitmap_from_hwloc(cpus, hwloc_topology_get_allowed_cpuset(topo));
	bitmap_from_hwloc(nodes, hwloc_topology_get_allowed_nodeset(topo));
	if (bind && bind->cpus_set)
		topo_bitmap_and(cpus, &bind->cpus);
	if (bind && bind->nodes_set)
		topo_bitmap_and(nodes, &bind->nodes);
}

static int machine_fill(struct topo_machine *m, hwloc_topology_t topo,
			const struct topo_binding *bind, bool live)
{
	struct topo_bitmap cpus, nodes;
	hwloc_obj_t obj = NULL;
	const char *host;
	size_t i;

	machine_allowed(topo, bind, &cpus, &nodes);
	host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName");
	snprintf(m->host, sizeof(m->host), "%s", host ? host : "unknown");
	while ((obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, obj)) != NULL) {
		if (m->n_nodes == TOPO_MAX_NODES)
			return rcp_err(-ENOSPC, "%s has more than %d NUMA nodes, railcp's limit",
				       m->source, TOPO_MAX_NODES);
		node_fill(&m->node[m->n_nodes++], obj, &cpus, &nodes, live);
	}
	if (m->n_nodes == 0)
		return rcp_err(-ENODEV, "hwloc found no NUMA node in %s", m->source);
	topo__sort_nodes(m);
	/* An XML file can repeat an OS index; topo_machine_node_index finds nodes by it. */
	for (i = 1; i < m->n_nodes; i++)
		if (m->node[i].id == m->node[i - 1].id)
			return rcp_err(-EINVAL, "%s lists NUMA node %d twice", m->source,
				       m->node[i].id);
	machine_fill_distances(m, topo);
	m->thp = live ? topo__thp_enabled() : true;
	return live ? 0 : topo__xml_rails(m, topo);
}

/*
 * hwloc loads every plugin in its plugin directory when a process's first
 * topology is made, whether or not the load will use it: with Debian's
 * libhwloc-plugins that is libpciaccess, OpenCL, X11, XNVCtrl, xcb, libxml2
 * and ICU's data (4 MiB more resident, allocations left behind when they are
 * unloaded). railcp needs none of them: the components built into libhwloc
 * are enough (linux for nodes, CPUs and distances; the xml component with
 * hwloc's own parser for --topology). An empty plugin path, set before the
 * first hwloc_topology_init, loads none, so the plan does not depend on what
 * else the host has installed, and one XML reader reads every file: libxml2
 * would turn a newline or tab inside an attribute into a space, as XML
 * requires; hwloc's parser keeps it. Set once, unconditionally: the process's
 * own environment is the only way hwloc 2.9 offers, and a plugin asked for
 * through it (HWLOC_PLUGINS_PATH) would give railcp a second behaviour.
 */
static void hwloc_plugins_none(void)
{
	setenv("HWLOC_PLUGINS_PATH", "", 1);
}

/*
 * What this host's discovery may leave out: the machine is NUMA nodes, their
 * CPU sets, memory and distances, none of which needs caches, groups, dies or
 * misc objects (each a sysfs read per CPU), nor the x86 component, which
 * binds the thread to every CPU in turn to run CPUID there (a migration per
 * CPU, hundreds of milliseconds in an emulated guest) for vendor and model
 * strings railcp never reads; the linux component alone finds the CPUs. A
 * file's import is left as it was: it runs in a child and reads what the
 * file holds.
 */
static void topology_live_lean(hwloc_topology_t topo)
{
	static const hwloc_obj_type_t drop[] = {HWLOC_OBJ_GROUP, HWLOC_OBJ_DIE, HWLOC_OBJ_MISC};
	size_t i;

	hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	for (i = 0; i < RCP_ARRAY_SIZE(drop); i++)
		hwloc_topology_set_type_filter(topo, drop[i], HWLOC_TYPE_FILTER_KEEP_NONE);
	/* A failure leaves the component in: the same machine, only slower. */
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
}

static int topology_open(const char *xml_path, hwloc_topology_t *topo_out)
{
	static pthread_once_t plugins_once = PTHREAD_ONCE_INIT;
	hwloc_topology_t topo = NULL;
	const char *what = xml_path ? xml_path : "this host";

	pthread_once(&plugins_once, hwloc_plugins_none);
	if (hwloc_topology_init(&topo) != 0)
		return rcp_err(-errno, "hwloc_topology_init: %s", strerror(errno));
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	/*
	 * On this host rails come from the verbs devices (engine/), so only an
	 * XML export needs hwloc's I/O objects: its OpenFabrics devices.
	 */
	hwloc_topology_set_io_types_filter(topo, xml_path ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT
							  : HWLOC_TYPE_FILTER_KEEP_NONE);
	if (!xml_path)
		topology_live_lean(topo);
	if (xml_path && hwloc_topology_set_xml(topo, xml_path) != 0) {
		int err = -errno;

		hwloc_topology_destroy(topo);
		return rcp_err(err, "cannot read hwloc XML file %s: %s", xml_path, strerror(-err));
	}
	if (hwloc_topology_load(topo) != 0) {
		int err = -errno;

		hwloc_topology_destroy(topo);
		return rcp_err(err ? err : -EINVAL, "hwloc cannot load the topology of %s%s", what,
			       xml_path ? " (is it an hwloc 2.x XML export?)" : "");
	}
	*topo_out = topo;
	return 0;
}

int topo_machine_create(const char *xml_path, const struct topo_binding *binding,
			struct topo_machine **machine_out)
{
	struct topo_machine *m;
	hwloc_topology_t topo = NULL;
	int err;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	snprintf(m->source, sizeof(m->source), "%s", xml_path ? xml_path : "this host");
	err = topology_open(xml_path, &topo);
	if (err)
		goto err_free;
	err = machine_fill(m, topo, binding, xml_path == NULL);
	hwloc_topology_destroy(topo);
	if (err)
		goto err_free;
	*machine_out = m;
	return 0;

err_free:
	free(m);
	return err;
}

/* What the child sends: its result, then the machine when err is 0. */
struct xml_reply {
	int err;
	char msg[512];
};

static bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/*
 * Bytes read until len, the end of the pipe or the deadline (the child's
 * alarm ends it first; this holds if the child cannot be ended that way).
 */
static size_t read_all(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char *p = buf;
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		uint64_t now = rcp_now_ns();

		pfd.revents = 0;
		if (now >= deadline_ns ||
		    (poll(&pfd, 1, (int)((deadline_ns - now) / 1000000u) + 1) < 0 &&
		     errno != EINTR))
			break;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* The write end is closed (the child ended): a read would not block. */
static bool pipe_ended(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR));
}

/*
 * The caller's signal dispositions and mask are inherited: a handler that
 * recovers from SIGSEGV (cmocka's, in the unit tests) would carry the child
 * on past hwloc's crash, an ignored or blocked SIGALRM would not end it.
 */
static void xml_child_signals(void)
{
	static const int sigs[] = {SIGALRM, SIGSEGV, SIGBUS, SIGILL,  SIGFPE,
				   SIGABRT, SIGSYS,  SIGINT, SIGTERM, SIGPIPE};
	sigset_t none;
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static __attribute__((noreturn)) void xml_child(const char *xml_path, int fd)
{
	struct topo_machine *m = NULL;
	struct xml_reply r = {0};

	xml_child_signals();
	alarm(TOPO_XML_SECONDS); /* SIGALRM's default action ends the child */
	/* hwloc's own words (an assertion's line) only with -v: the caller says the sentence */
	if (rcp_log_level() < RCP_LOG_INFO) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0 && dup2(null, STDERR_FILENO) < 0)
			_exit(1);
	}
	r.err = topo_machine_create(xml_path, NULL, &m);
	if (r.err)
		snprintf(r.msg, sizeof(r.msg), "%s", rcp_err_msg(r.err));
	/* _exit: no atexit handler, no stdio buffer of the parent's flushed twice */
	_exit(write_all(fd, &r, sizeof(r)) && (r.err || write_all(fd, m, sizeof(*m))) ? 0 : 1);
}

/* How the child ended: its status, or why there is none. */
enum xml_end {
	XML_EXITED,    /* status is the child's */
	XML_TIMED_OUT, /* its alarm, or this side's deadline after it */
	XML_LOST,      /* not waited for (SIGCHLD ignored): no status */
};

/* Reap the child; late: its reply did not come by the deadline, so end it first. */
static enum xml_end xml_child_reap(pid_t pid, bool late, int *status)
{
	pid_t w;

	if (late)
		kill(pid, SIGKILL);
	while ((w = waitpid(pid, status, 0)) < 0 && errno == EINTR)
		;
	if (late || (w == pid && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGALRM))
		return XML_TIMED_OUT;
	return w == pid ? XML_EXITED : XML_LOST;
}

/* The sentence for a child that ended without a whole reply. */
static int xml_child_failed(const char *xml_path, enum xml_end end, int status)
{
	char how[64];

	if (end == XML_TIMED_OUT)
		return rcp_err(-ETIMEDOUT, "hwloc did not finish reading %s in %d s", xml_path,
			       TOPO_XML_SECONDS);
	if (end == XML_LOST)
		return rcp_err(-ECHILD, "the process that read %s with hwloc ended unseen",
			       xml_path);
	if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "%s", strsignal(WTERMSIG(status)));
	else /* a sanitizer's report, or a write to the pipe that failed */
		snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(status));
	return rcp_err(-EINVAL,
		       "hwloc crashed reading %s (%s): is it an hwloc 2.x XML export, "
		       "as `lstopo FILE.xml` writes one?",
		       xml_path, how);
}

/* Each of n strings of size bytes at p ends inside its array. */
static bool strings_end(const char *p, size_t n, size_t size, size_t stride)
{
	size_t i;

	for (i = 0; i < n; i++, p += stride)
		if (!memchr(p, '\0', size))
			return false;
	return true;
}

/*
 * Whether a machine from the child stays inside its arrays: counts within
 * their limits, every string ended. The child runs hwloc on a file anyone
 * may hand over, so what it sends is checked as a peer's bytes are.
 */
bool topo__machine_bounded(const struct topo_machine *m)
{
	return m->n_nodes <= TOPO_MAX_NODES && m->n_rails <= TOPO_MAX_RAILS &&
	       strings_end(m->source, 1, sizeof(m->source), 0) &&
	       strings_end(m->host, 1, sizeof(m->host), 0) &&
	       strings_end(m->node[0].why, TOPO_MAX_NODES, sizeof(m->node[0].why),
			   sizeof(m->node[0])) &&
	       strings_end(m->rail[0].dev, TOPO_MAX_RAILS, sizeof(m->rail[0].dev),
			   sizeof(m->rail[0])) &&
	       strings_end(m->rail[0].state, TOPO_MAX_RAILS, sizeof(m->rail[0].state),
			   sizeof(m->rail[0])) &&
	       strings_end(m->rail[0].link_layer, TOPO_MAX_RAILS, sizeof(m->rail[0].link_layer),
			   sizeof(m->rail[0])) &&
	       strings_end(m->rail[0].rule, TOPO_MAX_RAILS, sizeof(m->rail[0].rule),
			   sizeof(m->rail[0]));
}

/* The child's reply into r and m; true when it is whole (a refusal, or the machine). */
static bool xml_reply_read(int fd, struct xml_reply *r, struct topo_machine *m)
{
	uint64_t deadline = rcp_now_ns() + (TOPO_XML_SECONDS + 5) * 1000000000ull;

	if (read_all(fd, r, sizeof(*r), deadline) != sizeof(*r))
		return false;
	if (r->err != 0) {
		r->msg[sizeof(r->msg) - 1] = '\0';
		return true;
	}
	return read_all(fd, m, sizeof(*m), deadline) == sizeof(*m);
}

int topo_machine_read_xml(const char *xml_path, struct topo_machine **machine_out)
{
	struct topo_machine *m;
	struct xml_reply r;
	enum xml_end end;
	int fds[2], status = 0, err;
	bool whole;
	pid_t pid;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC) != 0) {
		err = rcp_err(-errno, "pipe2: %s", strerror(errno));
		goto err_free;
	}
	pid = fork();
	if (pid < 0) {
		err = rcp_err(-errno, "fork, to read %s: %s", xml_path, strerror(errno));
		close(fds[0]);
		close(fds[1]);
		goto err_free;
	}
	if (pid == 0) {
		close(fds[0]);
		xml_child(xml_path, fds[1]);
	}
	close(fds[1]);
	whole = xml_reply_read(fds[0], &r, m);
	/* A reply cut short by the deadline, not by the child's end: the pipe is still open. */
	end = xml_child_reap(pid, !whole && !pipe_ended(fds[0]), &status);
	close(fds[0]);
	if (!whole) {
		err = xml_child_failed(xml_path, end, status);
		goto err_free;
	}
	if (r.err != 0) {
		err = rcp_err(r.err, "%s", r.msg);
		goto err_free;
	}
	if (!topo__machine_bounded(m)) {
		err = rcp_err(-EPROTO,
			      "the process that read %s with hwloc sent a machine past "
			      "railcp's limits",
			      xml_path);
		goto err_free;
	}
	*machine_out = m;
	return 0;

err_free:
	free(m);
	return err;
}

void topo_machine_destroy(struct topo_machine *m)
{
	free(m);
}

int topo_binding_of_process(struct topo_binding *out)
{
	struct topo_binding b;
	cpu_set_t set;
	unsigned i;
	int err;

	memset(&b, 0, sizeof(b));
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return rcp_err(-errno, "sched_getaffinity: %s", strerror(errno));
	for (i = 0; i < CPU_SETSIZE && i < TOPO_MAX_CPUS; i++)
		if (CPU_ISSET(i, &set))
			topo_bitmap_set(&b.cpus, i);
	b.cpus_set = true;
	err = topo__membind_nodes(&b.nodes, &b.nodes_set);
	if (err)
		return err;
	*out = b;
	return 0;
}

int topo_machine_node_index(const struct topo_machine *m, int id)
{
	size_t i;

	for (i = 0; i < m->n_nodes; i++)
		if (m->node[i].id == id)
			return (int)i;
	return -1;
}

static int node_cmp(const void *a, const void *b)
{
	int x = ((const struct topo_node *)a)->id, y = ((const struct topo_node *)b)->id;

	return (x > y) - (x < y); /* not x - y: an XML file's OS index can be 2^31 and more */
}

void topo__sort_nodes(struct topo_machine *m)
{
	/* hwloc lists nodes in logical order, which need not be OS-index order. */
	qsort(m->node, m->n_nodes, sizeof(m->node[0]), node_cmp);
}
