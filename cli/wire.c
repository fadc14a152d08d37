/*
 * wire.c - each rail's own figures over a run, as operators of RDMA fabrics
 * watch them beside a transfer: the port counters (ports/P/counters: bytes
 * and packets each way, errors), the driver's hw_counters where the device
 * has them (retransmits, out-of-sequence, RNR, CNPs; rxe has several) and,
 * for a RoCE rail, its netdev's statistics (every frame of the rail, the
 * only byte counts Soft-RoCE has; a TCP rail is its interface, whose
 * statistics are all there is). Read from sysfs before and after the
 * run; the summary and --json give the difference against the payload.
 *
 * The counters are the port's, not the session's: another job on the same
 * port adds to them, which is what shows one rail slowed by another's
 * traffic. port_xmit_data and port_rcv_data count 4-byte words (the IB
 * specification's unit); they are shown in bytes.
 *
 * Threading: not thread-safe (fills the caller's struct).
 */
#include "cli/wire.h"

#include "cli/report.h"
#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	errno = 0;
	*out = strtoull(buf, &end, 10);
	return !errno && end != buf;
}

/* Every counter file of dir, as kind. */
static void read_dir(const char *dir, enum cli_wire_kind kind, struct cli_wire_rail *r)
{
	char path[600];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)) != NULL && r->n < CLI_WIRE_MAX) {
		struct cli_wire_counter *c = &r->c[r->n];

		/* lifespan is hw_counters' refresh period, a setting, not a count */
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(c->name) ||
		    !strcmp(e->d_name, "lifespan"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!read_u64(path, &c->v))
			continue;
		c->kind = kind;
		snprintf(c->name, sizeof(c->name), "%s", e->d_name);
		if (kind == CLI_WIRE_PORT &&
		    (!strcmp(c->name, "port_xmit_data") || !strcmp(c->name, "port_rcv_data")))
			c->v *= 4;
		r->n++;
	}
	if (d)
		closedir(d);
}

static void netdev_of(const char *root, struct cli_wire_rail *r)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/0", root,
		 r->dev, r->port);
	f = fopen(path, "re");
	r->netdev[0] = '\0';
	if (f && fgets(r->netdev, sizeof(r->netdev), f))
		r->netdev[strcspn(r->netdev, "\n")] = '\0';
	if (f)
		fclose(f);
	/* a TCP rail is an IP interface: its own statistics are its wire */
	snprintf(path, sizeof(path), "%s/sys/class/net/%s", root, r->dev);
	if (!r->netdev[0] && strlen(r->dev) < sizeof(r->netdev) && access(path, F_OK) == 0)
		snprintf(r->netdev, sizeof(r->netdev), "%s", r->dev);
}

static void read_rail(const char *root, struct cli_wire_rail *r)
{
	static const char *const stats[] = {"tx_bytes",	  "rx_bytes",	"tx_packets",
					    "rx_packets", "tx_dropped", "rx_dropped"};
	char dir[400];
	size_t i;

	snprintf(dir, sizeof(dir), "%s/sys/class/infiniband/%s/ports/%u/counters", root, r->dev,
		 r->port);
	read_dir(dir, CLI_WIRE_PORT, r);
	snprintf(dir, sizeof(dir), "%s/sys/class/infiniband/%s/ports/%u/hw_counters", root, r->dev,
		 r->port);
	read_dir(dir, CLI_WIRE_HW, r);
	netdev_of(root, r);
	for (i = 0; r->netdev[0] && i < RCP_ARRAY_SIZE(stats) && r->n < CLI_WIRE_MAX; i++) {
		struct cli_wire_counter *c = &r->c[r->n];

		snprintf(dir, sizeof(dir), "%s/sys/class/net/%s/statistics/%s", root, r->netdev,
			 stats[i]);
		if (!read_u64(dir, &c->v))
			continue;
		c->kind = CLI_WIRE_NETDEV;
		snprintf(c->name, sizeof(c->name), "%s", stats[i]);
		r->n++;
	}
}

void cli_wire_read(const char *root, const struct topo_plan *plan, struct cli_wire *out)
{
	size_t i;

	out->n_rails = 0;
	for (i = 0; plan && i < plan->n_rails && i < TOPO_MAX_RAILS; i++) {
		struct cli_wire_rail *r = &out->rail[out->n_rails++];

		snprintf(r->dev, sizeof(r->dev), "%s", plan->rail[i].dev);
		r->port = plan->rail[i].port;
		r->n = 0;
		read_rail(root, r);
	}
}

struct cli_wire *cli_wire_begin(const struct topo_plan *plan)
{
	struct cli_wire *pair = calloc(2, sizeof(*pair));

	if (pair)
		cli_wire_read("", plan, &pair[0]);
	return pair;
}

const struct cli_wire *cli_wire_end(struct cli_wire *pair, const struct topo_plan *plan)
{
	if (!pair)
		return NULL;
	cli_wire_read("", plan, &pair[1]);
	cli_wire_delta(&pair[1], &pair[0]);
	return &pair[1];
}

static const struct cli_wire_counter *find(const struct cli_wire_rail *r, enum cli_wire_kind kind,
					   const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->c[i].kind == kind && !strcmp(r->c[i].name, name))
			return &r->c[i];
	return NULL;
}

static void delta_rail(struct cli_wire_rail *end, const struct cli_wire_rail *start)
{
	size_t i, k = 0;

	for (i = 0; i < end->n; i++) {
		const struct cli_wire_counter *s = find(start, end->c[i].kind, end->c[i].name);

		if (!s || s->v > end->c[i].v)
			continue;
		end->c[k] = end->c[i];
		end->c[k++].v -= s->v;
	}
	end->n = k;
}

void cli_wire_delta(struct cli_wire *end, const struct cli_wire *start)
{
	size_t i, k;

	for (i = 0; i < end->n_rails; i++) {
		for (k = 0; k < start->n_rails; k++)
			if (!strcmp(start->rail[k].dev, end->rail[i].dev) &&
			    start->rail[k].port == end->rail[i].port)
				break;
		if (k < start->n_rails)
			delta_rail(&end->rail[i], &start->rail[k]);
		else
			end->rail[i].n = 0;
	}
}

static uint64_t value(const struct cli_wire_rail *r, enum cli_wire_kind kind, const char *name)
{
	const struct cli_wire_counter *c = find(r, kind, name);

	return c ? c->v : 0;
}

/* Bytes and packets of one direction: the port's counters, else the netdev's. */
static void way(const struct cli_wire_rail *r, bool sent, uint64_t *bytes, uint64_t *pkts)
{
	if (find(r, CLI_WIRE_PORT, "port_xmit_data")) {
		*bytes = value(r, CLI_WIRE_PORT, sent ? "port_xmit_data" : "port_rcv_data");
		*pkts = value(r, CLI_WIRE_PORT, sent ? "port_xmit_packets" : "port_rcv_packets");
	} else {
		*bytes = value(r, CLI_WIRE_NETDEV, sent ? "tx_bytes" : "rx_bytes");
		*pkts = value(r, CLI_WIRE_NETDEV, sent ? "tx_packets" : "rx_packets");
	}
}

uint64_t cli_wire_sent(const struct cli_wire_rail *r)
{
	uint64_t b, p;

	way(r, true, &b, &p);
	return b;
}

/* The traffic counts themselves, which the line gives already as bytes and packets. */
static bool is_traffic(const struct cli_wire_counter *c)
{
	static const char *const names[] = {"sent_pkts", "rcvd_pkts", "rdma_sends", "rdma_recvs"};
	size_t i;

	if (c->kind == CLI_WIRE_NETDEV)
		return strstr(c->name, "dropped") == NULL;
	if (strstr(c->name, "_data") || strstr(c->name, "_packets") || strstr(c->name, "_bytes"))
		return true;
	for (i = 0; i < RCP_ARRAY_SIZE(names); i++)
		if (!strcmp(c->name, names[i]))
			return true;
	return false;
}

static uint64_t payload_of(const struct eng_report *rep, const struct cli_wire_rail *r)
{
	char name[80];
	unsigned i;

	snprintf(name, sizeof(name), "%s:%u", r->dev, r->port);
	for (i = 0; rep && i < rep->n_rails; i++)
		if (!strcmp(rep->rail[i].name, name))
			return rep->rail[i].bytes;
	return 0;
}

void cli_wire_print(FILE *f, const struct cli_wire *w, const struct eng_report *rep)
{
	char a[32], b[32], p[32];
	uint64_t sb, sp, rb, rp;
	size_t i, k, n;

	for (i = 0; w && i < w->n_rails; i++) {
		const struct cli_wire_rail *r = &w->rail[i];

		way(r, true, &sb, &sp);
		way(r, false, &rb, &rp);
		cli_size_str(sb, a, sizeof(a));
		cli_size_str(rb, b, sizeof(b));
		cli_size_str(payload_of(rep, r), p, sizeof(p));
		fprintf(f,
			"  wire %s:%u: sent %s in %" PRIu64 " packets, received %s in %" PRIu64
			" packets, for %s of payload",
			r->dev, r->port, a, sp, b, rp, p);
		for (k = n = 0; k < r->n; k++)
			if (r->c[k].v && !is_traffic(&r->c[k]))
				fprintf(f, "%s%s %" PRIu64, n++ ? ", " : "; ", r->c[k].name,
					r->c[k].v);
		fputc('\n', f);
	}
}

static json_t *kind_json(const struct cli_wire_rail *r, enum cli_wire_kind kind)
{
	json_t *o = json_object();
	size_t k;

	for (k = 0; k < r->n; k++)
		if (r->c[k].kind == kind)
			json_object_set_new(o, r->c[k].name, json_integer((json_int_t)r->c[k].v));
	return o;
}

void cli_wire_json(json_t *o, const struct cli_wire *w, const struct eng_report *rep)
{
	json_t *a = json_array();
	uint64_t sb, sp, rb, rp;
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->n_rails; i++) {
		const struct cli_wire_rail *r = &w->rail[i];
		char name[80];

		way(r, true, &sb, &sp);
		way(r, false, &rb, &rp);
		snprintf(name, sizeof(name), "%s:%u", r->dev, r->port);
		json_array_append_new(
			a, json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "rail",
				     name, "netdev",
				     r->netdev[0] ? json_string(r->netdev) : json_null(),
				     "payload_bytes", (json_int_t)payload_of(rep, r), "sent_bytes",
				     (json_int_t)sb, "sent_packets", (json_int_t)sp,
				     "received_bytes", (json_int_t)rb, "received_packets",
				     (json_int_t)rp, "port_counters", kind_json(r, CLI_WIRE_PORT),
				     "hw_counters", kind_json(r, CLI_WIRE_HW), "netdev_counters",
				     kind_json(r, CLI_WIRE_NETDEV)));
	}
	json_object_set_new(o, "wire", a);
}
