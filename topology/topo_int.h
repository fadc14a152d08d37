/*
 * topo_int.h - private to topology/: helpers shared between its files.
 */
#ifndef RAILCP_TOPOLOGY_TOPO_INT_H
#define RAILCP_TOPOLOGY_TOPO_INT_H

#if !defined(TOPO_MODULE) && !defined(RAILCP_TESTS)
#error "topology/topo_int.h is private to topology/"
#endif

#include "topology/topology.h"

#include <hwloc.h>

/* Free hugepages of page_bytes on node (sysfs); 0 when unknown. */
uint64_t topo__huge_free(int node, uint64_t page_bytes);

/* Whether madvise(MADV_HUGEPAGE) can give transparent hugepages. */
bool topo__thp_enabled(void);

/* Nodes of an MPOL_BIND memory policy; *set_out false under any other policy. */
int topo__membind_nodes(struct topo_bitmap *nodes_out, bool *set_out);

/* Sort m->node by id. */
void topo__sort_nodes(struct topo_machine *m);

/*
 * Whether m stays inside its arrays (counts within their limits, every
 * string ended): what topo_machine_read_xml's child sends is checked so.
 */
bool topo__machine_bounded(const struct topo_machine *m);

/* Add hwloc's OpenFabrics devices of an XML export to m as rails. */
int topo__xml_rails(struct topo_machine *m, hwloc_topology_t topo);

/* Page size the plan expects for a pool of bytes on node n. */
enum topo_page topo__page_expect(const struct topo_machine *m, const struct topo_node *n,
				 uint64_t bytes);

/* Default pool bytes of a worker with n_rails rails of qps QPs. */
uint64_t topo__buffer_default(size_t n_rails, unsigned qps);

#endif
