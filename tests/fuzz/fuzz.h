/*
 * fuzz.h - what the libFuzzer harnesses of tests/fuzz/ share: feeding an
 * input to code that reads a socket, a private temporary directory, and a
 * check that stops the run when an invariant of the code under test breaks.
 *
 * Design: a harness gets its bytes as a peer would send them. Code that reads
 * the control connection reads one end of a socketpair; the input is written
 * into the other end, which is then shut for writing, so every read ends at
 * the input's end (a peer that hung up) instead of waiting for a timeout. The
 * other end stays open, so what the code under test sends (a challenge, an
 * error) is queued, not refused. Files go only beneath one directory made
 * with mkdtemp in $TMPDIR (tools/dev/fuzz points it into its work directory),
 * removed at exit.
 *
 * Header-only so each harness stays one file plus this. Threading: one
 * thread, as libFuzzer runs a harness.
 */
#ifndef RAILCP_TEST_FUZZ_H
#define RAILCP_TEST_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A broken invariant: say which and abort, so libFuzzer keeps the input as a crash. */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__,       \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Inputs a socket takes at most: more would block the one thread that also reads. */
#define FUZZ_FEED_MAX (160u << 10)

/*
 * A socket to read data[0, size) from, then end of stream: *fd_out reads,
 * *peer_out is the other end (close both). -1 when size is over
 * FUZZ_FEED_MAX or the socket does not take it all.
 */
static inline int fuzz_feed(const uint8_t *data, size_t size, int *fd_out, int *peer_out)
{
	int sv[2], buf = (int)FUZZ_FEED_MAX * 2;
	size_t off = 0;

	if (size > FUZZ_FEED_MAX || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	/* The default buffer of a UNIX stream socket holds about 200 KiB; ask for more. */
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	while (off < size) {
		ssize_t n = send(sv[1], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(sv[0]);
			close(sv[1]);
			return -1;
		}
		off += (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);
	*fd_out = sv[0];
	*peer_out = sv[1];
	return 0;
}

static char fuzz_tmp[4096];

static int fuzz_rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP || type == FTW_D || type == FTW_DNR)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

/* Remove path and everything beneath it (not following symlinks). */
static inline void fuzz_rm_rf(const char *path)
{
	nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_tmp_remove(void)
{
	if (fuzz_tmp[0])
		fuzz_rm_rf(fuzz_tmp);
}

/* This process's private directory (made on first use), removed at exit. */
static inline const char *fuzz_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	if (fuzz_tmp[0])
		return fuzz_tmp;
	snprintf(fuzz_tmp, sizeof(fuzz_tmp), "%s/railcp-fuzz-XXXXXX",
		 base && base[0] ? base : "/tmp");
	if (!mkdtemp(fuzz_tmp)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(fuzz_tmp_remove);
	return fuzz_tmp;
}

/* Write data[0, size) to the file path (mode 0600); abort if the disk refuses. */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t off = 0;

	FUZZ_CHECK(fd >= 0);
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);

		FUZZ_CHECK(n > 0);
		off += (size_t)n;
	}
	close(fd);
}

/*
 * fuzz_chunk_hdr's input (gen_corpus writes seeds in it): one byte, bit 0
 * set for the file sink; then records, each an op byte whose low two bits
 * say what happens and whose other bits are the flags below. A chunk record
 * goes on with its immediate (1 byte, or 4 little-endian with
 * FUZZ_F_WIDE_IMM) and the 64-byte header; with FUZZ_F_HONEST_DATA and the
 * file sink, up to 8 bytes of the chunk's data follow. A credit record goes
 * on with its immediate (1 byte).
 */
enum { FUZZ_REC_CHUNK = 0, FUZZ_REC_CREDIT = 1, FUZZ_REC_PUMP = 2, FUZZ_REC_OTHER = 3 };
#define FUZZ_F_STRIPE 0x04u	  /* the second stripe */
#define FUZZ_F_HONEST_HDR 0x10u	  /* magic, token and slot as an honest sender writes them */
#define FUZZ_F_HONEST_DATA 0x20u  /* the chunk's place and bytes as the job expects them */
#define FUZZ_F_WIDE_IMM 0x40u	  /* a 32-bit immediate, not one byte */
#define FUZZ_F_FAIL_NEXT_OP 0x80u /* the endpoint's next operation fails */
#define FUZZ_F_OTHER_SENDER 0x08u /* FUZZ_REC_OTHER: at the sender */
#define FUZZ_F_OTHER_SEND 0x10u	  /* FUZZ_REC_OTHER: a send's completion, not a write's */
#define FUZZ_F_OTHER_ERROR 0x20u  /* FUZZ_REC_OTHER: with an error status */
#define FUZZ_CHUNK_TOKEN 0x5eed5eed0badf00dull

/*
 * fuzz_partial's file (gen_corpus writes a true record of it): "f", three
 * chunks of FUZZ_PART_CHUNK bytes, bytes i * 7 + 3, this mtime.
 */
#define FUZZ_PART_CHUNK 4096u
#define FUZZ_PART_CHUNKS 3u
#define FUZZ_PART_MTIME 1700000000123456789ll

static inline void fuzz_part_data(uint8_t *buf)
{
	uint32_t i;

	for (i = 0; i < FUZZ_PART_CHUNK * FUZZ_PART_CHUNKS; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
}

#endif
