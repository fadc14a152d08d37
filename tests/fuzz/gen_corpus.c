/*
 * gen_corpus.c - writes the seed corpora of tests/fuzz/corpus/ with
 * railcp's own encoders, so the seeds are what railcp really sends and
 * reads: control frames as eng__proto_send frames them, a manifest of a
 * real tree as io_manifest_encode and eng__manifest_send put it, chunk
 * headers as eng__bench_fill makes them, profiles as topo_profile_save
 * writes them for the machines of tests/fixtures.
 *
 * Usage: build/fuzz/gen_corpus DIR (tests/fuzz/corpus): writes
 * DIR/<target>/<name>, replacing files of the same name, nothing else.
 * The output is the same on every run (fixed times, modes and
 * challenges), so regenerating changes nothing unless an encoder did.
 *
 * The hello, sources and welcome frames follow client.c's hello_make,
 * dry.c's eng__sources_send and server.c's welcome_send; a change to
 * those messages should be mirrored here.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "engine/datapath/datapath_int.h"
#include "engine/session/session_int.h"
#include "io/io_int.h"
#include "tests/fuzz/fuzz.h"
#include "topology/topology.h"

#include <sys/stat.h>
#include <time.h>

static const char *out_dir;

static void die(const char *what, int err)
{
	fprintf(stderr, "gen_corpus: %s: %s\n", what, rcp_err_msg(err));
	exit(1);
}

static void put(const char *target, const char *name, const void *data, size_t len)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	fuzz_write_file(path, data, len);
	chmod(path, 0644);
}

/* ---- control frames: sent on a socketpair, read back as bytes ---- */

struct stream {
	int fd[2];
};

static void stream_open(struct stream *s)
{
	int buf = 4 << 20;

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s->fd) == 0);
	setsockopt(s->fd[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
}

static void stream_send(struct stream *s, json_t *msg)
{
	FUZZ_CHECK(msg && eng__proto_send(&ENG_CTL_PLAIN(s->fd[0]), msg) == 0);
	json_decref(msg);
}

static void stream_put(struct stream *s, const char *target, const char *name)
{
	static uint8_t buf[1 << 20];
	size_t len = 0;
	ssize_t n;

	shutdown(s->fd[0], SHUT_WR);
	while ((n = read(s->fd[1], buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	put(target, name, buf, len);
	close(s->fd[0]);
	close(s->fd[1]);
}

static json_t *stripe(const char *addr, unsigned prefix, const char *rail)
{
	return json_pack("{s:s, s:i, s:s}", ENG_KEY_ADDR, addr, ENG_KEY_PREFIX, prefix,
			 ENG_KEY_RAIL, rail);
}

/* A client's hello as hello_make builds it: job keys are the caller's. */
static json_t *hello(const char *job, bool keyed)
{
	static const uint8_t challenge[ENG_AUTH_CHALLENGE_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
	json_t *m = eng__proto_msg(ENG_MSG_HELLO, true), *st = json_array();

	json_object_set_new(m, ENG_KEY_CHUNK, json_integer(1 << 20));
	json_object_set_new(m, ENG_KEY_SLOTS, json_integer(16));
	json_array_append_new(st, stripe("198.18.0.2", 24, "rxe0"));
	json_array_append_new(st, stripe("198.18.1.2", 24, "rxe1"));
	json_array_append_new(st, stripe("198.18.1.2", 24, "rxe1"));
	json_object_set_new(m, ENG_KEY_STRIPES, st);
	json_object_set_new(m, ENG_KEY_JOB, json_string(job));
	if (keyed)
		eng__proto_set_hex(m, ENG_KEY_CHALLENGE, challenge, sizeof(challenge));
	return m;
}

static json_t *flags(bool recursive)
{
	return json_pack("{s:b, s:b, s:b, s:b, s:b}", ENG_FLAG_PRESERVE, 1, ENG_FLAG_FSYNC, 0,
			 ENG_FLAG_DIRECT, 0, ENG_FLAG_RECURSIVE, recursive, ENG_FLAG_CONTENTS, 0);
}

static json_t *hex_msg(const char *type, const char *key, uint8_t fill, size_t len)
{
	uint8_t b[64];
	json_t *m = eng__proto_msg(type, false);

	memset(b, fill, len);
	eng__proto_set_hex(m, key, b, len);
	return m;
}

static json_t *welcome(bool token)
{
	json_t *m = eng__proto_msg(ENG_MSG_WELCOME, true), *st = json_array();
	unsigned i;

	if (token) {
		uint8_t t[ENG_SEAL_KEY_LEN];

		memset(t, 0x77, sizeof(t));
		eng__proto_set_hex(m, ENG_KEY_TOKEN, t, sizeof(t));
	}
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(12));
	json_object_set_new(m, ENG_KEY_SLOTS, json_integer(16));
	json_object_set_new(m, ENG_KEY_SLOT_SIZE, json_integer(1 << 20));
	for (i = 0; i < 3; i++)
		json_array_append_new(st, json_pack("{s:s, s:i, s:i, s:s}", ENG_KEY_ADDR,
						    i ? "198.18.1.1" : "198.18.0.1", ENG_KEY_PORT,
						    40000 + i, ENG_KEY_STRIPE, i, ENG_KEY_RAIL,
						    i ? "rxe1:1" : "rxe0:1"));
	json_object_set_new(m, ENG_KEY_STRIPES, st);
	return m;
}

static json_t *end_msg(const char *type, json_int_t chunks, json_int_t bytes)
{
	json_t *m = eng__proto_msg(type, false);

	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(chunks));
	json_object_set_new(m, ENG_KEY_BYTES, json_integer(bytes));
	if (!strcmp(type, ENG_MSG_DONE))
		json_object_set_new(m, ENG_KEY_SECONDS, json_real(0.25));
	else
		json_object_set_new(m, ENG_KEY_FILES, json_integer(3));
	return m;
}

/* A stripe gone down on its side, as session.c's lost_tell says so. */
static json_t *lost_msg(json_int_t stripe)
{
	json_t *m = eng__proto_msg(ENG_MSG_LOST, false);

	json_object_set_new(m, ENG_KEY_STRIPE, json_integer(stripe));
	json_object_set_new(m, ENG_KEY_MESSAGE,
			    json_string("work completion error 'transport retry counter "
					"exceeded' (status 12) on rxe1:1 qp 0x11"));
	return m;
}

/*
 * A railcp-mpi job's sessions (ranges.c), each a push of nothing naming its
 * job: the hello's step (key, a "ranges" word, or "dirs_last" true where
 * word is NULL) and, for a step that settles a list, the server's answer.
 */
static const struct job_step {
	const char *name, *key, *word;
	json_int_t count; /* "ranges_done"'s count; -1: none (the session goes on as a copy) */
} job_step_seeds[] = {
	/* one that puts the job's cut files in place */
	{"push_ranges_place", ENG_KEY_RANGES, ENG_RANGES_PLACE_WORD, 1},
	/* a -p job's session that leaves its directories to the job's last one... */
	{"push_dirs_last", ENG_KEY_DIRS_LAST, NULL, -1},
	/* ...and that one */
	{"push_ranges_dirs", ENG_KEY_RANGES, ENG_RANGES_DIRS_WORD, 2},
};

static void job_steps(void)
{
	const struct job_step *j;
	struct stream s;
	json_t *m;

	for (j = job_step_seeds; j < job_step_seeds + RCP_ARRAY_SIZE(job_step_seeds); j++) {
		stream_open(&s);
		m = hello(ENG_JOB_PUSH, true);
		json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
		json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(0));
		eng__proto_set_hex(m, ENG_KEY_DST, "in/", 3);
		eng__proto_set_hex(m, ENG_KEY_RANGE_JOB, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8);
		json_object_set_new(m, j->key, j->word ? json_string(j->word) : json_true());
		stream_send(&s, m);
		if (j->count >= 0) {
			m = eng__proto_msg(ENG_MSG_RANGES_DONE, false);
			json_object_set_new(m, ENG_KEY_COUNT, json_integer(j->count));
			stream_send(&s, m);
		}
		stream_put(&s, "frame", j->name);
	}
}

static void frames(void)
{
	struct stream s;
	json_t *m;

	/* A keyed push: hello, the proof, then what a server sends back. */
	stream_open(&s);
	m = hello(ENG_JOB_PUSH, true);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(12));
	eng__proto_set_hex(m, ENG_KEY_DST, "backup/today", strlen("backup/today"));
	stream_send(&s, m);
	stream_send(&s, hex_msg(ENG_MSG_PROOF, ENG_KEY_PROOF, 0xab, ENG_AUTH_RESPONSE_LEN));
	stream_send(&s, eng__proto_msg(ENG_MSG_READY, false));
	stream_send(&s, welcome(false));
	stream_send(&s, lost_msg(1));
	stream_send(&s, end_msg(ENG_MSG_RESULT, 12, 12 << 20));
	stream_put(&s, "frame", "push_keyed");
	/* A keyless pull: hello, its sources, a welcome with the token, done. */
	stream_open(&s);
	m = hello(ENG_JOB_PULL, false);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_SOURCES, false);
	json_object_set_new(
		m, ENG_KEY_SRC,
		json_pack("[o, o]", eng__proto_hex("data/set", 8), eng__proto_hex("x/.", 3)));
	stream_send(&s, m);
	stream_send(&s, welcome(true));
	stream_send(&s, lost_msg(0));
	stream_send(&s, end_msg(ENG_MSG_DONE, 12, 12 << 20));
	stream_put(&s, "frame", "pull_keyless");
	/* A bench; then the server refuses with a sentence. */
	stream_open(&s);
	m = hello(ENG_JOB_BENCH, true);
	json_object_set_new(m, ENG_KEY_BYTES, json_integer(1 << 30));
	stream_send(&s, m);
	stream_send(&s,
		    hex_msg(ENG_MSG_CHALLENGE, ENG_KEY_CHALLENGE, 0x11, ENG_AUTH_CHALLENGE_LEN));
	m = eng__proto_msg(ENG_MSG_ERROR, false);
	json_object_set_new(m, ENG_KEY_MESSAGE, json_string("the server is busy\n\x1b[31m"));
	stream_send(&s, m);
	stream_put(&s, "frame", "bench_refused");
	/* A client on --transport auto asks for rdma; a server of tcp alone says to ask again. */
	stream_open(&s);
	m = hello(ENG_JOB_BENCH, false);
	json_object_set_new(m, ENG_KEY_BYTES, json_integer(1 << 30));
	json_object_set_new(m, ENG_KEY_TRANSPORT, json_string("rdma"));
	json_object_set_new(m, ENG_KEY_TRANSPORTS, json_pack("[s, s]", "rdma", "tcp"));
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_ERROR, false);
	json_object_set_new(m, ENG_KEY_MESSAGE, json_string("this server serves tcp alone"));
	json_object_set_new(m, ENG_KEY_OTHER_TRANSPORT, json_true());
	stream_send(&s, m);
	stream_put(&s, "frame", "bench_auto_other_transport");
	/* --update: the receiver's map of 3 entries, the second held already. */
	stream_open(&s);
	m = eng__proto_msg(ENG_MSG_SKIP, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "\x02", 1);
	stream_send(&s, m);
	stream_put(&s, "frame", "skip_map");
	/* A pull --dry-run with a filter: its sources, then the filter's records. */
	stream_open(&s);
	m = hello(ENG_JOB_PULL, false);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	json_object_set_new(json_object_get(m, ENG_KEY_FLAGS), ENG_FLAG_DRY_RUN, json_true());
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_SOURCES, false);
	json_object_set_new(m, ENG_KEY_SRC, json_pack("[o]", eng__proto_hex("data", 4)));
	json_object_set_new(m, ENG_KEY_FILTER_BYTES, json_integer(24));
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_FILTER, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "-*.o\0+/keep/\0-**/x\0fa/b\0", 24);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_DRY_RUN, false);
	eng__proto_set_hex(m, ENG_KEY_NAME, "new", 3);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_DRY_RUN_WHY, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "\x01\x00\x03", 3);
	stream_send(&s, m);
	stream_put(&s, "frame", "pull_filter_dry");
	/* A push with -c: the hello's flag, then each side's hashing after the kept chunks. */
	stream_open(&s);
	m = hello(ENG_JOB_PUSH, true);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	json_object_set_new(json_object_get(m, ENG_KEY_FLAGS), ENG_FLAG_CHECKSUM, json_true());
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(3));
	eng__proto_set_hex(m, ENG_KEY_DST, "img", 3);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_KEPT, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "\x05", 1);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_HASHED, false);
	json_object_set_new(m, ENG_KEY_BYTES, json_integer(2 << 20));
	json_object_set_new(m, ENG_KEY_NS, json_integer(1500000));
	stream_send(&s, m);
	stream_put(&s, "frame", "push_checksum");
	/* A push --dry-run with --partial: the list's answer, then a cut copy's kept chunks. */
	stream_open(&s);
	m = hello(ENG_JOB_PUSH, true);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	json_object_set_new(json_object_get(m, ENG_KEY_FLAGS), ENG_FLAG_DRY_RUN, json_true());
	json_object_set_new(json_object_get(m, ENG_KEY_FLAGS), ENG_FLAG_PARTIAL, json_true());
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(3));
	eng__proto_set_hex(m, ENG_KEY_DST, "big", 3);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_DRY_RUN, false);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_DRY_RUN_WHY, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "\x01", 1);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_KEPT, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "\x03", 1);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_HASHED, false);
	json_object_set_new(m, ENG_KEY_BYTES, json_integer(8192));
	json_object_set_new(m, ENG_KEY_NS, json_integer(20000));
	stream_send(&s, m);
	stream_put(&s, "frame", "push_partial_dry");
	/* A push with --delete: its filter after the list, then the server's "deleted" names. */
	stream_open(&s);
	m = hello(ENG_JOB_PUSH, true);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	json_object_set_new(json_object_get(m, ENG_KEY_FLAGS), ENG_FLAG_DELETE, json_true());
	json_object_set_new(m, ENG_KEY_FILTER_BYTES, json_integer(5));
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(1));
	eng__proto_set_hex(m, ENG_KEY_DST, "in", 2);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_FILTER, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "-*.o\0", 5);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_DELETED, false);
	json_object_set_new(m, ENG_KEY_COUNT, json_integer(2));
	json_object_set_new(m, ENG_KEY_NAMES_BYTES, json_integer(12));
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_DELETED_NAMES, false);
	eng__proto_set_hex(m, ENG_KEY_PART, "data/old/\0x\0", 12);
	stream_send(&s, m);
	stream_put(&s, "frame", "push_delete");
	/* A push that may go on over tcp: the hello's flag, and an error frame whose rails are
	 * down. */
	stream_open(&s);
	m = hello(ENG_JOB_PUSH, true);
	json_object_set_new(m, ENG_KEY_FLAGS, flags(true));
	json_object_set_new(json_object_get(m, ENG_KEY_FLAGS), ENG_FLAG_FALLBACK, json_true());
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer(2));
	eng__proto_set_hex(m, ENG_KEY_DST, "big", 3);
	stream_send(&s, m);
	m = eng__proto_msg(ENG_MSG_ERROR, false);
	json_object_set_new(m, ENG_KEY_MESSAGE, json_string("every rail failed (rxe0:1: ...)"));
	json_object_set_new(m, ENG_KEY_SYMPTOM, json_true());
	json_object_set_new(m, ENG_KEY_RAILS_DOWN, json_true());
	stream_send(&s, m);
	stream_put(&s, "frame", "push_fallback");
	job_steps();
}

/* ---- the manifest of a small tree: a directory, files, a hole, a symlink ---- */

static void tree_file(const char *dir, const char *name, size_t len, off_t hole_at)
{
	char path[4200], buf[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	FUZZ_CHECK(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	FUZZ_CHECK(write(fd, buf, len < sizeof(buf) ? len : sizeof(buf)) >= 0);
	if (hole_at)
		FUZZ_CHECK(pwrite(fd, buf, sizeof(buf), hole_at) == sizeof(buf));
	close(fd);
	fchmodat(AT_FDCWD, path, 0644, 0);
}

static int fixed_time(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	const struct timespec ts[2] = {{1700000000, 0}, {1700000000, 123456789}};

	(void)st;
	(void)type;
	(void)ftw;
	utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static struct io_manifest *tree_manifest(const char *base)
{
	char top[4200], sub[4200];
	const char *src[1] = {top};
	struct io_manifest *m = NULL;
	int err;

	snprintf(top, sizeof(top), "%s/data", base);
	snprintf(sub, sizeof(sub), "%s/sub", top);
	FUZZ_CHECK(mkdir(top, 0755) == 0 && mkdir(sub, 0750) == 0);
	chmod(top, 0755);
	chmod(sub, 0750);
	tree_file(top, "a.txt", 100, 0);
	tree_file(top, "empty", 0, 0);
	tree_file(sub, "sparse.bin", 4096, 1 << 20);
	snprintf(sub, sizeof(sub), "%s/link", top);
	FUZZ_CHECK(symlink("sub/sparse.bin", sub) == 0);
	nftw(top, fixed_time, 16, FTW_PHYS | FTW_DEPTH);
	if ((err = io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m)) != 0)
		die("walking the seed tree", err);
	return m;
}

static void manifests(void)
{
	char base[] = "/tmp/railcp-gen-corpus-XXXXXX";
	struct io_manifest *m, empty = {0};
	struct stream s;
	void *buf;
	size_t len, i;

	FUZZ_CHECK(mkdtemp(base) != NULL);
	m = tree_manifest(base);
	FUZZ_CHECK(io_manifest_encode(m, &buf, &len) == 0);
	put("manifest", "tree.rcpm", buf, len);
	free(buf);
	stream_open(&s);
	FUZZ_CHECK(eng__manifest_send(&ENG_CTL_PLAIN(s.fd[0]), m) == 0);
	stream_put(&s, "manifest", "tree.frames");
	/* a rank's share of a cut file: its first file flagged as a range of it */
	for (i = 0; i < m->n && m->entry[i].type != IO_FILE; i++)
		;
	FUZZ_CHECK(i < m->n);
	m->entry[i].range = true;
	FUZZ_CHECK(io_manifest_encode(m, &buf, &len) == 0);
	put("manifest", "ranges.rcpm", buf, len);
	free(buf);
	FUZZ_CHECK(io_manifest_encode(&empty, &buf, &len) == 0);
	put("manifest", "empty.rcpm", buf, len);
	free(buf);
	stream_open(&s);
	FUZZ_CHECK(eng__manifest_send(&ENG_CTL_PLAIN(s.fd[0]), &empty) == 0);
	stream_put(&s, "manifest", "empty.frames");
	io_manifest_destroy(m);
	fuzz_rm_rf(base);
}

/* ---- chunk records (the format is in fuzz.h) ---- */

struct recs {
	uint8_t b[4096];
	size_t n;
};

static void rec_bytes(struct recs *r, const void *p, size_t n)
{
	FUZZ_CHECK(r->n + n <= sizeof(r->b));
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void rec_op(struct recs *r, unsigned op)
{
	uint8_t b = (uint8_t)op;

	rec_bytes(r, &b, 1);
}

/* A chunk record carrying chunk seq of the bench stream, as eng__bench_fill heads it. */
static void rec_chunk(struct recs *r, unsigned flags, uint8_t slot, uint64_t seq)
{
	static uint8_t data[4096];
	struct eng_source src = {.total = 10ull * 4096 + 100, .chunk = 4096};
	struct eng_chunk_hdr h = {
		.magic = ENG_HDR_MAGIC, .slot = slot, .token = FUZZ_CHUNK_TOKEN, .seq = seq};
	struct io_op op;

	eng__bench_fill(&src, &h, data, &op);
	rec_op(r, FUZZ_REC_CHUNK | flags);
	rec_bytes(r, &slot, 1);
	rec_bytes(r, &h, sizeof(h));
}

static void chunks(void)
{
	struct recs r = {.n = 0};
	uint8_t slot;
	unsigned i;

	/* Bench: the sender posts, the receiver takes honest chunks, credits come back. */
	rec_op(&r, 0);
	rec_op(&r, FUZZ_REC_PUMP);
	rec_op(&r, FUZZ_REC_PUMP | FUZZ_F_STRIPE);
	for (i = 0; i < 4; i++) {
		rec_chunk(&r, FUZZ_F_HONEST_HDR | FUZZ_F_HONEST_DATA, (uint8_t)i, i);
		rec_op(&r, FUZZ_REC_CREDIT);
		slot = (uint8_t)i;
		rec_bytes(&r, &slot, 1);
	}
	rec_op(&r, FUZZ_REC_OTHER | FUZZ_F_OTHER_SEND);
	rec_chunk(&r, 0, 1, 10); /* the short last chunk, with its real header */
	put("chunk_hdr", "bench_honest", r.b, r.n);
	/* Bench, hostile: a wrong slot, a credit twice, an error completion. */
	r.n = 0;
	rec_op(&r, 0);
	rec_op(&r, FUZZ_REC_PUMP);
	rec_chunk(&r, 0, 9, 0);
	rec_op(&r, FUZZ_REC_CREDIT);
	rec_bytes(&r, &(uint8_t){0}, 1);
	rec_op(&r, FUZZ_REC_CREDIT);
	rec_bytes(&r, &(uint8_t){0}, 1);
	rec_op(&r, FUZZ_REC_OTHER | FUZZ_F_OTHER_ERROR | FUZZ_F_OTHER_SENDER);
	put("chunk_hdr", "bench_hostile", r.b, r.n);
	/* Files: honest chunks of the harness's file job, in plan order, then one again. */
	r.n = 0;
	rec_op(&r, 1);
	for (i = 0; i < 6; i++) {
		rec_chunk(&r, FUZZ_F_HONEST_HDR | FUZZ_F_HONEST_DATA | (i % 2 ? FUZZ_F_STRIPE : 0),
			  (uint8_t)(i % 4), i);
		rec_bytes(&r, "chunk-01", 8); /* its first data bytes */
	}
	rec_chunk(&r, FUZZ_F_HONEST_HDR | FUZZ_F_HONEST_DATA, 0, 0);
	put("chunk_hdr", "files_honest", r.b, r.n);
}

/* ---- profiles of the fixtures' machines, a key file, option lists ---- */

/* The header names the fixture by its path: make it tests/fixtures/..., the same anywhere. */
static void strip_dir(char *text, size_t *len)
{
	const char *dir = RAILCP_FIXTURES "/";
	char *at = memmem(text, *len, dir, strlen(dir));
	size_t cut;

	if (!at)
		return;
	memcpy(at, "tests/fixtures/", 15);
	cut = strlen(dir) - 15;
	memmove(at + 15, at + 15 + cut, *len - (size_t)(at + 15 + cut - text));
	*len -= cut;
}

static void profiles(void)
{
	static const char *const xml[] = {"topo_2s_4nic.xml", "topo_gpu8.xml",
					  "topo_1node_dualport.xml"};
	static const char edited[] =
		"# two rails on socket 1, one on socket 0\nqps_per_rail = 2\n"
		"[worker]\n  node = 1   # comment\ncpus=8-11\nrails = mlx5_3:1, mlx5_2:1\n"
		"[worker]\nnode = 0\nrails = mlx5_0:1\nbuffer_mib = 10\n";
	static const char knobs[] =
		"qps_per_rail = 2\ntos = 106\nack_timeout = 14\nretry_count = 3\n"
		"connect_timeout = 5\n[worker]\nnode = 0\n";
	static const char key[] = "p3rBq2m5YkR0yJ1vB8hX4cW9tL6aN7eD0fG2hJ3kL4=\n";
	char path[4200], name[64], tmp[] = "/tmp/railcp-gen-profile-XXXXXX", *text;
	struct topo_machine *m;
	struct topo_plan *p;
	size_t i;
	FILE *f;
	size_t len;
	long flen;
	int fd;

	fd = mkstemp(tmp);
	FUZZ_CHECK(fd >= 0);
	close(fd);
	for (i = 0; i < RCP_ARRAY_SIZE(xml); i++) {
		snprintf(path, sizeof(path), "%s/%s", RAILCP_FIXTURES, xml[i]);
		FUZZ_CHECK(topo_machine_create(path, NULL, &m) == 0);
		FUZZ_CHECK(topo_plan_build(m, NULL, &p) == 0);
		FUZZ_CHECK(topo_profile_save(p, m, tmp) == 0);
		f = fopen(tmp, "r");
		FUZZ_CHECK(f && fseek(f, 0, SEEK_END) == 0 && (flen = ftell(f)) > 0);
		rewind(f);
		len = (size_t)flen;
		text = malloc(len);
		FUZZ_CHECK(text && fread(text, 1, len, f) == len);
		fclose(f);
		strip_dir(text, &len);
		snprintf(name, sizeof(name), "%.*s.profile", (int)(strlen(xml[i]) - 4), xml[i]);
		put("profile", name, text, len);
		free(text);
		topo_plan_destroy(p);
		topo_machine_destroy(m);
	}
	unlink(tmp);
	put("profile", "edited.profile", edited, strlen(edited));
	put("profile", "knobs.profile", knobs, strlen(knobs));
	put("profile", "key", key, strlen(key));
	put("profile", "cpus", "0-7,16-23", 9);
	put("profile", "rails", "mlx5_0:1,mlx5_2", 15);
}

/* ---- a partial file's record and log (io__partial_record_write, _log_open), of fuzz.h's file ----
 */

static void partials(void)
{
	static _Atomic uint64_t bits[1] = {0x5}; /* chunks 0 and 2 landed */
	uint64_t hash[FUZZ_PART_CHUNKS] = {0};
	static uint8_t buf[FUZZ_PART_CHUNK * FUZZ_PART_CHUNKS];
	char dir[4200], data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN],
		path[4300];
	struct io__partial_log lg;
	const struct io__partial_what w = {.path = "f",
					   .last = "f",
					   .chunk = FUZZ_PART_CHUNK,
					   .size = sizeof(buf),
					   .mtime_ns = FUZZ_PART_MTIME,
					   .n_chunks = FUZZ_PART_CHUNKS,
					   .bits = bits,
					   .hash = hash};
	struct io_extent ext = {0, sizeof(buf)};
	const struct io_entry e = {.path = "f",
				   .type = IO_FILE,
				   .size = sizeof(buf),
				   .mtime_ns = FUZZ_PART_MTIME,
				   .ext = &ext,
				   .n_ext = 1,
				   .data_bytes = sizeof(buf)};
	struct io_root *root;
	struct io_partial *p;
	uint8_t rbuf[4096];
	unsigned k;
	ssize_t n;
	int pfd;

	fuzz_part_data(buf);
	for (k = 0; k < FUZZ_PART_CHUNKS; k++)
		hash[k] = io_chunk_hash(buf + k * FUZZ_PART_CHUNK, FUZZ_PART_CHUNK);
	snprintf(dir, sizeof(dir), "%s/partial", fuzz_tmpdir());
	FUZZ_CHECK(mkdir(dir, 0755) == 0);
	pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(pfd >= 0 && io__partial_record_write(pfd, &w) == 0);
	close(pfd);
	io__partial_names("f", data, rec, log);
	snprintf(path, sizeof(path), "%s/%s", dir, rec);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(pfd >= 0 && (n = read(pfd, rbuf, sizeof(rbuf))) > 0);
	close(pfd);
	put("partial", "chunks_0_2", rbuf, (size_t)n);
	/* The seed is worth its name: beside its data file it holds chunks 0 and 2. */
	snprintf(path, sizeof(path), "%s/%s", dir, data);
	fuzz_write_file(path, buf, sizeof(buf));
	FUZZ_CHECK(io_root_open(dir, 0, &root) == 0);
	p = io_root_partial(root, &e, FUZZ_PART_CHUNK);
	FUZZ_CHECK(io_partial_has(p, 0) && !io_partial_has(p, 1) && io_partial_has(p, 2));
	io_partial_destroy(p);
	/* The log of the same chunks, alone (the record gone): the same two held. */
	snprintf(path, sizeof(path), "%s/%s", dir, rec);
	FUZZ_CHECK(unlink(path) == 0);
	pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(pfd >= 0 && io__partial_log_open(pfd, &w, false, &lg) == 0);
	close(pfd);
	io__partial_log_put(&lg, 0, hash[0]);
	io__partial_log_put(&lg, 2, hash[2]);
	io__partial_log_close(&lg);
	snprintf(path, sizeof(path), "%s/%s", dir, log);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(pfd >= 0 && (n = read(pfd, rbuf, sizeof(rbuf))) > 0);
	close(pfd);
	put("partial", "log_0_2", rbuf, (size_t)n);
	p = io_root_partial(root, &e, FUZZ_PART_CHUNK);
	FUZZ_CHECK(io_partial_has(p, 0) && !io_partial_has(p, 1) && io_partial_has(p, 2));
	io_partial_destroy(p);
	io_root_close(root);
}

/* ---- names and hex ---- */

static void names(void)
{
	static const char *const seeds[][2] = {
		{"plain", "dir/sub/file.txt"},
		{"escape", "../etc/passwd"},
		{"tmp", "a/.railcp-tmp-0123456789abcdef/x"},
		{"copy", "backup/\nsrc/dir/.\nfile\nsub/..\n"},
		{"control", "name\x1b[31m\\with\tcontrols\x7f\xff"},
		{"pull", "dst\ndata\ndata/a\nother\n"},
	};
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(seeds); i++)
		put("names", seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
}

static void hexes(void)
{
	static const char *const seeds[][2] = {
		{"name", "6261636b75702f746f646179"},
		{"nul", "610062"},
		{"upper", "ABCDEF"},
		{"json", "\"2f6574632f706173737764\""},
		{"token", "7777777777777777777777777777777777777777777777777777777777777777"},
	};
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(seeds); i++)
		put("hex", seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR (tests/fuzz/corpus)\n");
		return 2;
	}
	out_dir = argv[1];
	mkdir(out_dir, 0755);
	umask(022);
	frames();
	manifests();
	chunks();
	profiles();
	names();
	hexes();
	partials();
	return 0;
}
