/*
 * test_session_misbehave.c - peers that authenticate and then break the data
 * path's rules on purpose: a chunk in a slot that does not exist, a header
 * that names another slot or lies about its file, offset or length, a chunk
 * for a file already finished, a write into a slot without a credit, a credit
 * for a slot that holds no chunk. Each runs through a whole session against
 * eng__serve; the victim must end the session with one sentence of its own,
 * leave nothing under a final name and no temporary, and the server must
 * serve the next session.
 *
 * Design: the hostile end is the real client or server code over the
 * loopback transport, with its endpoints' operations swapped for a const
 * table (liar_ops, session_liar.c) that forwards to the loopback's and
 * alters one post: the immediate, the chunk header's bytes, a write into a
 * slot already written, a credit naming another slot. The swap happens
 * where the transport has made the endpoints (connect at a client,
 * accept_all at a server), before the job's workers start. The victim runs
 * unmodified. A server's sentence is
 * its session's line in the log, read from stderr (log_capture); a
 * client's is its rcp_err_msg.
 *
 * A manifest that changes between its parts is not repeated here: the parts
 * are slices of one encoded list whose size the first part fixes, and
 * test_engine_files.c's test_hostile_manifest_frames_are_refused pins what
 * eng__manifest_recv refuses (parts that overrun it, parts not hex, a list
 * that does not decode); a list that decodes is checked as any other
 * (test_session_hostile.c).
 *
 * Threading: the server's threads and the hostile end's workers, which
 * read the liar's state (set before the session starts) and change only
 * its atomics.
 */
#include "session_gate.h"
#include "session_liar.h"

#include <inttypes.h>
/* ---- the server's log: stderr into a file while a session runs ---- */

static struct {
	int saved; /* the real stderr; -1 when not capturing */
	char path[4096];
} cap = {.saved = -1};

static void log_capture_start(const struct fx *fx)
{
	int fd;

	t_path(cap.path, fx->base, "log");
	fd = open(cap.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	cap.saved = dup(STDERR_FILENO);
	assert_true(cap.saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

/* The log so far, NUL-terminated, into buf. */
static void log_read(char *buf, size_t len)
{
	int fd = open(cap.path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/* stderr back; what the server said meanwhile is shown there too. */
static void log_capture_end(void)
{
	char buf[16384];

	if (cap.saved < 0)
		return;
	fflush(stderr);
	dup2(cap.saved, STDERR_FILENO);
	close(cap.saved);
	cap.saved = -1;
	log_read(buf, sizeof(buf));
	fputs(buf, stderr);
}

/* The sentence of the server's line "session N from ADDR failed: ..." (waited for). */
static bool server_failed(char *out, size_t len)
{
	char buf[16384], *p = NULL, *end;

	if (!WAIT_FOR((log_read(buf, sizeof(buf)), (p = strstr(buf, " failed: ")) != NULL)))
		return false;
	p += strlen(" failed: ");
	end = strchr(p, '\n');
	snprintf(out, len, "%.*s", (int)(end ? end - p : (ptrdiff_t)strlen(p)), p);
	return true;
}

static int mis_teardown(void **state)
{
	log_capture_end();
	return fx_teardown(state);
}

#define M(name) cmocka_unit_test_setup_teardown(name, fx_setup, mis_teardown)

/* ---- sessions ---- */

/* File b: 128 chunks of 4 KiB, more than a stripe has slots, so b cannot be whole at a lie. */
#define FILE_BYTES (512 * KiB)

/* The server's sentence said must contain what, and be its own, not the client's. */
static void server_said(const char *said, const char *what)
{
	if (!strstr(said, what))
		fail_msg("the server said \"%s\", not \"%s\"", said, what);
	if (strstr(said, "the client"))
		fail_msg("the server took the client's word: \"%s\"", said);
}

/*
 * A push of files a (a_bytes) and b (b_bytes) over tr, the liar, to a
 * server over srv_tr (NULL: the loopback; else held_tr, with a helper): the
 * push fails, the server's sentence goes to said, b is not in the root and
 * no temporary is; the server then serves a bench. The root is root_out.
 */
static void push_lied(struct fx *fx, const struct eng_transport *tr,
		      const struct eng_transport *srv_tr, size_t a_bytes, size_t b_bytes,
		      char *said, size_t said_len, char root_out[4096])
{
	static const unsigned rails[] = {1};
	char src[4096], a[4096], b[4096];
	const char *push_src[] = {a, b};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root_out);
	pattern_write(src, "a", a_bytes, 1);
	pattern_write(src, "b", b_bytes, 2);
	t_path(a, src, "a");
	t_path(b, src, "b");
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	fx->srv.plan.helpers = srv_tr ? 1 : 0; /* a held victim: chunks' tasks surely out */
	server_start(&fx->srv, srv_tr, root_out, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PUSH, push_src, 2, "");
	log_capture_start(fx);
	err = copy(&fx->srv, &plan, &cp, tr, &r);
	assert_true(atomic_load(&liar.told));
	assert_int_not_equal(err, 0);
	assert_true(server_failed(said, said_len));
	log_capture_end();
	print_message("the client: %s\nthe server: %s\n", rcp_err_msg(err), said);
	/* The server logs the session's end before it removes its temporaries. */
	assert_true(WAIT_FOR(t_count_tmp(root_out) == 0));
	assert_false(t_exists(root_out, "b"));
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* A push whose first chunk lies: the server says what, and nothing is left in the root. */
static void push_refused(struct fx *fx, const struct eng_transport *tr,
			 const struct eng_transport *srv_tr, const char *what)
{
	char said[1024], root[4096];

	push_lied(fx, tr, srv_tr, FILE_BYTES, FILE_BYTES, said, sizeof(said), root);
	server_said(said, what);
	assert_true(dir_empty(root));
}

/*
 * A pull of files a and b from a server whose transport is tr, the liar:
 * the client fails with a sentence containing what, leaves nothing in its
 * destination, and the server serves a bench.
 */
static void pull_refused(struct fx *fx, const struct eng_transport *tr, const char *what)
{
	static const unsigned rails[] = {1};
	const char *pull_src[] = {"a", "b"};
	char root[4096], dst[4096];
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "root", root);
	fx_dir(fx, "dst", dst);
	pattern_write(root, "a", FILE_BYTES, 1);
	pattern_write(root, "b", FILE_BYTES, 2);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, tr, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PULL, pull_src, 2, dst);
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	assert_true(atomic_load(&liar.told));
	assert_int_not_equal(err, 0);
	print_message("the client: %s\n", rcp_err_msg(err));
	if (!strstr(rcp_err_msg(err), what))
		fail_msg("the client said \"%s\", not \"%s\"", rcp_err_msg(err), what);
	if (strstr(rcp_err_msg(err), "the server"))
		fail_msg("the client took the server's word: \"%s\"", rcp_err_msg(err));
	assert_int_equal(t_count_tmp(dst), 0);
	assert_true(dir_empty(dst));
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void
test_a_chunk_with_an_unknown_slot_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_SLOT_UNKNOWN, 0), NULL,
		     "the sender wrote to a slot that does not exist");
}

static void
test_a_chunk_header_naming_another_slot_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_HDR_SLOT, 0), NULL,
		     "the sender sent a chunk header that names another slot");
}

static void
test_a_chunk_header_lying_about_its_file_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_FILE, 0), NULL, "which is not where the plan puts it");
}

static void
test_a_chunk_header_lying_about_its_offset_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_OFFSET, 0), NULL,
		     "as 4096 bytes at offset 4096 of \"a\", which is not where the plan puts it");
}

static void
test_a_chunk_longer_than_its_slot_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_LEN_LONG, 0), NULL,
		     "the sender sent a chunk longer than its slot");
}

static void
test_a_chunk_shorter_than_planned_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_LEN_SHORT, 0), NULL,
		     "as 4095 bytes at offset 0 of \"a\", which is not where the plan puts it");
}

static void test_a_write_without_a_credit_ends_the_session_and_the_server_serves_on(void **state)
{
	push_refused(*state, liar_tell(LIE_NO_CREDIT, 0), held_arm(),
		     "the sender wrote into a slot it held no credit for");
}

/* File b of the test below: long enough that a's credit is back before b's last chunk leaves. */
#define LONG_BYTES (8 * MiB)

/*
 * A chunk of a file the receiver has finished cannot touch it: a second copy
 * (failover can send one) is taken without a write. Sent in place of another
 * chunk, the one it displaced is missing, and the session must not succeed.
 */
static void test_a_chunk_for_a_finished_file_leaves_it_whole_and_the_server_serves_on(void **state)
{
	struct fx *fx = *state;
	char said[1024], root[4096], a[4096], src_a[4096], what[256];
	uint64_t n = 1 + LONG_BYTES / (4 * KiB), bytes = 100 + LONG_BYTES;

	push_lied(fx, liar_tell(LIE_FINISHED, 1), NULL, 100, LONG_BYTES, said, sizeof(said), root);
	t_path(a, root, "a");
	t_path(src_a, fx->base, "src/a");
	file_same(src_a, a, 100);
	snprintf(what, sizeof(what),
		 "the sender sent %" PRIu64 " chunks (%" PRIu64 " bytes of the %" PRIu64
		 " announced), %" PRIu64 " chunks (%" PRIu64 " bytes) arrived",
		 n, bytes, bytes, n - 1, bytes - 4 * KiB);
	server_said(said, what);
}

static void test_a_pull_server_lying_about_an_offset_fails_the_pull_and_serves_on(void **state)
{
	pull_refused(*state, liar_tell(LIE_OFFSET, 0),
		     "the sender sent chunk 0 as 4096 bytes at offset 4096 of \"a\", which is not "
		     "where the plan puts it");
}

static void test_a_pull_server_writing_to_an_unknown_slot_fails_the_pull_and_serves_on(void **state)
{
	pull_refused(*state, liar_tell(LIE_SLOT_UNKNOWN, 0),
		     "the sender wrote to a slot that does not exist");
}

/* ---- credits: a hostile receiver ---- */

#define CREDIT_LIE "the receiver returned a credit for a slot it does not hold"

/*
 * A push of a_bytes (file a) to a server whose transport is tr, the liar,
 * with the client's transport ctr (NULL: the loopback) and helpers: the
 * client fails with its own sentence CREDIT_LIE, and the server serves on.
 */
static void push_credit_refused(struct fx *fx, const struct eng_transport *tr,
				const struct eng_transport *ctr, size_t a_bytes, unsigned helpers)
{
	struct push1 p = {.name = "a",
			  .bytes = a_bytes,
			  .seed = 1,
			  .helpers = helpers,
			  .tr = ctr,
			  .srv_tr = tr};
	int err;

	err = push_one(fx, &p);
	assert_true(atomic_load(&liar.told));
	assert_int_not_equal(err, 0);
	print_message("the client: %s\n", rcp_err_msg(err));
	if (!strstr(rcp_err_msg(err), CREDIT_LIE))
		fail_msg("the client said \"%s\", not \"%s\"", rcp_err_msg(err), CREDIT_LIE);
	assert_true(
		WAIT_FOR(t_count_tmp(p.root) == 0)); /* the server's session may still be ending */
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* One chunk, so every other slot is never written: a credit for the last of them. */
static void
test_a_credit_for_a_slot_never_used_fails_the_push_and_the_server_serves_on(void **state)
{
	push_credit_refused(*state, liar_tell(LIE_CREDIT_UNUSED, 0), NULL, 100, 0);
}

/*
 * The sender's chunks after the first are held where their reads end
 * (session_gate.h): the credit of the first names the second's slot, which
 * the sender has claimed but not written. Taken, that slot would be claimed
 * again while its task is still out.
 */
static void test_a_credit_for_a_slot_still_being_read_fails_the_push_at_once(void **state)
{
	push_credit_refused(*state, liar_tell(LIE_CREDIT_HELD, 0), gate_arm(1), FILE_BYTES, 1);
	assert_true(atomic_load(&gate.hit));
	assert_false(atomic_load(&gate.gave_up)); /* it ended at once, not after the gate's 10 s */
}

/* A pull: the server is the sender, the client the liar. */
static void test_a_credit_for_an_unknown_slot_ends_the_pull_and_the_server_serves_on(void **state)
{
	static const unsigned rails[] = {1};
	const char *pull_src[] = {"a"};
	struct fx *fx = *state;
	char root[4096], dst[4096], said[1024];
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "root", root);
	fx_dir(fx, "dst", dst);
	pattern_write(root, "a", FILE_BYTES, 1);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PULL, pull_src, 1, dst);
	log_capture_start(fx);
	err = copy(&fx->srv, &plan, &cp, liar_tell(LIE_CREDIT_UNKNOWN, 0), &r);
	assert_true(atomic_load(&liar.told));
	assert_int_not_equal(err, 0);
	assert_true(server_failed(said, sizeof(said)));
	log_capture_end();
	print_message("the client: %s\nthe server: %s\n", rcp_err_msg(err), said);
	server_said(said, CREDIT_LIE);
	assert_int_equal(t_count_tmp(dst), 0);
	assert_true(dir_empty(dst));
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		M(test_a_chunk_with_an_unknown_slot_ends_the_session_and_the_server_serves_on),
		M(test_a_chunk_header_naming_another_slot_ends_the_session_and_the_server_serves_on),
		M(test_a_chunk_header_lying_about_its_file_ends_the_session_and_the_server_serves_on),
		M(test_a_chunk_header_lying_about_its_offset_ends_the_session_and_the_server_serves_on),
		M(test_a_chunk_longer_than_its_slot_ends_the_session_and_the_server_serves_on),
		M(test_a_chunk_shorter_than_planned_ends_the_session_and_the_server_serves_on),
		M(test_a_write_without_a_credit_ends_the_session_and_the_server_serves_on),
		M(test_a_chunk_for_a_finished_file_leaves_it_whole_and_the_server_serves_on),
		M(test_a_pull_server_lying_about_an_offset_fails_the_pull_and_serves_on),
		M(test_a_pull_server_writing_to_an_unknown_slot_fails_the_pull_and_serves_on),
		M(test_a_credit_for_a_slot_never_used_fails_the_push_and_the_server_serves_on),
		M(test_a_credit_for_a_slot_still_being_read_fails_the_push_at_once),
		M(test_a_credit_for_an_unknown_slot_ends_the_pull_and_the_server_serves_on),
	};

	(void)canceller_main; /* session_gate.h's, for tests that cancel */
	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
