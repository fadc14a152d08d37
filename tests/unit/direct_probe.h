/*
 * direct_probe.h - whether a file system refuses O_DIRECT I/O from a buffer
 * off by one byte (EINVAL), for the tests of io/'s redo through the page
 * cache (test_io_plan.c's reads, test_io_root_write.c's writes): where it
 * takes any alignment, or O_DIRECT at all is refused, such a test has
 * nothing to show and skips.
 * The function is in direct_probe.c, compiled once into the unit tests'
 * harness library.
 *
 * Threading: thread-safe (it touches only its own probe file).
 */
#ifndef RAILCP_TEST_DIRECT_PROBE_H
#define RAILCP_TEST_DIRECT_PROBE_H

#include <stdbool.h>

/*
 * True if dir's file system opens a file with O_DIRECT and refuses both a
 * write and a read of IO_DIRECT_ALIGN bytes from a buffer one byte past an
 * aligned address with EINVAL. It makes and removes a probe file in dir.
 */
bool direct_probe_refuses_misaligned(const char *dir);

#endif
