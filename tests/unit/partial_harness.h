/*
 * partial_harness.h - copies with --partial over the loopback transport,
 * for test_session_partial.c and test_io_partial_owner.c: a server beneath
 * root and a big file of 513 chunks in src (and "pullme" in root), a push
 * or pull cut once the gate holds it, the server again, a -c -n (or
 * --partial -n) dry run's count, and the names of what a cut copy keeps (".railcp-tmp-p", "-r",
 * "-l" and 16 hex digits).
 * The functions are in partial_harness.c, compiled once and linked into
 * each test that includes this.
 *
 * Threading: one gated copy at a time, and a canceller thread.
 */
#ifndef RAILCP_TEST_PARTIAL_HARNESS_H
#define RAILCP_TEST_PARTIAL_HARNESS_H

#include "session_harness.h"
#include "session_gate.h"
#include "engine/session/session_int.h"

#include <dirent.h>
#include <sys/stat.h>

#define PBIG (2 * MiB + 100) /* 513 chunks of 4 KiB */

/* How many names beneath dir (not below) start with prefix. */
int count_prefix(const char *dir, const char *prefix);

/* The path of the one name in dir that starts with prefix. */
void path_of_prefix(const char *dir, const char *prefix, char out[4096]);

struct pt {
	char src[4096], root[4096], dst[4096], big[4096];
	struct topo_plan plan;
	bool checksum; /* the copies with -c, not --partial (pt_start: false) */
	/* a cut copy is cancelled once this holds of the receiver's directory (NULL: a temporary)
	 */
	bool (*cut_until)(const char *dir);
};

/* A server (one helper per worker: the gate holds a helper) and the big file in src and root. */
void pt_start(struct fx *fx, struct pt *p, const struct eng_transport *srv_tr);

/*
 * A push (or pull) of the big file with --partial (-c if p->checksum) over
 * tr, cancelled once it is held if cut.
 */
int pt_copy(struct fx *fx, struct pt *p, enum eng_copy_dir dir, const struct eng_transport *tr,
	    bool cut, struct eng_report *r);

/* The server again, once every session of the one before has ended. */
void server_again(struct fx *fx, struct pt *p);

/* A cut push: the server's session ends keeping the partial file, its record and its log. */
void cut_push(struct fx *fx, struct pt *p);

/* A push with --partial, not cut: the file arrives whole; kept and sent add up. */
void resumed_push(struct fx *fx, struct pt *p, struct eng_report *r);

/* A -c -n (--partial -n unless p->checksum) push of the big file (or pull of pullme): its count. */
struct eng_dry_chunks pt_dry(struct fx *fx, struct pt *p, enum eng_copy_dir dir);

#endif
