/*
 * ranges.c - railcp-mpi's files cut into byte ranges, on the control
 * connection (protocol 17; the receiver's side is io/range.c).
 *
 * A rank's push whose list has entries flagged as ranges names its job in
 * the hello ("range_job"): the server writes each such entry's chunks into
 * the job's temporary of its file (engine/datapath/files.c asks
 * io_wfile_range), checked chunk by chunk as any file's, synced, never
 * renamed. A list with such an entry and no job is refused.
 *
 * Once every rank's sessions succeeded (MPI's gather says so), rank 0 runs
 * one more session, its hello's "ranges" saying "place": its list names the
 * ranged files whole (with their directories, as a list must), nothing
 * travels, and the server puts each file's temporary in place
 * (io_root_range_place: its landed ranges and size checked, -p's mode and
 * time, synced, renamed, the directory synced), then answers "ranges_done"
 * with the count and the session ends; "place_again", on the next server
 * after the first place's was judged gone, counts a file the first put in
 * place already. A job that fails runs such a session saying "remove":
 * the temporaries go, every one that can past an error. Every server serves one shared root, so any
 * of them can do either.
 *
 * With -p (protocol 18), the job's sessions say "dirs_last": the server
 * marks the directories it makes as the job's and leaves their metadata
 * (io_root_set_job). After the place, rank 0's last session says "dirs",
 * its list the job's directories: the server gives those that hold the
 * job's marker their mode and time, deepest first, and removes the markers
 * (io_root_job_dirs); a failed job's "dirs_remove" removes them only.
 * While it settles a long list the server says it is alive (eng__alive_tick
 * after each entry, and after the sort of the job's directories).
 *
 * Threading: the session's thread.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* The job id as 8 bytes, the most significant first (its hex reads as the number). */
static void job_bytes(uint64_t job, uint8_t b[8])
{
	int i;

	for (i = 7; i >= 0; i--, job >>= 8)
		b[i] = (uint8_t)job;
}

static const char *step_word(enum eng_range_step step)
{
	switch (step) {
	case ENG_RANGES_PLACE:
		return ENG_RANGES_PLACE_WORD;
	case ENG_RANGES_PLACE_AGAIN:
		return ENG_RANGES_PLACE_AGAIN_WORD;
	case ENG_RANGES_DIRS:
		return ENG_RANGES_DIRS_WORD;
	case ENG_RANGES_DIRS_REMOVE:
		return ENG_RANGES_DIRS_REMOVE_WORD;
	default:
		return ENG_RANGES_REMOVE_WORD;
	}
}

int eng__ranges_hello(json_t *m, const struct eng_copy_opts *cp)
{
	uint8_t b[8];

	if (!cp->range_job)
		return 0;
	job_bytes(cp->range_job, b);
	if (cp->range_step != ENG_RANGES_LAND &&
	    json_object_set_new(m, ENG_KEY_RANGES, json_string(step_word(cp->range_step))))
		return -ENOMEM;
	if (cp->range_step == ENG_RANGES_LAND && cp->dirs_last &&
	    json_object_set_new(m, ENG_KEY_DIRS_LAST, json_true()))
		return -ENOMEM;
	return eng__proto_set_hex(m, ENG_KEY_RANGE_JOB, b, sizeof(b));
}

bool eng__ranges_any(const struct io_manifest *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->entry[i].range)
			return true;
	return false;
}

int eng__ranges_terms(const json_t *hello, const struct io_manifest *m, uint64_t *job_out,
		      enum eng_range_step *step_out)
{
	const json_t *step = json_object_get(hello, ENG_KEY_RANGES);
	const json_t *dirs_last = json_object_get(hello, ENG_KEY_DIRS_LAST);
	enum eng_range_step st = ENG_RANGES_LAND;
	uint64_t job = 0;
	uint8_t b[8];
	int err, i;

	if (json_object_get(hello, ENG_KEY_RANGE_JOB)) {
		if ((err = eng__proto_get_hex(hello, ENG_KEY_RANGE_JOB, b, sizeof(b))) != 0)
			return err;
		for (i = 0; i < 8; i++)
			job = job << 8 | b[i];
	}
	if (step && !job)
		return rcp_err(-EPROTO, "the client asked to settle a job's ranges without "
					"naming the job");
	for (i = ENG_RANGES_PLACE; step && i <= ENG_RANGES_DIRS_REMOVE; i++)
		if (json_is_string(step) &&
		    !strcmp(json_string_value(step), step_word((enum eng_range_step)i)))
			st = (enum eng_range_step)i;
	if (step && st == ENG_RANGES_LAND)
		return rcp_err(-EPROTO, "the client's hello asks for an unknown step of a "
					"job's ranges");
	if (dirs_last && !job)
		return rcp_err(-EPROTO, "the client's hello leaves directories to a job's last "
					"session without naming the job");
	if (dirs_last && (!json_is_true(dirs_last) || st != ENG_RANGES_LAND))
		return rcp_err(-EPROTO, "the client's hello has a dirs_last that is not true, or "
					"beside a step of the job's ranges");
	if (!job && eng__ranges_any(m))
		return rcp_err(-EPROTO, "the client's list has byte ranges of files but names "
					"no job to gather them in");
	if (st != ENG_RANGES_LAND && eng__ranges_any(m))
		return rcp_err(-EPROTO, "the client's list to settle a job's ranges has ranges in "
					"it, not whole files");
	*job_out = job;
	*step_out = st;
	return 0;
}

/*
 * Each file of m put in place (or its temporary removed) beneath root: 0,
 * or the first error. A removal goes on through the list past an error
 * (each temporary left is a whole file's blocks); a place stops at it (the
 * job fails, and its removal takes the rest). The "dirs" steps end the
 * job's directories instead (io_root_job_dirs).
 */
static int settle(struct io_root *root, const struct io_manifest *m, uint64_t job,
		  enum eng_range_step step, struct eng_alive *a, uint64_t *count_out)
{
	size_t i;
	int err = 0, r;

	if (step == ENG_RANGES_DIRS || step == ENG_RANGES_DIRS_REMOVE)
		return io_root_job_dirs(root, m, job, step == ENG_RANGES_DIRS, eng__alive_tick, a,
					count_out);
	for (i = 0; i < m->n && (!err || step == ENG_RANGES_REMOVE); i++) {
		const struct io_entry *e = &m->entry[i];

		if (e->type != IO_FILE)
			continue;
		r = step == ENG_RANGES_REMOVE
			    ? io_root_range_remove(root, e->path, job)
			    : io_root_range_place(root, e, job, step == ENG_RANGES_PLACE_AGAIN);
		*count_out += !r;
		err = err ? err : r;
		eng__alive_tick(a);
	}
	return err;
}

bool eng__ranges_dirs_last(const json_t *hello)
{
	return json_is_true(json_object_get(hello, ENG_KEY_DIRS_LAST));
}

int eng__ranges_answer(struct eng_session *s, const struct io_root *parent, const char *dst,
		       bool contents, unsigned root_flags, struct io_manifest *m, uint64_t job,
		       enum eng_range_step step)
{
	struct eng_alive a;
	json_t *msg = NULL;
	struct io_root *root = NULL;
	uint64_t count = 0;
	/* Never made here: a job whose DST is missing has nothing there to settle (count 0). */
	int err;

	eng__alive_init(&a, &s->ctl);
	err = eng__dest_find(parent, dst, contents, root_flags, m, &root);
	if (!err && root)
		err = settle(root, m, job, step, &a, &count);
	if (!err && !(msg = eng__proto_msg(ENG_MSG_RANGES_DONE, false)))
		err = rcp_err(-ENOMEM, "out of memory");
	if (!err) {
		json_object_set_new(msg, ENG_KEY_COUNT, json_integer((json_int_t)count));
		err = eng__proto_send(&s->ctl, msg);
	}
	json_decref(msg);
	io_root_close(root);
	io_manifest_destroy(m);
	return err;
}

int eng__ranges_heard(struct eng_session *s, uint64_t *count_out)
{
	json_t *msg = NULL;
	int err = eng__proto_recv(&s->ctl, s->timeout_ms, ENG_MSG_RANGES_DONE, &msg);

	if (!err)
		err = eng__proto_get_u64(msg, ENG_KEY_COUNT, count_out);
	json_decref(msg);
	return err;
}
