/*
 * codec.c - the manifest on the wire, and the checks that make a manifest
 * from a stranger safe to act on.
 *
 * Format, version 1, all integers little-endian:
 *   header  "RCPM"  u16 version  u16 flags (0)  u64 entry count
 *   entry   u8 type  u8 flags  u16 path length  u32 mode
 *           i64 mtime (ns)  u64 size  path bytes
 *           symlink: u16 target length (= size), target bytes
 *           file:    u32 extent count, then per extent u64 offset, u64 length
 * An entry's flags: bit 0 (files only), the extents are ranges of a file
 * received in ranges (io_entry's range, io_wfile_range); the other bits 0,
 * so a receiver that knows no ranges refuses such an entry.
 * No count is trusted before it is compared with the bytes that remain, so
 * a hostile count cannot make the decoder allocate more than a small
 * multiple of the input. Every rule a receiver relies on is checked here,
 * once: names (io__path_problem), types and modes, extents sorted, disjoint,
 * non-empty and inside the size, each parent a directory listed earlier,
 * no duplicate path, totals that fit in 64 bits.
 *
 * Cost: a peer's list costs at most IO_MANIFEST_MAX_ENTRIES entries and
 * IO_MANIFEST_MAX_MEMORY of memory (io.h), charged before each allocation
 * (struct rd's memory), so a refusal comes before the memory is taken. The
 * duplicate check hashes names with SipHash under a key the peer does not
 * know (hash.c), so no choice of names makes its probing long.
 *
 * Threading: thread-safe (the only shared state is hash.c's key, drawn once).
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "RCPM"
#define VERSION 1
#define HDR_LEN 16
#define ENTRY_MIN 24 /* the fixed fields of an entry */
#define EXT_LEN 16
#define ENTRY_RANGE 1u /* an entry's flags: io_entry's range */

/* ---- encoding ---- */

static uint8_t *put(uint8_t *p, uint64_t v, unsigned bytes)
{
	unsigned i;

	for (i = 0; i < bytes; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

size_t io_manifest_entry_len(const struct io_entry *e)
{
	size_t n = 24 + strlen(e->path);

	if (e->type == IO_SYMLINK)
		n += 2 + strlen(e->link);
	if (e->type == IO_FILE)
		n += 4 + (size_t)e->n_ext * EXT_LEN;
	return n;
}

static uint8_t *entry_put(uint8_t *p, const struct io_entry *e)
{
	size_t plen = strlen(e->path), llen;
	uint32_t i;

	p = put(p, e->type, 1);
	p = put(p, e->range ? ENTRY_RANGE : 0, 1);
	p = put(p, plen, 2);
	p = put(p, e->mode, 4);
	p = put(p, (uint64_t)e->mtime_ns, 8);
	p = put(p, e->size, 8);
	memcpy(p, e->path, plen);
	p += plen;
	if (e->type == IO_SYMLINK) {
		llen = strlen(e->link);
		p = put(p, llen, 2);
		memcpy(p, e->link, llen);
		p += llen;
	}
	if (e->type == IO_FILE) {
		p = put(p, e->n_ext, 4);
		for (i = 0; i < e->n_ext; i++) {
			p = put(p, e->ext[i].off, 8);
			p = put(p, e->ext[i].len, 8);
		}
	}
	return p;
}

int io_manifest_encode(const struct io_manifest *m, void **buf_out, size_t *len_out)
{
	size_t len = HDR_LEN, i;
	uint8_t *buf, *p;

	for (i = 0; i < m->n; i++)
		len += io_manifest_entry_len(&m->entry[i]);
	buf = malloc(len);
	if (!buf)
		return rcp_err(-ENOMEM, "out of memory encoding a manifest of %zu bytes", len);
	memcpy(buf, MAGIC, 4);
	p = put(buf + 4, VERSION, 2);
	p = put(p, 0, 2);
	p = put(p, m->n, 8);
	for (i = 0; i < m->n; i++)
		p = entry_put(p, &m->entry[i]);
	*buf_out = buf;
	*len_out = len;
	return 0;
}

/* ---- decoding ---- */

struct rd {
	const uint8_t *p;
	size_t left;
	size_t index;	     /* the entry being read, for sentences */
	uint64_t memory;     /* counted so far, see alloc_cost */
	uint64_t max_memory; /* IO_MANIFEST_MAX_MEMORY, or lower for a test */
};

/* What glibc's malloc takes for n bytes on 64-bit: n and an 8-byte header, by 16, at least 32. */
static uint64_t alloc_cost(uint64_t n)
{
	uint64_t c = (n + 8 + 15) & ~(uint64_t)15;

	return c < 32 ? 32 : c;
}

/* A slot of the duplicate check's table (see check_entry). */
struct slot {
	uint32_t entry; /* index + 1; 0: empty */
	uint32_t tag;	/* the hash's high half: most mismatches compare no bytes */
};

/* The table's size for n entries: a power of two, at least 2n slots. */
static size_t table_slots(size_t n)
{
	size_t size = 16;

	while (size < 2 * n)
		size *= 2;
	return size;
}

/*
 * The sizes the decoder charges (charge), shared with the estimates below
 * so that they cannot drift apart: a name or target of len bytes, an
 * extent array of n extents.
 */
static uint64_t str_bytes(uint64_t len)
{
	return len + 1;
}

static uint64_t ext_bytes(uint64_t n)
{
	return (n ? n : 1) * sizeof(struct io_extent);
}

uint64_t io_manifest_decoded_cost(const struct io_entry *e)
{
	uint64_t c = alloc_cost(str_bytes(strlen(e->path)));

	if (e->type == IO_SYMLINK)
		c += alloc_cost(str_bytes(strlen(e->link)));
	if (e->type == IO_FILE)
		c += alloc_cost(ext_bytes(e->n_ext));
	return c;
}

uint64_t io_manifest_decoded_base(size_t n)
{
	return alloc_cost(sizeof(struct io_manifest)) +
	       alloc_cost((uint64_t)n * sizeof(struct io_entry)) +
	       alloc_cost((uint64_t)table_slots(n) * sizeof(struct slot));
}

static size_t limit_entries(const struct io__decode_ctl *ctl)
{
	if (ctl && ctl->large)
		return IO_WALK_LARGE_MAX_ENTRIES; /* below 2^32: struct slot's index */
	if (ctl && ctl->max_entries && ctl->max_entries < IO_MANIFEST_MAX_ENTRIES)
		return ctl->max_entries;
	return IO_MANIFEST_MAX_ENTRIES;
}

static int too_many(uint64_t n, size_t max)
{
	return rcp_err(-EFBIG,
		       "the file list has %llu entries, more than the %zu one copy may have: "
		       "copy the tree in parts",
		       (unsigned long long)n, max);
}

/* Count cost bytes of allocations against the limit, before they are made. */
static int charge_cost(struct rd *r, uint64_t cost)
{
	r->memory += cost;
	if (r->memory <= r->max_memory)
		return 0;
	return rcp_err(-EFBIG,
		       "decoding the file list would take more than the %llu MiB of memory one "
		       "copy may use (at entry %zu): copy the tree in parts",
		       (unsigned long long)(r->max_memory >> 20), r->index);
}

/* Count an allocation of n bytes against the limit, before it is made. */
static int charge(struct rd *r, uint64_t n)
{
	return charge_cost(r, alloc_cost(n));
}

static int bad(const struct rd *r, const char *why)
{
	return rcp_err(-EBADMSG, "the manifest is malformed at entry %zu: %s", r->index, why);
}

static int get(struct rd *r, unsigned bytes, uint64_t *v_out)
{
	uint64_t v = 0;
	unsigned i;

	if (r->left < bytes)
		return bad(r, "it is truncated");
	for (i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	r->left -= bytes;
	*v_out = v;
	return 0;
}

/* len bytes as a new NUL-terminated string (the caller checked len against what is left). */
static int get_str(struct rd *r, size_t len, char **s_out)
{
	char *s;
	int err;

	if (r->left < len)
		return bad(r, "it is truncated");
	err = charge(r, str_bytes(len));
	if (err)
		return err;
	s = malloc(len + 1);
	if (!s)
		return rcp_err(-ENOMEM, "out of memory decoding a manifest");
	memcpy(s, r->p, len);
	s[len] = '\0';
	r->p += len;
	r->left -= len;
	*s_out = s;
	return 0;
}

static int bad_name(const struct rd *r, const char *p, size_t len, const char *why)
{
	char esc[IO_ESC_MAX];

	return rcp_err(-EBADMSG, "the manifest is malformed at entry %zu: the name \"%s\" %s",
		       r->index, io__path_escape(p, len, esc), why);
}

static int get_path(struct rd *r, size_t len, char **path_out)
{
	const char *why;

	if (r->left < len)
		return bad(r, "it is truncated");
	why = io__path_problem((const char *)r->p, len);
	if (why)
		return bad_name(r, (const char *)r->p, len, why);
	return get_str(r, len, path_out);
}

static int get_link(struct rd *r, struct io_entry *e)
{
	uint64_t len = 0;
	int err;

	err = get(r, 2, &len);
	if (err)
		return err;
	if (len == 0 || len >= IO_PATH_MAX || len != e->size)
		return bad(r, "the symlink target length is wrong");
	if (r->left < len)
		return bad(r, "it is truncated");
	if (memchr(r->p, '\0', len))
		return bad(r, "the symlink target contains a NUL byte");
	return get_str(r, len, &e->link);
}

static int get_extents(struct rd *r, struct io_entry *e)
{
	uint64_t n = 0, i, off = 0, len = 0, end = 0;
	int err;

	err = get(r, 4, &n);
	if (err)
		return err;
	if (n > r->left / EXT_LEN)
		return bad(r, "the extent count exceeds the bytes that follow");
	err = charge(r, ext_bytes(n));
	if (err)
		return err;
	e->ext = malloc((size_t)ext_bytes(n));
	if (!e->ext)
		return rcp_err(-ENOMEM, "out of memory decoding a manifest");
	for (i = 0; i < n; i++) {
		get(r, 8, &off); /* cannot fail: n was checked against the bytes left */
		get(r, 8, &len);
		if (len == 0 || off < end || off > e->size || len > e->size - off)
			return bad(r,
				   "an extent is empty, unsorted, overlapping or outside the file");
		e->ext[i] = (struct io_extent){.off = off, .len = len};
		e->n_ext++;
		e->data_bytes += len;
		end = off + len;
	}
	return 0;
}

static int get_fixed(struct rd *r, struct io_entry *e, uint64_t *path_len_out)
{
	uint64_t type = 0, rsv = 0, plen = 0, mode = 0, mtime = 0;
	int err;

	err = get(r, 1, &type);
	err = err ? err : get(r, 1, &rsv);
	err = err ? err : get(r, 2, &plen);
	err = err ? err : get(r, 4, &mode);
	err = err ? err : get(r, 8, &mtime);
	err = err ? err : get(r, 8, &e->size);
	if (err)
		return err;
	if (type != IO_FILE && type != IO_DIR && type != IO_SYMLINK)
		return bad(r, "the type is unknown");
	if ((rsv & ~(uint64_t)ENTRY_RANGE) || (mode & ~07777u))
		return bad(r, "reserved bits are set");
	if (rsv && type != IO_FILE)
		return bad(r, "only a file is received in ranges");
	if (e->size > INT64_MAX || (type == IO_DIR && e->size != 0))
		return bad(r, "the size is impossible");
	e->type = (enum io_type)type;
	e->range = rsv & ENTRY_RANGE;
	e->mode = (uint32_t)mode;
	e->mtime_ns = (int64_t)mtime;
	*path_len_out = plen;
	return 0;
}

static int get_entry(struct rd *r, struct io_manifest *m)
{
	struct io_entry *e;
	uint64_t plen = 0;
	int err;

	err = io__manifest_add(m, &e);
	if (err)
		return err;
	err = get_fixed(r, e, &plen);
	err = err ? err : get_path(r, (size_t)plen, &e->path);
	if (!err && e->type == IO_SYMLINK)
		err = get_link(r, e);
	if (!err && e->type == IO_FILE)
		err = get_extents(r, e);
	if (err)
		return err;
	if (e->type == IO_FILE) {
		if (m->data_bytes + e->data_bytes < m->data_bytes)
			return bad(r, "the total data exceeds 2^64 bytes");
		m->data_bytes += e->data_bytes;
		m->n_files++;
	}
	return 0;
}

static int get_header(struct rd *r, uint64_t *n_out)
{
	uint64_t version = 0, flags = 0;

	if (r->left < HDR_LEN || memcmp(r->p, MAGIC, 4))
		return rcp_err(-EBADMSG, "the peer sent something that is not a railcp manifest");
	r->p += 4;
	r->left -= 4;
	get(r, 2, &version);
	get(r, 2, &flags);
	get(r, 8, n_out);
	if (version != VERSION)
		return rcp_err(-EPROTONOSUPPORT,
			       "the peer sent a manifest of version %u; this railcp "
			       "reads version %d",
			       (unsigned)version, VERSION);
	if (flags)
		return rcp_err(-EBADMSG, "the manifest has unknown flags 0x%x", (unsigned)flags);
	if (*n_out > r->left / ENTRY_MIN)
		return rcp_err(-EBADMSG, "the manifest claims %llu entries in %zu bytes",
			       (unsigned long long)*n_out, r->left);
	return 0;
}

/*
 * The manifest and its entry array for n entries (the header's count, already
 * checked against the bytes and the limit), charged with the check's table
 * up front: it is allocated last, when the rest is (io_manifest_decoded_base).
 */
static int manifest_alloc(struct rd *r, size_t n, struct io_manifest **m_out)
{
	struct io_manifest *m;
	int err;

	err = charge_cost(r, io_manifest_decoded_base(n));
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return rcp_err(-ENOMEM, "out of memory decoding a manifest");
	/* all n at once: io__manifest_add never grows it, so nothing is held twice */
	if (n && !(m->entry = malloc(n * sizeof(m->entry[0])))) {
		free(m);
		return rcp_err(-ENOMEM, "out of memory decoding a manifest of %zu entries", n);
	}
	m->cap = n;
	*m_out = m;
	return 0;
}

int io__manifest_decode(const void *buf, size_t len, struct io__decode_ctl *ctl,
			struct io_manifest **m_out)
{
	struct rd r = {.p = buf, .left = len, .max_memory = IO_MANIFEST_MAX_MEMORY};
	struct io_manifest *m = NULL;
	uint64_t n = 0;
	int err;

	if (ctl && ctl->max_memory && ctl->max_memory < r.max_memory)
		r.max_memory = ctl->max_memory;
	err = get_header(&r, &n);
	if (!err && n > limit_entries(ctl))
		err = too_many(n, limit_entries(ctl));
	err = err ? err : manifest_alloc(&r, (size_t)n, &m);
	if (err)
		return err;
	for (r.index = 0; r.index < n && !err; r.index++)
		err = get_entry(&r, m);
	if (!err && r.left)
		err = rcp_err(-EBADMSG, "the manifest has %zu bytes after its last entry", r.left);
	err = err ? err : io__manifest_check(m, ctl);
	if (err) {
		io_manifest_destroy(m);
		return err;
	}
	if (ctl)
		ctl->memory = r.memory;
	*m_out = m;
	return 0;
}

int io_manifest_decode(const void *buf, size_t len, struct io_manifest **m_out)
{
	return io__manifest_decode(buf, len, NULL, m_out);
}

/* ---- structure: parents first, no duplicates ---- */

/*
 * The names go into an open-addressing table with linear probing, at most
 * half full, placed by SipHash under the process's key. A peer who cannot
 * predict where a name lands cannot build clusters: a look-up examines
 * about 1.5 to 2.5 slots on average. Still, no look-up examines more than
 * IO__PROBE_MAX slots. A run that long needs some window of L >= 512 slots
 * to receive L names where it expects at most L/2; with a random key the
 * Chernoff bound puts that below (e/4)^(L/2) < 10^-42 per window, below
 * 10^-35 for the largest table. Meeting one means the key leaked or the
 * hash is broken, and the manifest is refused rather than checked in
 * quadratic time.
 */
#define IO__PROBE_MAX 512
_Static_assert(IO__PROBE_MAX == 512, "too_long names the limit");

struct table {
	const struct io_manifest *m;
	const uint8_t *key;
	struct slot *slot;
	size_t mask;
	uint64_t lookups, probes, longest; /* for struct io__decode_ctl */
};

/*
 * The slot of p[0..n), whose hash is h: where it is, or the empty one where
 * it would go; -EOVERFLOW (no sentence: the caller names the entry) rather
 * than examine more than IO__PROBE_MAX slots.
 */
static int slot_of(struct table *t, uint64_t h, const char *p, size_t n, size_t *s_out)
{
	uint32_t tag = (uint32_t)(h >> 32);
	size_t s = (size_t)h & t->mask, probes = 1;
	const struct slot *x;
	const char *q;

	for (;; s = (s + 1) & t->mask, probes++) {
		x = &t->slot[s];
		if (!x->entry)
			break;
		q = t->m->entry[x->entry - 1].path;
		if (x->tag == tag && strlen(q) == n && !memcmp(q, p, n))
			break;
		if (probes == IO__PROBE_MAX)
			return -EOVERFLOW;
	}
	t->lookups++;
	t->probes += probes;
	if (probes > t->longest)
		t->longest = probes;
	*s_out = s;
	return 0;
}

static int structure_problem(const struct io_manifest *m, size_t i, int err, const char *why)
{
	char esc[IO_ESC_MAX];
	const char *p = m->entry[i].path;

	return rcp_err(err, "manifest entry %zu \"%s\": %s", i, io__path_escape(p, strlen(p), esc),
		       why);
}

static const char too_long[] = "more than 512 names share its place in the duplicate check, "
			       "which a random key makes all but impossible; the file list "
			       "is refused";

/* Entry i: its parent is a directory already in the table, and it is not; then it is. */
static int check_entry(struct table *t, size_t i)
{
	const struct io_manifest *m = t->m;
	const char *p = m->entry[i].path, *slash = strrchr(p, '/');
	size_t n = strlen(p), s = 0;
	uint64_t h;
	int err;

	if (slash) {
		h = io__siphash24(t->key, p, (size_t)(slash - p));
		err = slot_of(t, h, p, (size_t)(slash - p), &s);
		if (err)
			return structure_problem(m, i, err, too_long);
		if (!t->slot[s].entry || m->entry[t->slot[s].entry - 1].type != IO_DIR)
			return structure_problem(m, i, -EBADMSG,
						 "its directory is not listed before it");
	}
	h = io__siphash24(t->key, p, n);
	err = slot_of(t, h, p, n, &s);
	if (err)
		return structure_problem(m, i, err, too_long);
	if (t->slot[s].entry)
		return structure_problem(m, i, -EBADMSG, "the same path appears twice");
	t->slot[s] = (struct slot){.entry = (uint32_t)(i + 1), .tag = (uint32_t)(h >> 32)};
	return 0;
}

int io__manifest_check(const struct io_manifest *m, struct io__decode_ctl *ctl)
{
	struct table t = {.m = m};
	size_t i;
	int err;

	/* also bounds every entry index below 2^32, for struct slot */
	if (m->n > limit_entries(ctl))
		return too_many(m->n, limit_entries(ctl));
	err = io__hash_key(&t.key);
	if (err)
		return err;
	t.mask = table_slots(m->n) - 1;
	t.slot = calloc(t.mask + 1, sizeof(*t.slot));
	if (!t.slot)
		return rcp_err(-ENOMEM, "out of memory checking a manifest of %zu entries", m->n);
	for (i = 0; i < m->n && !err; i++)
		err = check_entry(&t, i);
	free(t.slot);
	if (!err && ctl) {
		ctl->lookups = t.lookups;
		ctl->probes = t.probes;
		ctl->longest = t.longest;
	}
	return err;
}
