/* A fake file-system root for tests of code that reads /sys and /proc
 * beneath a root it is given (doctor, wire counters). */
#ifndef RAILCP_TESTS_FAKE_ROOT_H
#define RAILCP_TESTS_FAKE_ROOT_H

#include <stddef.h>

/* Make a new empty directory under $TMPDIR (or /tmp) named after name;
 * its path goes in root (n bytes). Fails the test when it cannot. */
void fake_root_make(char *root, size_t n, const char *name);

/* Write text to root/path, making the directories on the way. */
void fake_root_put(const char *root, const char *path, const char *text);

/* Remove root and everything beneath it: 0, or -1 when that failed. */
int fake_root_remove(const char *root);

#endif
