/*
 * topo_fixture.h - tests that read an hwloc XML fixture edited on the fly:
 * a copy with some text replaced, loaded as railcp loads a file
 * (topo_machine_create). Included by test_topo_plan.c, test_topo_xml.c and
 * test_topo_hwloc.c; the functions are in topo_fixture.c, compiled once and
 * linked into each.
 */
#ifndef RAILCP_TEST_TOPO_FIXTURE_H
#define RAILCP_TEST_TOPO_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "topology/topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The machine of a fixture with every `from` replaced by its `to` (ap:
 * pairs, then NULL), read in this process (topo_machine_create) or, with
 * in_child, as the CLI reads a file (topo_machine_read_xml). The machine or
 * NULL, and the error.
 */
struct topo_machine *edited_machine(bool in_child, const char *fixture, int *err_out, va_list ap);

/* edited_machine in this process: a file as someone may hand railcp one, found by fuzz_topo. */
struct topo_machine *load_edited(const char *fixture, int *err_out, ...);

#endif
