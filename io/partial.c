/*
 * partial.c - what a receiver keeps of an interrupted copy (--partial), and
 * what it trusts of it the next time.
 *
 * A file of several chunks received with IO_ROOT_PARTIAL is written under a
 * name of its own instead of a random one: ".railcp-tmp-p" and the CRC-64
 * of its final name in hex, beside that name; its record is ".railcp-tmp-r"
 * and the same hex. Both start with IO_TMP_PREFIX, so no peer can name
 * them and no walk lists them. A copy holds an exclusive flock on the data
 * file from the check of what it holds (or the open) to the end: a second
 * copy into the same directory that finds it locked resumes nothing of it
 * and takes a random temporary instead (wfile.c), so two copies never
 * write one partial file, and what was checked is what is written.
 *
 * When a copy fails, each unfinished file's handle writes its record
 * (io_wfile_keep): which of the file's chunks landed, each with the CRC-64
 * it arrived with, and what the file was (final name, size, mtime, chunk
 * size), the whole closed by a CRC-64 of its own. It is written under a
 * random temporary name, synced and renamed over the record's name, so a
 * crash at any instant leaves the old record or the new one, never half of
 * one. The data file is kept as it is.
 *
 * The next copy with --partial (io_root_partial) takes a record only if it
 * is whole (magic, length, CRC), names the same final name, and describes
 * the same source: size, mtime and chunk size equal to the manifest's. A
 * record that fails is ignored with a notice: the file is sent whole.
 * Then each chunk the record claims is read back from the data file and
 * hashed again: only those whose CRC-64 matches are held; a byte changed
 * on disk since costs that chunk, which travels again.
 *
 * Record layout, little-endian: "RAILCPR1", chunk size (u32), name length
 * (u32), size (u64), mtime in ns (i64), chunks (u64), the name, a bit per
 * chunk (chunks / 8 + 1 bytes), a CRC-64 per chunk (u64, 0 where none
 * landed), and the CRC-64 of all that.
 *
 * Threading: io_root_partial and io_partial_* are thread-safe on distinct
 * entries; a record is written by the thread that ends its handle.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PART_MAGIC "RAILCPR1"
#define PART_HEAD (8 + 4 + 4 + 8 + 8 + 8)
/* A record past this is not one of ours: 8 bytes a chunk and a bit, for IO_PLAN_MAX_CHUNKS. */
#define PART_MAX (PART_HEAD + IO_NAME_MAX + IO_PLAN_MAX_CHUNKS / 8 + 1 + 8 * IO_PLAN_MAX_CHUNKS + 8)

struct io_partial {
	uint64_t n_chunks;
	uint64_t *bits; /* chunk k held: bit k % 64 of word k / 64 */
	uint64_t *hash; /* chunk k's CRC-64, where held */
	uint64_t held, held_bytes;
	int fd; /* the data file, flock-ed from the check of its chunks to the end */
};

void io__partial_names(const char *last, char data[IO_TMP_NAME_LEN], char rec[IO_TMP_NAME_LEN])
{
	unsigned long long h = (unsigned long long)io_chunk_hash(last, strlen(last));

	snprintf(data, IO_TMP_NAME_LEN, "%sp%016llx", IO_TMP_PREFIX, h);
	snprintf(rec, IO_TMP_NAME_LEN, "%sr%016llx", IO_TMP_PREFIX, h);
}

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

int io__partial_record_write(int pfd, const struct io__partial_what *w)
{
	size_t name_len = strlen(w->last), len = record_len(name_len, w->n_chunks);
	char tmp[IO_TMP_NAME_LEN], data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], esc[IO_ESC_MAX];
	uint8_t *buf = calloc(1, len), *p = buf, *map;
	uint64_t k;
	int fd, err = 0;

	io__path_escape(w->path, strlen(w->path), esc);
	if (!buf)
		return rcp_err(-ENOMEM, "out of memory for the record of \"%s\"", esc);
	memcpy(p, PART_MAGIC, 8);
	p += 8;
	put32(&p, w->chunk);
	put32(&p, (uint32_t)name_len);
	put64(&p, w->size);
	put64(&p, (uint64_t)w->mtime_ns);
	put64(&p, w->n_chunks);
	memcpy(p, w->last, name_len);
	p += name_len;
	map = p;
	p += w->n_chunks / 8 + 1;
	for (k = 0; k < w->n_chunks; k++) {
		bool landed = atomic_load(&w->bits[k / 64]) >> (k % 64) & 1;

		if (landed)
			map[k / 8] |= (uint8_t)(1u << (k % 8));
		put64(&p, landed ? w->hash[k] : 0);
	}
	put64(&p, io_chunk_hash(buf, len - 8));
	io__partial_names(w->last, data, rec);
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

/* Read at most max bytes of name in pfd into a new buffer; -errno without a sentence. */
static int slurp(int pfd, const char *name, size_t max, uint8_t **buf_out, size_t *len_out)
{
	int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	uint8_t *buf;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max ||
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

/* The record's claims, if it is whole and describes e as cut by chunk: else a reason. */
static const char *record_check(const uint8_t *buf, size_t len, const char *last,
				const struct io_entry *e, uint32_t chunk, uint64_t n_chunks,
				const uint8_t **map_out, const uint8_t **hash_out)
{
	const uint8_t *p = buf + 8;
	size_t name_len;

	if (len < PART_HEAD + 8 || memcmp(buf, PART_MAGIC, 8))
		return "it is not a railcp record";
	if (io_chunk_hash(buf, len - 8) != le64_at(buf + len - 8))
		return "it is damaged";
	if (get32(&p) != chunk)
		return "it was written for another chunk size";
	name_len = get32(&p);
	if (len != record_len(name_len, n_chunks))
		return "its length does not match the file's chunks";
	if (get64(&p) != e->size || (int64_t)get64(&p) != e->mtime_ns)
		return "the source has changed since (size or modification time)";
	if (get64(&p) != n_chunks)
		return "it counts other chunks";
	if (name_len != strlen(last) || memcmp(p, last, name_len))
		return "it belongs to another file";
	p += name_len;
	*map_out = p;
	*hash_out = p + n_chunks / 8 + 1;
	return NULL;
}

/* Read back chunk k of e from the data file and hold it if its CRC-64 is still want. */
static bool chunk_still(int fd, const struct io_entry *e, uint32_t chunk, uint64_t k, uint64_t want,
			uint8_t *buf, uint32_t *len_out)
{
	uint64_t first = 0, n;
	uint32_t x;

	for (x = 0; x < e->n_ext; x++, first += n) {
		uint64_t in, len;

		n = io__chunks_of(e->ext[x].len, chunk);
		if (k >= first + n)
			continue;
		in = (k - first) * chunk;
		len = e->ext[x].len - in < chunk ? e->ext[x].len - in : chunk;
		*len_out = (uint32_t)len;
		return pread(fd, buf, len, (off_t)(e->ext[x].off + in)) == (ssize_t)len &&
		       io_chunk_hash(buf, len) == want;
	}
	return false;
}

/* What the data file still holds of the record's claims, into p. */
/*
 * What the data file still holds of the record's claims, into p, the file
 * locked first (into p->fd): what is checked is what this copy then writes,
 * and no other copy touches it meanwhile. A reason when it cannot be.
 */
static const char *claims_verify(int pfd, const char *data, const struct io_entry *e,
				 uint32_t chunk, const uint8_t *map, const uint8_t *hashes,
				 struct io_partial *p)
{
	int fd = openat(pfd, data, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	uint8_t *buf = malloc(chunk);
	struct stat st;
	uint64_t k;
	uint32_t len;

	if (fd < 0 || !buf || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0) {
		bool busy = fd >= 0 && errno == EWOULDBLOCK;

		if (fd >= 0)
			close(fd);
		free(buf);
		return busy ? "another copy is writing its file" : "its data file is gone";
	}
	for (k = 0; k < p->n_chunks; k++) {
		uint64_t want = le64_at(hashes + 8 * k);

		if (!(map[k / 8] >> (k % 8) & 1) || !chunk_still(fd, e, chunk, k, want, buf, &len))
			continue;
		p->bits[k / 64] |= 1ull << (k % 64);
		p->hash[k] = want;
		p->held++;
		p->held_bytes += len;
	}
	p->fd = fd;
	free(buf);
	return NULL;
}

struct io_partial *io_root_partial(const struct io_root *root, const struct io_entry *e,
				   uint32_t chunk)
{
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], esc[IO_ESC_MAX];
	const uint8_t *map, *hashes;
	struct io_partial *p = NULL;
	uint64_t n_chunks = io__entry_chunks(e, chunk);
	const char *last, *why;
	uint8_t *buf = NULL;
	size_t len = 0;
	int pfd, r;

	if (e->type != IO_FILE || n_chunks < 2)
		return NULL; /* nothing a partial file could hold */
	if (io__parent_open(root->fd, e->path, &pfd, &last) != 0) {
		rcp_err_clear(); /* the copy itself says so */
		return NULL;
	}
	io__partial_names(last, data, rec);
	r = slurp(pfd, rec, PART_MAX, &buf, &len);
	if (r == -ENOENT)
		goto out;
	why = r ? "it cannot be read"
		: record_check(buf, len, last, e, chunk, n_chunks, &map, &hashes);
	if (!why && (p = calloc(1, sizeof(*p))) != NULL)
		p->fd = -1;
	else if (!why)
		why = "out of memory";
	if (!why && (!(p->bits = calloc((size_t)(n_chunks / 64 + 1), sizeof(*p->bits))) ||
		     !(p->hash = calloc((size_t)n_chunks, sizeof(*p->hash)))))
		why = "out of memory";
	if (!why) {
		p->n_chunks = n_chunks;
		why = claims_verify(pfd, data, e, chunk, map, hashes, p);
	}
	if (why) {
		rcp_log(RCP_LOG_NOTICE, "the partial record of \"%s\" is ignored: %s",
			io__path_escape(e->path, strlen(e->path), esc), why);
		io_partial_destroy(p);
		p = NULL;
	}
out:
	free(buf);
	close(pfd);
	if (p && p->held == 0) {
		io_partial_destroy(p);
		p = NULL;
	}
	return p;
}

void io_partial_destroy(struct io_partial *p)
{
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd); /* the lock goes with the last descriptor of the file */
	free(p->bits);
	free(p->hash);
	free(p);
}

bool io_partial_has(const struct io_partial *p, uint64_t k)
{
	return p && k < p->n_chunks && (p->bits[k / 64] >> (k % 64) & 1);
}

uint64_t io_partial_bytes(const struct io_partial *p)
{
	return p ? p->held_bytes : 0;
}

uint64_t io_partial_hash(const struct io_partial *p, uint64_t k)
{
	return io_partial_has(p, k) ? p->hash[k] : 0;
}

int io_partial_fd(const struct io_partial *p)
{
	return p ? p->fd : -1;
}
