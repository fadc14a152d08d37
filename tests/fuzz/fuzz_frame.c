/*
 * fuzz_frame.c - the control connection as a stranger feeds it: the input is
 * the byte stream a peer sends on the control connection (4-byte big-endian
 * lengths and JSON frames).
 *
 * As a server sees it: the first frame is read as a hello (the pre-auth frame
 * limit, eng__proto_recv_max), checked (eng__proto_check_hello), its terms
 * taken as server.c takes them (eng__hello_terms, with and without a root;
 * the destination's name in hex; its transport, eng__transport_pick; a railcp-mpi job's ranges,
 * eng__ranges_terms) and its stripes paired with two rails of ours (eng__stripes_pair,
 * eng__stripes_fit, eng__stripes_unpair, then eng__slots_per_stripe); then both halves of a
 * server's authentication (eng__session_auth keyless and keyed: the keyed one sends a challenge and
 * reads the next frame as the proof). As a client sees what follows: every further frame is read (a
 * peer's "error" frame becomes its sentence) and its fields fetched as the ends fetch those of a
 * pull's sources and its filter (server.c), a dry run's answer, a welcome's terms (client.c:
 * eng__welcome_terms), done and result (session.c); the frames as the sender of a copy with
 * --update reads the receiver's map of what it holds (eng__map_recv, "skip" and "kept"). Last, the
 * same frames sealed with a known key (each given its right tag) are read by a sealed connection,
 * then the raw input is read by one too, whose tags fail.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "engine/session/session_int.h"
#include "tests/fuzz/fuzz.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define FRAME_TIMEOUT_MS 1000
#define FRAMES_AFTER_HELLO 16

static struct eng_auth_key key;
static struct topo_plan plan;
static struct eng_rail_addr ours[2];

static void rail(struct eng_rail_addr *a, const char *ip, unsigned prefix)
{
	memset(a, 0, sizeof(*a));
	a->addr.in.sin_family = AF_INET;
	FUZZ_CHECK(inet_pton(AF_INET, ip, &a->addr.in.sin_addr) == 1);
	a->prefix = prefix;
	snprintf(a->text, sizeof(a->text), "%s", ip);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	unsigned r;

	(void)argc;
	(void)argv;
	key.len = 32;
	memset(key.bytes, 0x5a, key.len);
	snprintf(key.origin, sizeof(key.origin), "fuzz");
	/* A server: two rails on two subnets, one worker of 4 MiB (2 stripes of 1 MiB chunks). */
	plan.n_workers = 1;
	plan.worker[0].buffer_bytes = 4u << 20;
	plan.n_rails = 2;
	for (r = 0; r < 2; r++) {
		snprintf(plan.rail[r].dev, sizeof(plan.rail[r].dev), "loop%u", r);
		plan.rail[r].port = 1;
	}
	rail(&ours[0], "198.18.0.1", 24);
	rail(&ours[1], "198.18.1.1", 24);
	return 0;
}

/* A name in hex, as a server takes a destination or a source. */
static void name_field(const json_t *v, const char *what)
{
	char *name = NULL, esc[IO_ESC_MAX];

	if (eng__proto_name(v, what, &name) != 0) {
		FUZZ_CHECK(name == NULL);
		return;
	}
	FUZZ_CHECK(strlen(name) < IO_PATH_MAX);
	io_path_printable(name, esc);
	FUZZ_CHECK(strlen(esc) < IO_ESC_MAX);
	free(name);
}

/* The stripes, paired with our rails, as many as our buffer holds; the slots each then gets. */
static void stripes_field(const json_t *stripes, uint64_t chunk)
{
	unsigned peer[ENG_MAX_STRIPES], n_slots = 0, r, qps = 0, dropped = 0, paired;
	bool trimmed[ENG_MAX_STRIPES];
	struct topo_plan p = plan;
	size_t i, n = json_array_size(stripes);

	if (eng__stripes_pair(stripes, ours, &p, NULL, peer) != 0)
		return;
	FUZZ_CHECK(n >= 1 && n <= ENG_MAX_STRIPES);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(peer[i] < p.n_rails);
	for (r = 0; r < p.n_rails; r++)
		qps += p.rail[r].qps;
	FUZZ_CHECK(qps == n);
	if (chunk < ENG_CHUNK_MIN || chunk > ENG_CHUNK_MAX || chunk % ENG_CHUNK_MIN)
		return;
	/* As many as the buffer holds: those left give every one 2 slots at least. */
	if (eng__stripes_fit(&p, (uint32_t)chunk, "the server", &dropped) != 0)
		return;
	eng__stripes_unpair(&p, stripes, peer, trimmed);
	for (i = 0, paired = 0; i < n; i++) {
		FUZZ_CHECK(!trimmed[i] || peer[i] == ENG_NO_RAIL);
		paired += peer[i] != ENG_NO_RAIL;
	}
	for (r = 0, qps = 0; r < p.n_rails; r++)
		qps += p.rail[r].qps;
	FUZZ_CHECK(qps == paired && paired + dropped == n && paired >= 1);
	FUZZ_CHECK(eng__slots_per_stripe(&p, (uint32_t)chunk, "the server", &n_slots) == 0);
	FUZZ_CHECK(n_slots >= 2 && n_slots <= ENG_MAX_SLOTS);
}

/*
 * The transport a server gives the hello (agree.c), serving rdma (with tcp
 * too, or not) or tcp: what it picks is what the client asked for, and
 * only a tcp server tells a client on auto to ask again.
 */
static void hello_transport(const json_t *hello)
{
	const char *want = json_string_value(json_object_get(hello, ENG_KEY_TRANSPORT));
	static const char *const have[] = {"rdma", "rdma", "tcp"};
	unsigned i;

	for (i = 0; i < 3; i++) {
		bool tcp = false;
		int err = eng__transport_pick(hello, have[i], i == 1, &tcp);

		if (err == 0)
			FUZZ_CHECK(tcp == (want && !strcmp(want, "tcp")));
		else
			FUZZ_CHECK(err == -EPROTO || (err == ENG_ERR_OTHER_TRANSPORT && i == 2));
	}
}

/*
 * A railcp-mpi job's ranges as a push's server takes them (ranges.c): a job
 * and a step only together with a job, "dirs_last" only with a job and no
 * step, against a list of no ranges and against one with a range.
 */
static void hello_ranges(const json_t *hello)
{
	struct io_extent x = {0, 4096};
	struct io_entry e = {
		.path = "big", .type = IO_FILE, .size = 8192, .ext = &x, .n_ext = 1, .range = true};
	struct io_manifest none = {0}, one = {.entry = &e, .n = 1, .n_files = 1};
	enum eng_range_step step;
	uint64_t job;

	if (eng__ranges_terms(hello, &none, &job, &step) == 0)
		FUZZ_CHECK((job || step == ENG_RANGES_LAND) &&
			   (!eng__ranges_dirs_last(hello) || (job && step == ENG_RANGES_LAND)));
	if (eng__ranges_terms(hello, &one, &job, &step) == 0)
		FUZZ_CHECK(job && step == ENG_RANGES_LAND);
}

/* What a server takes from a hello (server.c: hello_check, push_prepare, session_setup). */
static void hello_fields(const json_t *hello)
{
	const char *job = json_string_value(json_object_get(hello, ENG_KEY_JOB));
	struct eng_hello_terms t;
	char esc[ENG_PROTO_ESC_SHORT];
	uint64_t chunk = 0, v;

	rcp_printable(job ? job : "?", esc, sizeof(esc));
	FUZZ_CHECK(strlen(esc) < sizeof(esc));
	/* A server without --root takes bench only; the terms it takes are in bounds. */
	if (eng__hello_terms(hello, false, &t) == 0)
		FUZZ_CHECK(!strcmp(t.kind, ENG_JOB_BENCH) && t.bench_bytes > 0);
	if (eng__hello_terms(hello, true, &t) == 0) {
		FUZZ_CHECK(t.chunk >= ENG_CHUNK_MIN && t.chunk <= ENG_CHUNK_MAX &&
			   t.chunk % ENG_CHUNK_MIN == 0);
		FUZZ_CHECK(t.bench_bytes <= ENG_MAX_BENCH_BYTES);
		FUZZ_CHECK(!strcmp(t.kind, ENG_JOB_BENCH) == (t.bench_bytes > 0));
		FUZZ_CHECK(t.role == (strcmp(t.kind, ENG_JOB_PULL) ? ENG_RECEIVER : ENG_SENDER));
		FUZZ_CHECK(json_array_size(json_object_get(hello, ENG_KEY_STRIPES)) >= 1);
	} else {
		FUZZ_CHECK(t.kind == NULL);
	}
	eng__proto_get_u64(hello, ENG_KEY_CHUNK, &chunk);
	eng__proto_get_u64(hello, ENG_KEY_CHUNKS, &v);
	eng__proto_get_u64(hello, ENG_KEY_SLOTS, &v);
	name_field(json_object_get(hello, ENG_KEY_DST), "a destination");
	stripes_field(json_object_get(hello, ENG_KEY_STRIPES), chunk);
	hello_transport(hello);
	hello_ranges(hello);
}

/* A pull's sources, as the server reads them (server.c: pull_sources). */
static void sources_field(const json_t *m)
{
	json_t *src = json_object_get(m, ENG_KEY_SRC);
	size_t i;

	for (i = 0; json_is_array(src) && i < json_array_size(src) && i < ENG_MAX_PULL_SOURCES; i++)
		name_field(json_array_get(src, i), "a source");
}

/*
 * A pull's filter as the server decodes it (server.c: pull_filter), from
 * one "filter" frame's part, and a dry run's answer as a client takes it
 * (client.c: push_dry).
 */
static void filter_fields(const json_t *m)
{
	struct io_filter *f = NULL;
	char *part = NULL, *name = NULL;
	size_t n = 0;
	uint64_t v;

	eng__proto_get_u64(m, ENG_KEY_FILTER_BYTES, &v);
	if (json_object_get(m, ENG_KEY_NAME) &&
	    eng__proto_name(json_object_get(m, ENG_KEY_NAME), "a new name", &name) == 0)
		FUZZ_CHECK(name != NULL);
	free(name);
	if (eng__proto_hex_value(json_object_get(m, ENG_KEY_PART), "a filter part",
				 ENG_MANIFEST_PART, &part, &n) != 0)
		return;
	if (io_filter_decode(part, n, &f) == 0) {
		FUZZ_CHECK(f != NULL);
		(void)io_filter_excluded(f, "a/b/c.o", false);
		(void)io_filter_excluded(f, "keep", true);
	}
	io_filter_destroy(f);
	free(part);
}

/*
 * What a client takes from a welcome (client.c: job_setup, stripe_connect):
 * its terms keyed and not, for a bench and for a copy of 5 chunks, with a
 * budget of 16 slots; what it accepts is within that budget.
 */
static void welcome_fields(const json_t *m)
{
	static const unsigned max_slots = 16;
	json_t *stripes = json_object_get(m, ENG_KEY_STRIPES);
	uint8_t tokens[ENG_SEAL_KEY_LEN];
	char esc[ENG_PROTO_ESC_SHORT];
	uint64_t v, want = 5, n_slots;
	size_t i;

	eng__proto_check_hello(m);
	for (i = 0; i < 4; i++) {
		n_slots = 0;
		if (eng__welcome_terms(m, max_slots, i & 1, i & 2 ? &want : NULL, &n_slots,
				       tokens) == 0)
			FUZZ_CHECK(n_slots >= 2 && n_slots <= max_slots);
		else
			FUZZ_CHECK(n_slots == 0);
	}
	eng__proto_get_u64(m, ENG_KEY_SLOT_SIZE, &v);
	for (i = 0; json_is_array(stripes) && i < json_array_size(stripes); i++) {
		json_t *w = json_array_get(stripes, i);
		const char *addr = json_string_value(json_object_get(w, ENG_KEY_ADDR));
		const char *rail_name = json_string_value(json_object_get(w, ENG_KEY_RAIL));
		struct in_addr a;

		eng__proto_get_u64(w, ENG_KEY_PORT, &v);
		eng__proto_get_u64(w, ENG_KEY_STRIPE, &v);
		if (addr)
			(void)inet_pton(AF_INET, addr, &a);
		if (rail_name)
			FUZZ_CHECK(strlen(rcp_printable(rail_name, esc, sizeof(esc))) <
				   sizeof(esc));
	}
}

/* What either end reads of "done" and "result" (session.c). */
static void end_fields(const json_t *m)
{
	uint64_t v;

	eng__proto_get_u64(m, ENG_KEY_CHUNKS, &v);
	eng__proto_get_u64(m, ENG_KEY_BYTES, &v);
	eng__proto_get_u64(m, ENG_KEY_FILES, &v);
	(void)json_real_value(json_object_get(m, ENG_KEY_SECONDS));
}

/* Every frame left on c, as a client takes them. */
static void frames_after(struct eng_ctl *c)
{
	int i;

	for (i = 0; i < FRAMES_AFTER_HELLO; i++) {
		json_t *m = NULL;
		int err = eng__proto_recv(c, FRAME_TIMEOUT_MS, NULL, &m);

		if (err) {
			FUZZ_CHECK(m == NULL && err < 0);
			FUZZ_CHECK(rcp_err_msg(err) != NULL);
			return;
		}
		FUZZ_CHECK(json_is_object(m));
		sources_field(m);
		filter_fields(m);
		welcome_fields(m);
		end_fields(m);
		json_decref(m);
	}
}

static void as_server(const uint8_t *data, size_t size)
{
	struct eng_session s;
	json_t *hello = NULL;
	int fd, peer, err;

	if (fuzz_feed(data, size, &fd, &peer) != 0)
		return;
	eng__session_init(&s, ENG_SERVER, NULL, fd, FRAME_TIMEOUT_MS);
	s.auth_end_ns = rcp_now_ns() + (uint64_t)FRAME_TIMEOUT_MS * 1000000u;
	err = eng__proto_recv_max(&s.ctl, FRAME_TIMEOUT_MS, ENG_MSG_HELLO, ENG_PROTO_MAX_HELLO,
				  &hello);
	if (!err) {
		FUZZ_CHECK(hello != NULL);
		eng__proto_check_hello(hello);
		hello_fields(hello);
		s.key = NULL;
		eng__session_auth(&s, hello);
		s.key = &key;
		err = eng__session_auth(&s, hello);
		/* Nobody can forge the proof of a key they do not have. */
		FUZZ_CHECK(err != 0 && !s.ctl.sealed);
		json_decref(hello);
	}
	frames_after(&s.ctl);
	close(fd);
	close(peer);
}

/* The input's frames, each with the tag a peer holding key_in would give it. */
static uint8_t *sealed_copy(const uint8_t *data, size_t size, const uint8_t *k, size_t *len_out)
{
	uint8_t *out = malloc(size + size / 4 * ENG_SEAL_TAG_LEN + ENG_SEAL_TAG_LEN);
	size_t in = 0, o = 0;
	uint64_t seq = 0;

	if (!out)
		return NULL;
	while (size - in >= 4) {
		uint32_t len, be;

		memcpy(&be, data + in, 4);
		len = ntohl(be);
		if (len > ENG_PROTO_MAX_FRAME || len > size - in - 4)
			break;
		be = htonl(len + ENG_SEAL_TAG_LEN);
		memcpy(out + o, &be, 4);
		memcpy(out + o + 4, data + in + 4, len);
		FUZZ_CHECK(eng__seal_tag(k, seq++, data + in + 4, len, out + o + 4 + len) == 0);
		o += 4 + len + ENG_SEAL_TAG_LEN;
		in += 4 + len;
	}
	*len_out = o;
	return out;
}

static void as_sealed(const uint8_t *data, size_t size, bool tagged)
{
	struct eng_ctl c = {.sealed = true};
	uint8_t *copy = NULL;
	size_t len = size;
	int peer;

	memset(c.key_in, 0xa5, sizeof(c.key_in));
	memset(c.key_out, 0x5a, sizeof(c.key_out));
	if (tagged && !(copy = sealed_copy(data, size, c.key_in, &len)))
		return;
	if (fuzz_feed(tagged ? copy : data, len, &c.fd, &peer) == 0) {
		frames_after(&c);
		close(c.fd);
		close(peer);
	}
	free(copy);
}

/*
 * The frames as the sender of a copy with --update reads the receiver's map
 * of n entries: on success no bit is set past entry n - 1.
 */
static void as_update_sender(const uint8_t *data, size_t size, size_t n)
{
	size_t len = n / 8 + 1, k;
	uint8_t *bits = malloc(len);
	struct eng_ctl c = {0};
	int peer;

	if (!bits)
		return;
	if (fuzz_feed(data, size, &c.fd, &peer) == 0) {
		if (eng__map_recv(&c, FRAME_TIMEOUT_MS, n % 2 ? ENG_MSG_SKIP : ENG_MSG_KEPT, n,
				  bits, len) == 0)
			for (k = n; k < len * 8; k++)
				FUZZ_CHECK(!(bits[k / 8] >> (k % 8) & 1));
		close(c.fd);
		close(peer);
	}
	free(bits);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_server(data, size);
	as_update_sender(data, size, 3);
	as_update_sender(data, size, 8);
	as_update_sender(data, size, 100);
	as_sealed(data, size, true);
	as_sealed(data, size, false);
	return 0;
}
