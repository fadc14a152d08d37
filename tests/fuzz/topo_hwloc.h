/*
 * topo_hwloc.h - fuzz_topo's guard around hwloc 2.9's own bugs
 * (topo_hwloc.c says which, and how each is kept from stopping the run):
 * its leaks freed, its crashes in a load taken as a refusal, and the inputs
 * that would make it allocate 512 MiB or free memory twice skipped before
 * it sees them. Linked into fuzz_topo alone: its definitions take the place
 * of libhwloc's hwloc_topology_set_xml, _load and _destroy.
 *
 * Threading: one thread, as libFuzzer runs a harness.
 */
#ifndef RAILCP_TEST_FUZZ_TOPO_HWLOC_H
#define RAILCP_TEST_FUZZ_TOPO_HWLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Once, before any input: the guard on unless RAILCP_FUZZ_HWLOC_STRICT is
 * set, and a report of what it caught and skipped at exit.
 */
void fuzz_hwloc_init(void);

/* Whether data is an input of a kind hwloc cannot take, counted as skipped (none when strict). */
bool fuzz_hwloc_skip(const uint8_t *data, size_t size);

/* The loads that crashed so far. */
unsigned long fuzz_hwloc_crashes(void);

#endif
