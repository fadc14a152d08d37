/*
 * files.h - private to engine/: the file side of push and pull jobs.
 *
 * The sending side's source reads each planned chunk from its file (opened
 * on the file's first chunk, closed after its last) and sets the chunk's
 * crc32c. The receiving side's sink checks that a chunk names a regular
 * file of the manifest, writes it through io/ (which checks the crc and
 * that the chunk is one the plan has), and puts each file in place the
 * moment its last chunk is in. Both sides build the same plan from the same
 * manifest and chunk size, so a chunk travels as (file, offset, length).
 *
 * The manifest travels on the control connection after authentication, as
 * hex-encoded parts of at most ENG_MANIFEST_PART bytes in "manifest" frames.
 *
 * Threading: fill and consume run on worker threads, concurrently; the rest
 * runs on the session's thread before the workers start or after they end.
 */
#ifndef RAILCP_ENGINE_FILES_H
#define RAILCP_ENGINE_FILES_H

#include "engine/engine_int.h"
#include "io/io.h"

#define ENG_MANIFEST_PART (256u << 10)
/* The largest manifest a peer may announce: about four million entries. */
#define ENG_MANIFEST_MAX (1ull << 30)

struct eng_files;

/*
 * A side of a file job over manifest m (taken over: freed with the files)
 * cut into chunks of chunk bytes. Sender: root is where the entries' src
 * paths are read beneath (NULL: as given); io_flags may hold IO_DIRECT.
 * Receiver: root is where the entries land (taken over as well).
 */
int eng__files_create(enum eng_role role, struct io_manifest *m, uint32_t chunk,
		      struct io_root *root, unsigned io_flags, struct eng_files **f_out);

/* Closes what is open; a receiver removes the temporary files of unfinished files. Accepts NULL. */
void eng__files_destroy(struct eng_files *f);

const struct io_manifest *eng__files_manifest(const struct eng_files *f);
uint64_t eng__files_chunks(const struct eng_files *f);

/* Wire the job's source (sender) or sink (receiver) to f. */
void eng__files_attach(struct eng_files *f, struct eng_job *job);

/* Receiver, before any chunk: directories, symlinks and files without data, in manifest order. */
int eng__files_prepare(struct eng_files *f);

/* Receiver, after the last chunk: every file in place, then directory metadata. */
int eng__files_finish(struct eng_files *f);

/* Files done so far: read to the end (sender) or put in place (receiver). Thread-safe. */
uint64_t eng__files_done(const struct eng_files *f);

/*
 * Where a copy lands, as cp -r names it: dst, when it is an existing
 * directory, receives each top-level entry of m under its own name;
 * otherwise m's one top-level entry is renamed to dst's last name and lands
 * in dst's parent (with several, that is an error). contents: m is the
 * contents of one source with no name of its own (cp -r DIR/. NEW), so a
 * missing dst is made as a directory and receives them. parent NULL: dst is
 * a local path; else dst is resolved beneath parent. The new root gets
 * root_flags (IO_ROOT_*).
 */
int eng__files_dest(const struct io_root *parent, const char *dst, bool contents,
		    unsigned root_flags, struct io_manifest *m, struct io_root **root_out);

/*
 * A receiving side for manifest m (taken over, also on failure): its root as
 * eng__files_dest names it, then eng__files_create. Nothing is created but
 * DST itself for contents; eng__files_prepare comes next.
 */
int eng__files_receiver(const struct io_root *parent, const char *dst, bool contents,
			unsigned root_flags, struct io_manifest *m, uint32_t chunk,
			struct eng_files **f_out);

/* The IO_ROOT_* flags of a copy's options (cp -p, --fsync, --direct). */
unsigned eng__files_root_flags(bool preserve, bool fsync, bool direct);

/* Send m's encoding on fd as "manifest" frames. */
int eng__manifest_send(int fd, const struct io_manifest *m);

/*
 * Receive a manifest from a peer, who may be hostile: the first frame
 * announces the total (at most ENG_MANIFEST_MAX), the parts must add up to
 * it, and io_manifest_decode checks every entry.
 */
int eng__manifest_recv(int fd, int timeout_ms, struct io_manifest **m_out);

#endif
