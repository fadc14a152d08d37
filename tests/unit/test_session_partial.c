/*
 * test_session_partial.c - copies with --partial over the loopback
 * transport (partial_harness.h): a copy cancelled mid-way
 * keeps its receiver's partial file and record, and the next copy with
 * --partial sends only what is missing, for a push and a pull; the kept
 * data is read back and hashed again, so a partial file changed on disk
 * since costs its chunks, which travel again; a record is not trusted when
 * the source changed or the record is damaged. The report's bytes and
 * bytes_kept are what the tests hold to, so a resume that sent everything
 * again, or trusted what it should not, fails them. Two copies with
 * --partial into one directory at once never share a partial file. A -c
 * copy cut midway is resumed the same way by the next -c copy, push and
 * pull: what it received is kept, the rest compared with the old file; and
 * -c -n counts just what that copy would send, leaving the partial files
 * as they were; so does --partial -n after a cut --partial copy.
 *
 * Threading: one gated copy at a time, and a canceller thread.
 */
#include "partial_harness.h"

#include "engine/transport/loopback.h"

static void test_a_cut_push_with_partial_resumes_sending_only_the_rest(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct pt p;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	resumed_push(fx, &p, &r);
	assert_true(r.bytes_kept > 0);
	assert_true(r.bytes < PBIG);
	assert_int_equal(r.bytes_kept % (4 * KiB), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* How many 4 KiB chunks of the PBIG bytes of a and b are alike. */
static uint64_t chunks_alike(const char *a, const char *b)
{
	uint8_t *da = malloc(PBIG), *db = malloc(PBIG);
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	uint64_t off, n = 0;

	assert_true(da && db && fa >= 0 && fb >= 0);
	assert_int_equal(pread(fa, da, PBIG, 0), PBIG);
	assert_int_equal(pread(fb, db, PBIG, 0), PBIG);
	for (off = 0; off < PBIG; off += 4 * KiB)
		n += !memcmp(da + off, db + off, PBIG - off < 4 * KiB ? PBIG - off : 4 * KiB);
	close(fa);
	close(fb);
	free(da);
	free(db);
	return n;
}

/*
 * The file a cut -c copy's receiver builds (cut_received's), and whether it
 * already holds more than the old file's alike chunks: one chunk that
 * travelled at least. The cut waits for it rather than for the gate alone,
 * which a loaded machine can reach before any sent chunk has landed.
 */
static const char *alike_to;

static bool cut_received(const char *dir)
{
	uint8_t *da = malloc(PBIG), *db = malloc(PBIG);
	char path[4096];
	bool more = false;
	uint64_t off, n = 0;
	int fa = -1, fb;

	assert_true(da && db);
	if (count_prefix(dir, ".railcp-tmp-p") == 1) {
		path_of_prefix(dir, ".railcp-tmp-p", path);
		fa = open(path, O_RDONLY);
	}
	fb = open(alike_to, O_RDONLY);
	assert_true(fb >= 0);
	if (fa >= 0 && pread(fa, da, PBIG, 0) == PBIG && pread(fb, db, PBIG, 0) == PBIG) {
		for (off = 0; off < PBIG; off += 4 * KiB)
			n += !memcmp(da + off, db + off,
				     PBIG - off < 4 * KiB ? PBIG - off : 4 * KiB);
		more = n > 362;
	}
	if (fa >= 0)
		close(fa);
	close(fb);
	free(da);
	free(db);
	return more;
}

/* Chunks [from, to) of the file at path overwritten, each unlike what it held. */
static void chunks_change(const char *path, uint64_t from, uint64_t to)
{
	uint8_t buf[4 * KiB];
	int fd = open(path, O_RDWR);
	uint64_t k;
	size_t i;

	assert_true(fd >= 0);
	for (k = from; k < to; k++) {
		assert_int_equal(pread(fd, buf, sizeof(buf), (off_t)(k * sizeof(buf))),
				 sizeof(buf));
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)~buf[i];
		assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)(k * sizeof(buf))),
				 sizeof(buf));
	}
	close(fd);
}

/*
 * A -c copy cut midway keeps what it received, as --partial does: the next
 * -c copy keeps those chunks (confirmed by digest, as every kept chunk) and
 * compares the others with the old file, so at most the chunks that changed
 * and were not received yet travel, and the file lands whole. 151 of the
 * 513 chunks change; the cut copy receives about half of them.
 */
static void test_a_cut_c_push_resumes_from_what_it_received(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char data[4096];
	uint64_t got;
	struct pt p;

	pt_start(fx, &p, NULL);
	p.checksum = true;
	assert_int_equal(pt_copy(fx, &p, ENG_PUSH, NULL, false, &r), 0); /* the old file */
	chunks_change(p.big, 0, 100);
	chunks_change(p.big, 400, 451);
	alike_to = p.big;
	p.cut_until = cut_received;
	pt_copy(fx, &p, ENG_PUSH, gate_arm(75), true, &r);
	server_again(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	/* The old file's 362 chunks alike, and what the cut copy received of the others. */
	got = chunks_alike(data, p.big);
	assert_true(got > 362 && got <= 362 + 75);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes, (513 - got) * 4 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * A digest of what a cut copy left in dir (its data file, record and log:
 * contents, inodes and times; the ctime moves on a chmod, chown or link
 * too, which no write shows).
 */
static uint64_t cut_left(const char *dir)
{
	static const char *const prefix[] = {".railcp-tmp-p", ".railcp-tmp-r", ".railcp-tmp-l"};
	uint64_t h = 0;
	char path[4096];
	struct stat st;
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(prefix); i++) {
		uint8_t *buf;
		int fd;

		assert_int_equal(count_prefix(dir, prefix[i]), 1);
		path_of_prefix(dir, prefix[i], path);
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0 && fstat(fd, &st) == 0);
		assert_non_null(buf = malloc((size_t)st.st_size + 1));
		assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
		h = h * 31 + io_chunk_hash(buf, (size_t)st.st_size) + (uint64_t)st.st_mtim.tv_nsec +
		    (uint64_t)st.st_mtim.tv_sec * 1000000000u;
		h = h * 31 + (uint64_t)st.st_ino;
		h = h * 31 + (uint64_t)st.st_ctim.tv_nsec +
		    (uint64_t)st.st_ctim.tv_sec * 1000000000u;
		free(buf);
		close(fd);
	}
	return h;
}

/*
 * -c -n after a cut -c copy counts what the next -c copy would send: the
 * chunks the cut copy received are kept, not compared with the old file
 * (where they differ: they are the changed ones), and the partial files
 * are left as they were, so the copy then sends just what was counted.
 */
static void test_a_dry_run_with_c_counts_what_a_cut_push_kept(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	struct eng_report r;
	char data[4096];
	uint64_t got, left;
	struct pt p;

	pt_start(fx, &p, NULL);
	p.checksum = true;
	assert_int_equal(pt_copy(fx, &p, ENG_PUSH, NULL, false, &r), 0); /* the old file */
	chunks_change(p.big, 0, 100);
	chunks_change(p.big, 400, 451);
	alike_to = p.big;
	p.cut_until = cut_received;
	pt_copy(fx, &p, ENG_PUSH, gate_arm(75), true, &r);
	server_again(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	got = chunks_alike(data, p.big);
	assert_true(got > 362 && got <= 362 + 75);
	left = cut_left(p.root);
	c = pt_dry(fx, &p, ENG_PUSH);
	assert_int_equal(c.chunks, 513);
	assert_int_equal(c.differ, 513 - got);
	assert_int_equal(c.differ_bytes, (513 - got) * 4 * KiB);
	assert_int_equal(cut_left(p.root), left);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes, c.differ_bytes);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The same for a pull, whose client looks at what its cut copy kept. */
static void test_a_dry_run_with_c_counts_what_a_cut_pull_kept(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	struct eng_report r;
	char a[4096], data[4096];
	uint64_t got, left;
	struct pt p;

	pt_start(fx, &p, NULL);
	p.checksum = true;
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0); /* the old file */
	t_path(a, p.root, "pullme");
	chunks_change(a, 100, 251);
	assert_int_equal(server_stop(&fx->srv), 0);
	server_start(&fx->srv, gate_arm(75), p.root, NULL);
	alike_to = a;
	p.cut_until = cut_received;
	pt_copy(fx, &p, ENG_PULL, NULL, true, &r);
	path_of_prefix(p.dst, ".railcp-tmp-p", data);
	got = chunks_alike(data, a);
	assert_true(got > 362 && got <= 362 + 75);
	server_again(fx, &p);
	left = cut_left(p.dst);
	c = pt_dry(fx, &p, ENG_PULL);
	assert_int_equal(c.chunks, 513);
	assert_int_equal(c.differ, 513 - got);
	assert_int_equal(c.differ_bytes, (513 - got) * 4 * KiB);
	assert_int_equal(cut_left(p.dst), left);
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0);
	assert_int_equal(r.bytes, c.differ_bytes);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * --partial -n (no -c) after a cut --partial push counts what the next
 * --partial copy would send: the chunks the cut copy landed are kept, the
 * rest travel; the partial files are left as they were, and the copy then
 * sends just what was counted.
 */
static void test_a_dry_run_with_partial_counts_what_a_cut_push_kept(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	struct eng_report r;
	uint64_t left;
	struct pt p;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	left = cut_left(p.root);
	c = pt_dry(fx, &p, ENG_PUSH);
	assert_int_equal(c.chunks, 513);
	assert_true(c.differ > 0 && c.differ < 513);
	assert_int_equal(cut_left(p.root), left);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes, c.differ_bytes);
	assert_int_equal(r.bytes_kept, PBIG - c.differ_bytes);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The same for a pull, whose client looks at what its cut --partial copy kept. */
static void test_a_dry_run_with_partial_counts_what_a_cut_pull_kept(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	struct eng_report r;
	uint64_t left;
	struct pt p;

	pt_start(fx, &p, gate_arm(ENG_WRITE_BATCH));
	pt_copy(fx, &p, ENG_PULL, NULL, true, &r);
	server_again(fx, &p);
	left = cut_left(p.dst);
	c = pt_dry(fx, &p, ENG_PULL);
	assert_int_equal(c.chunks, 513);
	assert_true(c.differ > 0 && c.differ < 513);
	assert_int_equal(cut_left(p.dst), left);
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0);
	assert_int_equal(r.bytes, c.differ_bytes);
	assert_int_equal(r.bytes_kept, PBIG - c.differ_bytes);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_kept_data_changed_on_disk_is_sent_again(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char data[4096];
	struct pt p;
	int fd;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	/* Every kept byte overwritten: the record's CRC-64s match no chunk any more. */
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	fd = open(data, O_WRONLY);
	assert_true(fd >= 0);
	{
		static uint8_t zero[64 * KiB];
		off_t off;

		for (off = 0; off < PBIG; off += sizeof(zero))
			assert_true(pwrite(fd, zero, sizeof(zero), off) > 0);
	}
	close(fd);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes_kept, 0);
	assert_int_equal(r.bytes, PBIG);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* Give path the modification time of like (a forger knows it: a pull or a listing tells). */
static void same_mtime(const char *path, const char *like)
{
	struct stat st;
	struct timespec t[2];

	assert_int_equal(stat(like, &st), 0);
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/*
 * A key holder pushes a forged file under the real one's name, size and
 * modification time and cuts the copy: the receiver's record describes the
 * real source, and its chunks pass the receiver's own check (their CRC-64s
 * are the ones they landed with). The honest resumed push must not keep
 * them: the sender finds that their digests are not those of its own read,
 * and sends them again. Before, the file ended with the forged bytes and the
 * copy said every chunk was checked.
 */
static void test_kept_chunks_the_sender_does_not_confirm_are_sent_again(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char forged_dir[4096];
	struct pt p, forger;

	pt_start(fx, &p, NULL);
	fx_dir(fx, "forged", forged_dir);
	pattern_write(forged_dir, "big", PBIG, 99);
	forger = p;
	t_path(forger.big, forged_dir, "big");
	same_mtime(forger.big, p.big);
	cut_push(fx, &forger);
	resumed_push(fx, &p, &r); /* the file as the real source has it */
	assert_int_equal(r.bytes_kept, 0);
	assert_int_equal(r.bytes, PBIG);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The same for a pull: what this side kept is not what the server now has. */
static void test_a_resumed_pull_keeps_only_what_the_server_confirms(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char a[4096], b[4096], other[4096];
	struct pt p;

	pt_start(fx, &p, gate_arm(ENG_WRITE_BATCH));
	pt_copy(fx, &p, ENG_PULL, NULL, true, &r);
	assert_int_equal(count_prefix(p.dst, ".railcp-tmp-p"), 1);
	/* Other bytes of the same size and time behind the same name. */
	fx_dir(fx, "other", other);
	pattern_write(other, "pullme", PBIG, 77);
	t_path(a, p.root, "pullme");
	t_path(b, other, "pullme");
	same_mtime(b, a);
	assert_int_equal(rename(b, a), 0);
	server_again(fx, &p);
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0);
	assert_int_equal(r.bytes_kept, 0);
	assert_int_equal(r.bytes, PBIG);
	t_path(b, p.dst, "pullme");
	file_same(a, b, PBIG);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_record_and_log_of_another_source_or_damaged_are_not_trusted(void **state)
{
	const struct timespec later[2] = {{1600000000, 0}, {1600000000, 0}};
	struct fx *fx = *state;
	struct eng_report r;
	char rec[4096];
	uint8_t b;
	struct pt p;
	int fd, i;

	pt_start(fx, &p, NULL);
	/* The source's mtime changed since: the file starts over. */
	cut_push(fx, &p);
	assert_int_equal(utimensat(AT_FDCWD, p.big, later, 0), 0);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes_kept, 0);
	/* A damaged record and log: one byte of each flipped (the log's in its head's CRC). */
	assert_int_equal(unlink(p.big), 0);
	pattern_write(p.src, "big", PBIG, 7);
	t_path(rec, p.root, "big");
	assert_int_equal(unlink(rec), 0);
	cut_push(fx, &p);
	for (i = 0; i < 2; i++) {
		path_of_prefix(p.root, i ? ".railcp-tmp-l" : ".railcp-tmp-r", rec);
		fd = open(rec, O_RDWR);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &b, 1, 40), 1);
		b ^= 0x10;
		assert_int_equal(pwrite(fd, &b, 1, 40), 1);
		close(fd);
	}
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes_kept, 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * What a receiver killed outright leaves may have no record of its last
 * chunks, or none at all (killed before its first checkpoint): the log,
 * stored into as each chunk lands, keeps them. Here the record is removed
 * after the cut: the log alone resumes the same chunks.
 */
static void test_the_log_alone_resumes_what_landed(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char rec[4096];
	struct pt p;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-r", rec);
	assert_int_equal(unlink(rec), 0);
	resumed_push(fx, &p, &r);
	assert_true(r.bytes_kept > 0);
	assert_true(r.bytes < PBIG);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The inode of dir's record, or 0. */
static ino_t record_ino(const char *dir)
{
	char rec[4096];
	struct stat st;

	if (count_prefix(dir, ".railcp-tmp-r") != 1)
		return 0;
	path_of_prefix(dir, ".railcp-tmp-r", rec);
	return stat(rec, &st) == 0 ? st.st_ino : 0;
}

static _Atomic bool record_stood, record_seen; /* set by has_record, once */
static uint64_t credits_before;		       /* the loopback's, before the copy */

static uint64_t receiver_looks(void)
{
	struct eng_loop_counts c;

	eng__loop_counts(&c);
	return c.receiver_looks;
}

static uint64_t credits(void)
{
	struct eng_loop_counts c;

	eng__loop_counts(&c);
	return c.credits;
}

/*
 * Wait until the receiver's session has taken a checkpoint since now. Its
 * watch takes one on a pass that finds ENG_CHECKPOINT_MS gone since the
 * last; each pass looks at its connections first, which the loopback
 * counts. So once a period has gone, the first pass that starts later takes
 * a checkpoint (unless one was taken meanwhile), and the pass after it
 * starts once that checkpoint is written: two counts past the mark prove
 * it, however slow the host, where a sleep of a few periods only hoped.
 */
static bool checkpoint_taken(void)
{
	uint64_t end = rcp_now_ns() + ENG_CHECKPOINT_MS * 1000000ull, mark;

	if (!WAIT_FOR(rcp_now_ns() >= end))
		return false;
	mark = receiver_looks();
	return WAIT_FOR(receiver_looks() >= mark + 2);
}

/*
 * The receiver's record is there; and while the gate holds it, with no
 * chunk landing, the checkpoints that follow leave it alone (a record is
 * written again only for a file that gained chunks, each time a new inode).
 */
static bool has_record(const char *dir)
{
	bool landed;
	ino_t before;

	if (atomic_load(&record_seen))
		return true; /* WAIT_FOR asks again once it holds */
	if (!record_ino(dir))
		return false;
	atomic_store(&record_seen, true);
	/*
	 * What was under way has landed: the receiver returns a credit for each
	 * chunk once it is written, and the gate let gate.after chunks through.
	 * Then a checkpoint records them, and one more must leave the record be.
	 */
	landed = WAIT_FOR(credits() >= credits_before + gate.after) && checkpoint_taken();
	before = record_ino(dir);
	atomic_store(&record_stood,
		     landed && before != 0 && checkpoint_taken() && record_ino(dir) == before);
	return true;
}

/*
 * A receiver killed outright never ends its handles: what it got must be on
 * record already. The server writes its records while the copy runs, every
 * ENG_CHECKPOINT_MS: the record is there while the gate still holds the
 * copy, before anything ends it.
 */
static void test_the_receiver_keeps_its_record_while_the_copy_runs(void **state)
{
	struct fx *fx = *state;
	const char *push_src[1];
	_Atomic bool cancel = false;
	struct canceller w = {.flag = &cancel, .until = has_record};
	struct eng_copy_opts cp;
	struct eng_report r;
	struct pt p;

	pt_start(fx, &p, NULL);
	credits_before = credits();
	push_src[0] = p.big;
	w.dir = p.root;
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	cp.partial = true;
	cp.cancel = &cancel;
	assert_int_equal(pthread_create(&w.thread, NULL, canceller_main, &w), 0);
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, gate_arm(ENG_WRITE_BATCH), &r), -EINTR);
	pthread_join(w.thread, NULL);
	assert_true(w.held);
	assert_true(w.saw_tmp); /* the record, before the cancel, so before any end */
	assert_true(atomic_load(&record_stood));
	server_again(fx, &p);
	assert_int_equal(count_prefix(p.root, ".railcp-tmp-p"), 1);
	resumed_push(fx, &p, &r);
	assert_true(r.bytes_kept > 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_cut_pull_with_partial_resumes_locally(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char a[4096], b[4096];
	struct pt p;

	pt_start(fx, &p, gate_arm(ENG_WRITE_BATCH));
	pt_copy(fx, &p, ENG_PULL, NULL, true, &r);
	/* The local side ends with the copy: its partial file and record are there at once. */
	assert_int_equal(count_prefix(p.dst, ".railcp-tmp-r"), 1);
	assert_int_equal(count_prefix(p.dst, ".railcp-tmp-p"), 1);
	assert_false(t_exists(p.dst, "pullme"));
	server_again(fx, &p); /* without the gate for the rest */
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0);
	assert_true(r.bytes_kept > 0);
	assert_int_equal(r.bytes + r.bytes_kept, PBIG);
	t_path(a, p.root, "pullme");
	t_path(b, p.dst, "pullme");
	file_same(a, b, PBIG);
	assert_int_equal(t_count_tmp(p.dst), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The same for a pull: the local side keeps what it received, and the next -c keeps it. */
static void test_a_cut_c_pull_resumes_from_what_it_received(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char a[4096], b[4096], data[4096];
	uint64_t got;
	struct pt p;

	pt_start(fx, &p, NULL);
	p.checksum = true;
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0); /* the old file */
	t_path(a, p.root, "pullme");
	t_path(b, p.dst, "pullme");
	chunks_change(a, 100, 251);
	assert_int_equal(server_stop(&fx->srv), 0);
	server_start(&fx->srv, gate_arm(75), p.root, NULL);
	alike_to = a;
	p.cut_until = cut_received;
	pt_copy(fx, &p, ENG_PULL, NULL, true, &r);
	path_of_prefix(p.dst, ".railcp-tmp-p", data);
	got = chunks_alike(data, a);
	assert_true(got > 362 && got <= 362 + 75);
	server_again(fx, &p); /* without the gate for the rest */
	assert_int_equal(pt_copy(fx, &p, ENG_PULL, NULL, false, &r), 0);
	assert_int_equal(r.bytes, (513 - got) * 4 * KiB);
	file_same(a, b, PBIG);
	assert_int_equal(t_count_tmp(p.dst), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

struct held_copy {
	struct fx *fx;
	struct pt *p;
	const char *src;
	const struct eng_transport *tr; /* gate_arm_until's */
	pthread_t thread;
	struct eng_report r;
	int err;
};

/* A push of src to "big" with --partial whose sender the gate holds until *release. */
static void *held_copy_main(void *arg)
{
	struct held_copy *h = arg;
	const char *src[] = {h->src};
	struct eng_copy_opts cp = copy_opts(ENG_PUSH, src, 1, "");

	cp.partial = true;
	h->err = copy(&h->fx->srv, &h->p->plan, &cp, h->tr, &h->r);
	return NULL;
}

/*
 * Two copies with --partial into one directory at once, of the same name
 * (and different bytes): the partial file's name comes from the final name
 * only, so both would write one file. The first holds its flock on it from
 * the open; the second, finding it locked, must leave it alone and receive
 * its file in a temporary of its own, whole. Without the lock the second
 * would empty the first's partial file and write its own chunks into it:
 * the first would then finish with the other's bytes under its name, or
 * fail when its partial file was renamed away by the second.
 */
static void test_two_partial_copies_into_one_directory_do_not_collide(void **state)
{
	const struct timespec earlier[2] = {{1500000000, 5}, {1500000000, 5}};
	struct fx *fx = *state;
	_Atomic bool release = false;
	struct held_copy a = {.fx = fx, .tr = gate_arm_until(ENG_WRITE_BATCH, &release)};
	const char *src_b[1];
	struct eng_copy_opts cp;
	struct eng_report r;
	char other[4096], got[4096], part[4096];
	struct pt p;

	pt_start(fx, &p, NULL);
	/* The second source: the same size, other bytes and another mtime. */
	pattern_write(p.src, "other", PBIG, 9);
	t_path(other, p.src, "other");
	assert_int_equal(utimensat(AT_FDCWD, other, earlier, 0), 0);
	t_path(got, p.root, "big");
	a.p = &p;
	a.src = p.big;
	assert_int_equal(pthread_create(&a.thread, NULL, held_copy_main, &a), 0);
	/* The first copy is held with its partial file made and some chunks in it. */
	assert_true(WAIT_FOR(atomic_load(&gate.hit) && count_prefix(p.root, ".railcp-tmp-p") == 1));
	path_of_prefix(p.root, ".railcp-tmp-p", part);
	/* The second, meanwhile, to the same name: whole, and none of its bytes in the first's
	 * file. */
	src_b[0] = other;
	cp = copy_opts(ENG_PUSH, src_b, 1, "big");
	cp.partial = true;
	memset(&r, 0, sizeof(r));
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, NULL, &r), 0);
	assert_int_equal(r.bytes, PBIG);
	assert_int_equal(r.bytes_kept, 0);
	file_same(other, got, PBIG);
	assert_true(
		t_exists(p.root, strrchr(part, '/') + 1)); /* the first's partial file is there */
	/* The first goes on and finishes: its own bytes, whole, under the name. */
	atomic_store(&release, true);
	pthread_join(a.thread, NULL);
	assert_false(atomic_load(&gate.gave_up)); /* it was held until released, not timed out */
	assert_int_equal(a.err, 0);
	assert_int_equal(a.r.bytes, PBIG);
	file_same(p.big, got, PBIG);
	assert_int_equal(t_count_tmp(p.root), 0); /* no partial file, record, log or temporary */
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_cut_push_with_partial_resumes_sending_only_the_rest),
		T(test_a_cut_c_push_resumes_from_what_it_received),
		T(test_a_cut_c_pull_resumes_from_what_it_received),
		T(test_a_dry_run_with_c_counts_what_a_cut_push_kept),
		T(test_a_dry_run_with_c_counts_what_a_cut_pull_kept),
		T(test_a_dry_run_with_partial_counts_what_a_cut_push_kept),
		T(test_a_dry_run_with_partial_counts_what_a_cut_pull_kept),
		T(test_kept_data_changed_on_disk_is_sent_again),
		T(test_kept_chunks_the_sender_does_not_confirm_are_sent_again),
		T(test_a_resumed_pull_keeps_only_what_the_server_confirms),
		T(test_a_record_and_log_of_another_source_or_damaged_are_not_trusted),
		T(test_the_receiver_keeps_its_record_while_the_copy_runs),
		T(test_the_log_alone_resumes_what_landed),
		T(test_a_cut_pull_with_partial_resumes_locally),
		T(test_two_partial_copies_into_one_directory_do_not_collide),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
