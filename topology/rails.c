/*
 * rails.c - the rail list of a machine: from hwloc's OpenFabrics OS devices
 * of an XML export, or added by the caller (engine/ on this host); and the
 * --rails DEV[:PORT],... option.
 *
 * A rail's NUMA node in XML is the node of the first non-I/O ancestor of its
 * PCI device, when that ancestor covers exactly one node. An ancestor that
 * spans several nodes (a device hwloc attached to the Machine) leaves the
 * node unknown, and the planner places such a rail by its documented rule.
 *
 * Threading: no shared state.
 */
#include "topology/topology.h"
#include "topology/topo_int.h"

#include "common/common.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rail_cmp(const struct topo_rail *a, const struct topo_rail *b)
{
	int c = strverscmp(a->dev, b->dev);

	return c ? c : (int)a->port - (int)b->port;
}

int topo_machine_rail_index(const struct topo_machine *m, const char *dev, unsigned port)
{
	size_t i;

	for (i = 0; i < m->n_rails; i++)
		if (m->rail[i].port == port && strcmp(m->rail[i].dev, dev) == 0)
			return (int)i;
	return -1;
}

int topo_machine_add_rail(struct topo_machine *m, const struct topo_rail *rail)
{
	size_t at = m->n_rails;

	if (topo_machine_rail_index(m, rail->dev, rail->port) >= 0)
		return -EEXIST;
	if (m->n_rails == TOPO_MAX_RAILS)
		return rcp_err(-ENOSPC, "more than %d RDMA ports, railcp's limit", TOPO_MAX_RAILS);
	while (at > 0 && rail_cmp(&m->rail[at - 1], rail) > 0) {
		m->rail[at] = m->rail[at - 1];
		at--;
	}
	m->rail[at] = *rail;
	m->n_rails++;
	return 0;
}

/* Link layer from the netdev next to the device: the length of its address. */
static const char *xml_link_layer(hwloc_obj_t osdev)
{
	hwloc_obj_t sib;

	for (sib = osdev->parent ? osdev->parent->io_first_child : NULL; sib;
	     sib = sib->next_sibling) {
		const char *addr = hwloc_obj_get_info_by_name(sib, "Address");

		if (sib->type != HWLOC_OBJ_OS_DEVICE ||
		    sib->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !addr)
			continue;
		if (strlen(addr) == 17)
			return "Ethernet";
		if (strlen(addr) == 59)
			return "InfiniBand";
	}
	return "unknown";
}

/* "0000:3b:00.0" of the PCI function above osdev, or "?" */
static void xml_busid(hwloc_obj_t osdev, char *buf, size_t len)
{
	hwloc_obj_t p;

	snprintf(buf, len, "?");
	for (p = osdev->parent; p; p = p->parent)
		if (p->type == HWLOC_OBJ_PCI_DEVICE) {
			snprintf(buf, len, "%04x:%02x:%02x.%x", p->attr->pcidev.domain,
				 p->attr->pcidev.bus, p->attr->pcidev.dev, p->attr->pcidev.func);
			return;
		}
}

static void xml_locality(hwloc_topology_t topo, hwloc_obj_t osdev, struct topo_rail *r)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, osdev);
	char busid[16], type[32];

	xml_busid(osdev, busid, sizeof(busid));
	hwloc_obj_type_snprintf(type, sizeof(type), anc, 0);
	if (anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1) {
		r->numa_node = hwloc_bitmap_first(anc->nodeset);
		snprintf(r->rule, sizeof(r->rule), "hwloc: PCI %s under %s L#%u", busid, type,
			 anc->logical_index);
	} else {
		r->numa_node = TOPO_NUMA_UNKNOWN;
		snprintf(r->rule, sizeof(r->rule),
			 "unknown: hwloc attaches PCI %s to %s L#%u, "
			 "which spans several NUMA nodes",
			 busid, type, anc->logical_index);
	}
}

/* The kernel's enum ib_port_state, as hwloc copies its first digit. */
static void xml_port_state(const char *state, struct topo_rail *r)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};
	int code = state ? atoi(state) : -1;

	if (!state) {
		/* No PortNState: assume one working port (documented in machine.c). */
		snprintf(r->state, sizeof(r->state), "unknown");
		r->active = true;
		return;
	}
	snprintf(r->state, sizeof(r->state), "%s",
		 code >= 0 && code < (int)RCP_ARRAY_SIZE(names) ? names[code] : "unknown");
	r->active = code == 4;
}

/* One rail per port of an OpenFabrics device (see machine.c for the assumptions). */
static int xml_device_rails(struct topo_machine *m, hwloc_topology_t topo, hwloc_obj_t osdev)
{
	struct topo_rail r;
	const char *state, *speed;
	char key[32];
	unsigned p;
	int err;

	for (p = 1;; p++) {
		snprintf(key, sizeof(key), "Port%uState", p);
		state = hwloc_obj_get_info_by_name(osdev, key);
		if (!state && p > 1)
			return 0;
		memset(&r, 0, sizeof(r));
		snprintf(r.dev, sizeof(r.dev), "%s", osdev->name);
		r.port = p;
		xml_port_state(state, &r);
		snprintf(r.link_layer, sizeof(r.link_layer), "%s", xml_link_layer(osdev));
		snprintf(key, sizeof(key), "Port%uSpeed", p);
		speed = hwloc_obj_get_info_by_name(osdev, key);
		r.gbps = speed ? strtod(speed, NULL) : 0.0;
		xml_locality(topo, osdev, &r);
		err = topo_machine_add_rail(m, &r);
		if (err && err != -EEXIST)
			return err;
		if (!state)
			return 0;
	}
}

/*
 * A device name --rails and a profile can give back: printable, without
 * the ',', space and '#' that separate and end their lists. The kernel's
 * names are; an XML file's need not be.
 */
static int xml_check_name(const struct topo_machine *m, const char *name)
{
	char shown[64];
	size_t i;
	bool ok = name[0] != '\0';

	for (i = 0; name[i]; i++)
		ok &= isgraph((unsigned char)name[i]) && name[i] != ',' && name[i] != '#';
	if (ok)
		return 0;
	for (i = 0; name[i] && i < sizeof(shown) - 1; i++)
		shown[i] = isgraph((unsigned char)name[i]) ? name[i] : '?';
	shown[i] = '\0';
	return rcp_err(-EINVAL,
		       "%s: OpenFabrics device '%s' has a name railcp cannot use in --rails or a "
		       "profile (empty, or with a space, ',', '#' or an unprintable character)",
		       m->source, shown);
}

int topo__xml_rails(struct topo_machine *m, hwloc_topology_t topo)
{
	hwloc_obj_t osdev = NULL;
	int err;

	while ((osdev = hwloc_get_next_osdev(topo, osdev)) != NULL) {
		if (osdev->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !osdev->name)
			continue;
		err = xml_check_name(m, osdev->name);
		err = err ? err : xml_device_rails(m, topo, osdev);
		if (err)
			return err;
	}
	return 0;
}

/* One "DEV[:PORT]" item of --rails. */
static int parse_rail_item(const char *item, struct topo_rail_sel *sel)
{
	const char *colon = strrchr(item, ':');
	size_t len = colon ? (size_t)(colon - item) : strlen(item);
	char *end;
	unsigned long port = 0;

	if (len == 0 || len >= sizeof(sel->dev))
		return -EINVAL;
	if (colon) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || port == 0 || port > 255)
			return -EINVAL;
	}
	memcpy(sel->dev, item, len);
	sel->dev[len] = '\0';
	sel->port = (unsigned)port;
	return 0;
}

bool topo_port_active(const char *sysfs_root, const char *dev, unsigned port)
{
	char path[512], state[32] = "";
	FILE *f;

	if (strchr(dev, '/') ||
	    snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/state", sysfs_root, dev,
		     port) >= (int)sizeof(path))
		return false;
	f = fopen(path, "re");
	if (!f)
		return true;
	if (!fgets(state, sizeof(state), f))
		state[0] = '\0';
	fclose(f);
	return strstr(state, "ACTIVE") != NULL && !strstr(state, "ACTIVE_DEFER");
}

int topo_opts_parse_rails(const char *text, struct topo_opts *opts)
{
	struct topo_rail_sel sel[TOPO_MAX_RAILS];
	/* Room for TOPO_MAX_RAILS items "DEV:PORT" of the longest names, as profiles have. */
	char buf[8192], *save = NULL, *item;
	size_t n = 0;

	if (strlen(text) >= sizeof(buf))
		return rcp_err(-EINVAL, "--rails: the list is too long");
	snprintf(buf, sizeof(buf), "%s", text);
	for (item = strtok_r(buf, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
		if (n == TOPO_MAX_RAILS)
			return rcp_err(-EINVAL, "--rails: more than %d rails", TOPO_MAX_RAILS);
		if (parse_rail_item(item, &sel[n]))
			return rcp_err(-EINVAL,
				       "--rails: '%s' is not DEV or DEV:PORT "
				       "(for example mlx5_0:1)",
				       item);
		n++;
	}
	if (n == 0)
		return rcp_err(-EINVAL, "--rails: the list is empty");
	memcpy(opts->rails, sel, n * sizeof(sel[0]));
	opts->n_rails = n;
	return 0;
}
