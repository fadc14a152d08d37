/*
 * partial_record.c - what a partial file (partial.c) says of itself on
 * disk: its record and its log, how each is written, and which chunks each
 * claims when the next copy reads it back.
 *
 * When a copy fails, and every ENG_CHECKPOINT_MS while it runs, each
 * unfinished file's handle writes its record (io_wfile_keep,
 * io_wfile_checkpoint): which of the file's chunks landed, each with the
 * CRC-64 it arrived with, and what the file was (final name, size, mtime,
 * chunk size), the whole closed by a CRC-64 of its own. It is written under
 * a random temporary name, synced and renamed over the record's name, so a
 * crash at any instant leaves the old record or the new one, never half of
 * one. The data file is kept as it is.
 *
 * A record lags: a receiver killed outright (SIGKILL, the OOM killer) never
 * writes its last one. So beside it each partial file has a log,
 * ".railcp-tmp-l" and the same hex, mapped shared: a slot per chunk, and the
 * chunk's CRC-64 and a check of it stored into its slot once the chunk is
 * written (no system call; the page cache outlives the process). Its blocks
 * are reserved when it is made, so a store never needs one (a full disk
 * would raise SIGBUS). It is not synced: after a power loss it may lack
 * slots or hold torn ones, which their checks reject.
 *
 * Read back, a record or a log claims chunks only if it is whole (magic,
 * length, CRC; the log's head, then each slot by its check), names the same
 * final name, and describes the same source: size, mtime and chunk size
 * equal to the manifest's; else it gives the reason it is ignored
 * (io_root_partial, partial.c, says it, and reads back what is claimed).
 * Each is opened only as the receiver's own (io__partial_open, partial.c).
 *
 * Record layout, little-endian: "RAILCPR1", chunk size (u32), name length
 * (u32), size (u64), mtime in ns (i64), chunks (u64), the name, a bit per
 * chunk (chunks / 8 + 1 bytes), a CRC-64 per chunk (u64, 0 where none
 * landed), and the CRC-64 of all that. Log layout: the same head with
 * "RAILCPL1", the name and the CRC-64 of those, zeros up to a multiple of
 * 64 bytes, then per chunk k a slot of 16 bytes: the CRC-64 it landed with
 * and the CRC-64 of k and that (u64 each) xor LOG_SALT.
 *
 * Threading: a record is written by one thread at a time (the session's, or
 * the one that ends the handle), a log's slots by the workers, each its
 * own; reading claims back works only on its arguments.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PART_MAGIC "RAILCPR1"
#define PART_HEAD (8 + 4 + 4 + 8 + 8 + 8)
/* A record past this is not one of ours: 8 bytes a chunk and a bit, for IO_PLAN_MAX_CHUNKS. */
#define PART_MAX (PART_HEAD + IO_NAME_MAX + IO_PLAN_MAX_CHUNKS / 8 + 1 + 8 * IO_PLAN_MAX_CHUNKS + 8)
#define LOG_MAGIC "RAILCPL1"
#define LOG_ALIGN 64
#define LOG_SLOT 16		   /* a chunk's CRC-64, and a check of it and the chunk's number */
#define LOG_SALT 0x6c616e646564ull /* an all-zero slot is never whole */
#define LOG_MAX                                                                                    \
	(LOG_ALIGN * ((PART_HEAD + IO_NAME_MAX + 8) / LOG_ALIGN + 1) +                             \
	 LOG_SLOT * IO_PLAN_MAX_CHUNKS)

static void put64(uint8_t **p, uint64_t v)
{
	v = htole64(v);
	memcpy(*p, &v, 8);
	*p += 8;
}

static void put32(uint8_t **p, uint32_t v)
{
	v = htole32(v);
	memcpy(*p, &v, 4);
	*p += 4;
}

static uint64_t get64(const uint8_t **p)
{
	uint64_t v;

	memcpy(&v, *p, 8);
	*p += 8;
	return le64toh(v);
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint32_t le32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint32_t get32(const uint8_t **p)
{
	uint32_t v;

	memcpy(&v, *p, 4);
	*p += 4;
	return le32toh(v);
}

static size_t record_len(size_t name_len, uint64_t n_chunks)
{
	return PART_HEAD + name_len + (size_t)(n_chunks / 8 + 1) + 8 * (size_t)n_chunks + 8;
}

/* Where the log's slots start: its head, the name and the head's CRC-64, aligned. */
static size_t log_head_len(size_t name_len)
{
	return (PART_HEAD + name_len + 8 + LOG_ALIGN - 1) / LOG_ALIGN * LOG_ALIGN;
}

static size_t log_len(size_t name_len, uint64_t n_chunks)
{
	return log_head_len(name_len) + LOG_SLOT * (size_t)n_chunks;
}

/* A slot's check: tells a written slot of chunk k from an empty or torn one. */
static uint64_t slot_check(uint64_t k, uint64_t hash)
{
	uint8_t b[16], *p = b;

	put64(&p, k);
	put64(&p, hash);
	return io_chunk_hash(b, sizeof(b)) ^ LOG_SALT;
}

/* What a record and a log both begin with: magic, what the file is, its name. */
static void head_put(uint8_t **p, const char *magic, const struct io__partial_what *w)
{
	size_t name_len = strlen(w->last);

	memcpy(*p, magic, 8);
	*p += 8;
	put32(p, w->chunk);
	put32(p, (uint32_t)name_len);
	put64(p, w->size);
	put64(p, (uint64_t)w->mtime_ns);
	put64(p, w->n_chunks);
	memcpy(*p, w->last, name_len);
	*p += name_len;
}

int io__partial_record_write(int pfd, const struct io__partial_what *w)
{
	size_t len = record_len(strlen(w->last), w->n_chunks);
	char tmp[IO_TMP_NAME_LEN], data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN],
		log[IO_TMP_NAME_LEN], esc[IO_ESC_MAX];
	uint8_t *buf = calloc(1, len), *p = buf, *map;
	uint64_t k;
	int fd, err = 0;

	io__path_escape(w->path, strlen(w->path), esc);
	if (!buf)
		return rcp_err(-ENOMEM, "out of memory for the record of \"%s\"", esc);
	head_put(&p, PART_MAGIC, w);
	map = p;
	p += w->n_chunks / 8 + 1;
	for (k = 0; k < w->n_chunks; k++) {
		bool landed = atomic_load(&w->bits[k / 64]) >> (k % 64) & 1;

		if (landed)
			map[k / 8] |= (uint8_t)(1u << (k % 8));
		put64(&p, landed ? w->hash[k] : 0);
	}
	put64(&p, io_chunk_hash(buf, len - 8));
	io__partial_names(w->last, data, rec, log);
	io__tmp_name(tmp);
	fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len || fsync(fd) < 0 ||
	    renameat(pfd, tmp, pfd, rec) < 0)
		err = rcp_err(-(errno ? errno : EIO), "cannot keep the record of \"%s\": %s", esc,
			      strerror(errno ? errno : EIO));
	if (fd >= 0)
		close(fd);
	if (err)
		unlinkat(pfd, tmp, 0);
	free(buf);
	return err;
}

int io__partial_log_open(int pfd, const struct io__partial_what *w, bool keep,
			 struct io__partial_log *log)
{
	size_t name_len = strlen(w->last), head = log_head_len(name_len),
	       len = log_len(name_len, w->n_chunks);
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], name[IO_TMP_NAME_LEN];
	uint8_t *want = calloc(1, head), *had = malloc(head), *p = want;
	struct stat st;
	void *map = MAP_FAILED;
	int fd, err = 0;

	*log = (struct io__partial_log){0};
	io__partial_names(w->last, data, rec, name);
	/* Ours alone before anything is truncated or mapped: no other user can truncate it. */
	fd = io__partial_open(pfd, name, O_RDWR | O_CREAT, w->path);
	if (!want || !had || fd < 0) {
		err = fd < 0 ? fd : -ENOMEM;
		goto out;
	}
	head_put(&p, LOG_MAGIC, w);
	put64(&p, io_chunk_hash(want, PART_HEAD + name_len));
	/* Its slots kept only if it is this file's. */
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (!keep || (uint64_t)st.st_size != len || pread(fd, had, head, 0) != (ssize_t)head ||
	    memcmp(had, want, head)) {
		if (ftruncate(fd, 0) < 0 || pwrite(fd, want, head, 0) != (ssize_t)head) {
			err = -errno;
			goto out;
		}
	}
	/*
	 * Its blocks reserved: a store into the mapping must never need one (a
	 * full disk would raise SIGBUS there). No reservation, no log.
	 */
	if (fallocate(fd, 0, 0, (off_t)len) < 0 ||
	    (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		err = -errno;
		goto out;
	}
	log->map = map;
	log->len = len;
	log->slots = (uint8_t *)map + head;
out:
	if (fd >= 0)
		close(fd); /* the mapping holds the file */
	if (err && fd >= 0)
		unlinkat(pfd, name, 0);
	free(want);
	free(had);
	return err;
}

void io__partial_log_put(const struct io__partial_log *log, uint64_t k, uint64_t hash)
{
	uint8_t *p = log->slots + LOG_SLOT * k;

	put64(&p, hash);
	put64(&p, slot_check(k, hash));
}

void io__partial_log_close(struct io__partial_log *log)
{
	if (log->map)
		munmap(log->map, log->len);
	*log = (struct io__partial_log){0};
}

/*
 * Read at most max bytes of name in pfd (the receiver's own: else it goes,
 * or with look is passed over, and counts as none) into a new buffer;
 * -errno without a sentence.
 */
static int slurp(int pfd, const char *name, const char *path, size_t max, bool look,
		 uint8_t **buf_out, size_t *len_out)
{
	int fd = look ? io__partial_look(pfd, name, O_RDONLY)
		      : io__partial_open(pfd, name, O_RDONLY, path);
	struct stat st;
	uint8_t *buf;
	ssize_t n;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > max ||
	    !(buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
		close(fd);
		return -EBADMSG;
	}
	n = pread(fd, buf, (size_t)st.st_size, 0);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return -EBADMSG;
	}
	*buf_out = buf;
	*len_out = (size_t)n;
	return 0;
}

/*
 * The fields a record's or a log's head holds, against e as cut by chunk
 * (len: the whole file's; buf holds at least PART_HEAD bytes): NULL, with
 * *name_end just past the name, or a reason.
 */
static const char *head_check(const uint8_t *buf, size_t len,
			      size_t (*len_of)(size_t name_len, uint64_t n_chunks),
			      const char *last, const struct io_entry *e, uint32_t chunk,
			      uint64_t n_chunks, const uint8_t **name_end)
{
	const uint8_t *p = buf + 8;
	size_t name_len;

	if (get32(&p) != chunk)
		return "it was written for another chunk size";
	name_len = get32(&p);
	if (len != len_of(name_len, n_chunks))
		return "its length does not match the file's chunks";
	if (get64(&p) != e->size || (int64_t)get64(&p) != e->mtime_ns)
		return "the source has changed since (size or modification time)";
	if (get64(&p) != n_chunks)
		return "it counts other chunks";
	if (name_len != strlen(last) || memcmp(p, last, name_len))
		return "it belongs to another file";
	*name_end = p + name_len;
	return NULL;
}

/* Claim chunk k for p, as having arrived with hash (to be read back). */
static void claim(struct io_partial *p, uint64_t k, uint64_t hash)
{
	p->bits[k / 64] |= 1ull << (k % 64);
	p->hash[k] = hash;
}

/* The record's claims into p, if it is whole and describes e as cut by chunk: else a reason. */
static const char *record_claims(const uint8_t *buf, size_t len, const char *last,
				 const struct io_entry *e, uint32_t chunk, struct io_partial *p)
{
	const uint8_t *map, *hashes;
	const char *why;
	uint64_t k;

	if (len < PART_HEAD + 8 || memcmp(buf, PART_MAGIC, 8))
		return "it is not a railcp record";
	if (io_chunk_hash(buf, len - 8) != le64_at(buf + len - 8))
		return "it is damaged";
	why = head_check(buf, len, record_len, last, e, chunk, p->n_chunks, &map);
	if (why)
		return why;
	hashes = map + p->n_chunks / 8 + 1;
	for (k = 0; k < p->n_chunks; k++)
		if (map[k / 8] >> (k % 8) & 1)
			claim(p, k, le64_at(hashes + 8 * k));
	return NULL;
}

/* The log's claims into p (its whole slots), if its head is whole and describes e: else a reason.
 */
static const char *log_claims(const uint8_t *buf, size_t len, const char *last,
			      const struct io_entry *e, uint32_t chunk, struct io_partial *p)
{
	size_t name_len = len >= PART_HEAD ? le32_at(buf + 12) : 0;
	const uint8_t *end, *slots;
	const char *why;
	uint64_t k;

	if (len < PART_HEAD + 8 || memcmp(buf, LOG_MAGIC, 8))
		return "it is not a railcp log";
	if (name_len > len - PART_HEAD - 8 ||
	    io_chunk_hash(buf, PART_HEAD + name_len) != le64_at(buf + PART_HEAD + name_len))
		return "it is damaged";
	why = head_check(buf, len, log_len, last, e, chunk, p->n_chunks, &end);
	if (why)
		return why;
	slots = buf + log_head_len(name_len);
	for (k = 0; k < p->n_chunks; k++) {
		uint64_t hash = le64_at(slots + LOG_SLOT * k);

		if (le64_at(slots + LOG_SLOT * k + 8) == slot_check(k, hash))
			claim(p, k, hash);
	}
	return NULL;
}

/*
 * The claims of the file name in pfd (a record or a log, as claims_of
 * reads it) into p: NULL (none there counts as none), or a reason.
 */
static const char *claims_from(int pfd, const char *name, size_t max,
			       const char *(*claims_of)(const uint8_t *buf, size_t len,
							const char *last, const struct io_entry *e,
							uint32_t chunk, struct io_partial *p),
			       const char *last, const struct io_entry *e, uint32_t chunk,
			       struct io_partial *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	const char *why;
	int r = slurp(pfd, name, e->path, max, p->look, &buf, &len);

	if (r == -ENOENT)
		return NULL;
	why = r ? "it cannot be read" : claims_of(buf, len, last, e, chunk, p);
	free(buf);
	return why;
}

const char *io__partial_record_claims(int pfd, const char *name, const char *last,
				      const struct io_entry *e, uint32_t chunk,
				      struct io_partial *p)
{
	return claims_from(pfd, name, PART_MAX, record_claims, last, e, chunk, p);
}

const char *io__partial_log_claims(int pfd, const char *name, const char *last,
				   const struct io_entry *e, uint32_t chunk, struct io_partial *p)
{
	return claims_from(pfd, name, LOG_MAX, log_claims, last, e, chunk, p);
}
