/*
 * datapath_files.h - the sources bench_datapath.c copies and the checks of
 * its copies: files of a pattern that depends on the offset, so misplaced
 * data shows, and byte-for-byte comparisons of files and trees. Each
 * function reports on stdout what it could not do or what differs. Not
 * thread-safe: the caller's buffers (IO_BLOCK bytes each) are its scratch.
 */
#ifndef RAILCP_BENCH_DATAPATH_FILES_H
#define RAILCP_BENCH_DATAPATH_FILES_H

#include <stdbool.h>
#include <stdint.h>

#define TREE_DIRS 8
#define IO_BLOCK (1u << 20)

/* path: size bytes of the pattern of seed; 0 or a negative errno. */
int file_make(const char *path, uint64_t size, uint64_t seed, uint8_t *buf);
/* dir/tree: files of size bytes spread over TREE_DIRS directories. */
int tree_make_flat(const char *tree, uint64_t files, uint64_t size, uint8_t *buf);
/* a and b have the same bytes; else a sentence on stdout, with the first byte that differs. */
bool file_equal(const char *a, const char *b, uint8_t *ba, uint8_t *bb);
/* Trees a and b hold the same entries and bytes, and b nothing else; files counted. */
bool tree_equal(const char *a, const char *b, uint8_t *ba, uint8_t *bb, uint64_t *files);

#endif
