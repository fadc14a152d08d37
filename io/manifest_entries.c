/*
 * manifest_entries.c - a manifest as a list of entries: one appended at a
 * time (the walk of manifest.c, the decode of codec.c), one freed, the
 * whole freed, and a new manifest of the entries a caller keeps, each
 * copied deeply (io_manifest_pick: a share of one walk for another
 * session, as railcp-mpi hands them out).
 *
 * The array doubles as it grows, so entries move: a pointer io__manifest_add
 * gave is good until the next append.
 *
 * Threading: a manifest is built by one thread; io_manifest_pick only reads
 * the one it is given, which may be shared.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void io__entry_fini(struct io_entry *e)
{
	free(e->path);
	free(e->src);
	free(e->link);
	free(e->ext);
}

void io_manifest_destroy(struct io_manifest *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		io__entry_fini(&m->entry[i]);
	free(m->entry);
	free(m);
}

int io__manifest_add(struct io_manifest *m, struct io_entry **e_out)
{
	struct io_entry *grown;
	size_t cap;

	if (m->n == m->cap) {
		cap = m->cap ? m->cap * 2 : 64;
		grown = realloc(m->entry, cap * sizeof(*grown));
		if (!grown)
			return rcp_err(-ENOMEM, "out of memory for a manifest of %zu entries",
				       m->n + 1);
		m->entry = grown;
		m->cap = cap;
	}
	memset(&m->entry[m->n], 0, sizeof(m->entry[0]));
	*e_out = &m->entry[m->n++];
	return 0;
}

/* A deep copy of e into the new entry d (zeroed); d keeps what was copied on failure. */
static int entry_copy(struct io_entry *d, const struct io_entry *e)
{
	*d = *e;
	d->path = d->src = d->link = NULL;
	d->ext = NULL;
	d->path = strdup(e->path);
	d->src = e->src ? strdup(e->src) : NULL;
	d->link = e->link ? strdup(e->link) : NULL;
	if (e->n_ext) {
		d->ext = malloc(e->n_ext * sizeof(*d->ext));
		if (d->ext)
			memcpy(d->ext, e->ext, e->n_ext * sizeof(*d->ext));
	}
	if (!d->path || (e->src && !d->src) || (e->link && !d->link) || (e->n_ext && !d->ext))
		return rcp_err(-ENOMEM, "out of memory copying a manifest");
	return 0;
}

/* Entry e of another manifest copied onto the end of p. */
static int pick_one(struct io_manifest *p, const struct io_entry *e)
{
	struct io_entry *d;
	int err = io__manifest_add(p, &d);

	if (!err)
		err = entry_copy(d, e);
	if (!err && d->type == IO_FILE) {
		p->data_bytes += d->data_bytes;
		p->n_files++;
	}
	return err;
}

int io_manifest_pick(const struct io_manifest *m, const bool *keep, struct io_manifest **m_out)
{
	struct io_manifest *p = calloc(1, sizeof(*p));
	size_t i;
	int err = p ? 0 : rcp_err(-ENOMEM, "out of memory for a manifest");

	for (i = 0; i < m->n && !err; i++)
		if (!keep || keep[i])
			err = pick_one(p, &m->entry[i]);
	if (err) {
		io_manifest_destroy(p);
		return err;
	}
	*m_out = p;
	return 0;
}

int io_manifest_pick_at(const struct io_manifest *m, const size_t *at, size_t n,
			struct io_manifest **m_out)
{
	struct io_manifest *p = calloc(1, sizeof(*p));
	size_t k;
	int err = p ? 0 : rcp_err(-ENOMEM, "out of memory for a manifest");

	for (k = 0; k < n && !err; k++)
		err = pick_one(p, &m->entry[at[k]]);
	if (err) {
		io_manifest_destroy(p);
		return err;
	}
	*m_out = p;
	return 0;
}
