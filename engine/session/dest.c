/*
 * dest.c - where a copy lands: the receiving side's root, by rsync's rule
 * (io_dest_decide), and its file side made ready before any chunk arrives.
 *
 * The naming is decided by io_dest_decide (a pure function of the
 * destination, the contents flag, whether the destination is a directory
 * and whether one file alone arrives); this file carries the decision
 * out beneath the parent root, so nothing is created outside it.
 *
 * Threading: the session's thread.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned eng__dest_flags(bool preserve, bool fsync, enum eng_direct direct, bool partial,
			 bool checksum, bool fallback)
{
	/*
	 * -c builds each file in its partial file, from its old self: --partial's
	 * way. A copy that may go on over tcp keeps what lands as --partial does,
	 * but leaves alone what an earlier --partial copy kept (fallback.c).
	 */
	bool spare = fallback && !partial && !checksum;

	return (preserve ? IO_ROOT_KEEP_META : 0) | (fsync ? IO_ROOT_FSYNC : 0) |
	       (direct == ENG_DIRECT_ALWAYS ? IO_ROOT_DIRECT : 0) |
	       (direct == ENG_DIRECT_AUTO ? IO_ROOT_DIRECT_AUTO : 0) |
	       (partial || checksum || fallback ? IO_ROOT_PARTIAL : 0) |
	       (checksum ? IO_ROOT_CHECKSUM : 0) | (spare ? IO_ROOT_SPARE : 0);
}

unsigned eng__direct_io_flags(enum eng_direct direct)
{
	return direct == ENG_DIRECT_ALWAYS ? IO_DIRECT
	       : direct == ENG_DIRECT_AUTO ? IO_DIRECT_AUTO
					   : 0;
}

static int dest_open(const struct io_root *parent, const char *dir, unsigned flags,
		     struct io_root **root_out)
{
	int err = parent ? io_root_open_beneath(parent, dir, root_out)
			 : io_root_open(dir, flags, root_out);

	if (!err)
		io_root_set_flags(*root_out, flags);
	return err;
}

/*
 * A missing DST is made, and the copy (a source, several, or contents)
 * lands in it. DST is no source's copy: it takes no source's metadata, so
 * it is made without -p's and --partial's bookkeeping (a --partial marker
 * would outlive the copy: only the manifest's directories get theirs
 * applied and removed).
 */
static int dest_make(const struct io_root *parent, const char *dir, const char *name,
		     unsigned flags, struct io_root **root_out)
{
	struct io_entry e = {.path = (char *)name, .type = IO_DIR, .mode = 0777};
	struct io_root *up;
	int err = dest_open(parent, dir, flags & ~(IO_ROOT_KEEP_META | IO_ROOT_PARTIAL), &up);

	if (err)
		return err;
	err = io_root_mkdir(up, &e);
	if (!err && (err = io_root_open_beneath(up, name, root_out)) == 0)
		io_root_set_flags(*root_out, flags);
	io_root_close(up);
	return err;
}

/* eng__dest_open's work; a missing DST made only if make, else *root_out NULL. */
static int dest_get(const struct io_root *parent, const char *dst, bool contents,
		    unsigned root_flags, bool make, struct io_manifest *m,
		    struct io_root **root_out)
{
	struct io_dest *d = malloc(sizeof(*d));
	char *path = malloc(IO_PATH_MAX);
	int err = d && path ? io_dest_path(dst, path)
			    : rcp_err(-ENOMEM, "out of memory opening "
					       "the destination");

	if (!err)
		err = io_dest_decide(dst, contents, dest_open(parent, path, root_flags, root_out),
				     io_manifest_one_file(m), d);
	if (!err && d->kind == IO_DEST_MKDIR && !make)
		*root_out = NULL;
	else if (!err && d->kind == IO_DEST_MKDIR)
		err = dest_make(parent, d->dir, d->name, root_flags, root_out);
	if (!err && d->kind == IO_DEST_RENAME && (err = io_manifest_rename_top(m, d->name)) == 0)
		err = dest_open(parent, d->dir, root_flags, root_out);
	free(path);
	free(d);
	return err;
}

int eng__dest_open(const struct io_root *parent, const char *dst, bool contents,
		   unsigned root_flags, struct io_manifest *m, struct io_root **root_out)
{
	return dest_get(parent, dst, contents, root_flags, true, m, root_out);
}

int eng__dest_find(const struct io_root *parent, const char *dst, bool contents,
		   unsigned root_flags, struct io_manifest *m, struct io_root **root_out)
{
	return dest_get(parent, dst, contents, root_flags, false, m, root_out);
}

int eng__dest_files(const struct io_root *parent, const char *dst, bool contents,
		    unsigned root_flags, uint64_t dir_job, struct io_manifest *m, uint32_t chunk,
		    uint8_t **holds_out, uint8_t **kept_out, struct eng_files **f_out)
{
	struct io_root *root;
	struct eng_files *f;
	uint8_t *holds = NULL, *kept = NULL;
	int err = eng__dest_open(parent, dst, contents, root_flags, m, &root);

	if (err) {
		io_manifest_destroy(m);
		return err;
	}
	if (dir_job)
		io_root_set_job(root, dir_job);
	if ((err = eng__files_create(ENG_RECEIVER, m, chunk, root, 0, &f)) != 0)
		return err;
	if (holds_out)
		err = eng__files_holds(f, &holds);
	if (!err && kept_out)
		err = eng__files_kept(f, &kept);
	if (err) {
		free(holds);
		free(kept);
		eng__files_destroy(f);
		return err;
	}
	if (holds_out)
		*holds_out = holds;
	if (kept_out)
		*kept_out = kept;
	*f_out = f;
	return 0;
}

/* The root a dry run compares with (NULL: nothing there yet), as eng__dest_open decides. */
static int dry_root(const struct io_root *parent, const char *dst, bool contents,
		    struct io_manifest *m, struct io_dest *d, struct io_root **root_out)
{
	char *path = malloc(IO_PATH_MAX);
	struct io_root *root = NULL;
	int err = path ? io_dest_path(dst, path) : rcp_err(-ENOMEM, "out of memory");

	if (!err)
		err = io_dest_decide(dst, contents, dest_open(parent, path, 0, &root),
				     io_manifest_one_file(m), d);
	free(path);
	if (err || d->kind == IO_DEST_INTO) {
		*root_out = root;
		return err;
	}
	io_root_close(root); /* opened as something that is not the destination */
	root = NULL;
	err = dest_open(parent, d->dir, 0, &root); /* where the copy makes or renames its top */
	if (!err && d->kind == IO_DEST_MKDIR) {
		io_root_close(root); /* a new directory: everything in it is new */
		root = NULL;
	}
	if (!err && d->kind == IO_DEST_RENAME)
		err = io_manifest_rename_top(m, d->name);
	*root_out = root;
	return err;
}

int eng__dest_dry(const struct io_root *parent, const char *dst, bool contents,
		  struct io_manifest *m, char **name_out, uint8_t **why_out,
		  struct io_root **root_out)
{
	struct io_dest *d = malloc(sizeof(*d));
	struct io_root *root = NULL;
	uint8_t *why = malloc(m->n ? m->n : 1);
	char *name = NULL;
	size_t i;
	int err = d && why ? dry_root(parent, dst, contents, m, d, &root)
			   : rcp_err(-ENOMEM, "out of memory");

	if (!err && d->kind == IO_DEST_RENAME && !(name = strdup(d->name)))
		err = rcp_err(-ENOMEM, "out of memory");
	for (i = 0; !err && i < m->n; i++)
		why[i] = (uint8_t)io_root_compare(root, &m->entry[i]);
	free(d);
	if (err || !root_out)
		io_root_close(root);
	if (err) {
		free(why);
		return err;
	}
	if (root_out)
		*root_out = root;
	*name_out = name;
	*why_out = why;
	return 0;
}
