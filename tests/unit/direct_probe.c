/*
 * direct_probe.c - whether a file system refuses a misaligned O_DIRECT
 * buffer: see direct_probe.h.
 */
#include "direct_probe.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool direct_probe_refuses_misaligned(const char *dir)
{
	char p[4096], *buf = NULL;
	bool refused = false;
	int fd, n;

	n = snprintf(p, sizeof(p), "%s/direct-probe", dir);
	assert_true(n > 0 && n < (int)sizeof(p));
	assert_int_equal(posix_memalign((void **)&buf, IO_DIRECT_ALIGN, 2 * IO_DIRECT_ALIGN), 0);
	memset(buf, 'p', 2 * IO_DIRECT_ALIGN);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd >= 0) {
		/* the read needs a block to read: written aligned, which must be taken */
		refused = pwrite(fd, buf + 1, IO_DIRECT_ALIGN, 0) < 0 && errno == EINVAL &&
			  pwrite(fd, buf, IO_DIRECT_ALIGN, 0) == IO_DIRECT_ALIGN &&
			  pread(fd, buf + 1, IO_DIRECT_ALIGN, 0) < 0 && errno == EINVAL;
		close(fd);
	}
	unlink(p);
	free(buf);
	return refused;
}
