/*
 * session_harness.c - the functions of session_harness.h: whole sessions
 * over the loopback transport, a scratch directory, trees to copy and
 * compare, and the control protocol by hand. Compiled once, linked into
 * each test that includes the header and into bench_datapath.
 *
 * Threading: as the header says; the group's configuration directory is
 * this file's only state.
 */
#include "session_harness.h"

void plan_make(struct topo_plan *p, const unsigned *num, unsigned n, unsigned qps,
	       unsigned n_workers, uint64_t budget)
{
	unsigned i, w;

	memset(p, 0, sizeof(*p));
	p->qps_per_rail = qps;
	p->n_workers = n_workers;
	for (w = 0; w < n_workers; w++) {
		p->worker[w].node = (int)w;
		p->worker[w].buffer_bytes = budget;
		p->buffer_total += budget;
	}
	for (i = 0; i < n; i++) {
		struct topo_plan_rail *r = &p->rail[p->n_rails++];

		w = i * n_workers / n;
		snprintf(r->dev, sizeof(r->dev), "loop%u", num[i]);
		r->port = 1;
		r->worker = w;
		r->qps = qps;
		r->numa_node = (int)w;
		if (p->worker[w].n_rails++ == 0)
			p->worker[w].first_rail = i;
	}
}

void plan_rails_as(struct topo_plan *p, const char *kind)
{
	unsigned r, n;

	for (r = 0; r < p->n_rails; r++) {
		assert_int_equal(sscanf(p->rail[r].dev, "loop%u", &n), 1);
		snprintf(p->rail[r].dev, sizeof(p->rail[r].dev), "%s%u", kind, n);
	}
}

void server_ready(const char *addr, uint16_t port, const char *auth, void *ctx)
{
	struct server *s = ctx;

	(void)addr;
	(void)auth;
	atomic_store(&s->port, port);
}

void *server_main(void *arg)
{
	struct server *s = arg;

	s->err = eng__serve(&s->o, s->tr, true);
	snprintf(s->msg, sizeof(s->msg), "%s", s->err ? rcp_err_msg(s->err) : "");
	atomic_store(&s->ended, true);
	return NULL;
}

void server_start(struct server *s, const struct eng_transport *tr, const char *root,
		  const char *key_file)
{
	s->tr = tr ? tr : eng__transport_loopback();
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	assert_true(s->stop_fd >= 0);
	s->o = (struct eng_serve_opts){.listen_addr = "127.0.0.1",
				       .key_file = key_file,
				       .root = root,
				       .plan = &s->plan,
				       .plan_tcp = s->plan_tcp,
				       .timeout_ms = s->timeout_ms ? s->timeout_ms : TIMEOUT_MS,
				       .max_sessions = s->max_sessions ? s->max_sessions : 4,
				       .max_memory = s->max_memory,
				       .qp = s->qp,
				       .no_failover = s->no_failover,
				       .once = s->once,
				       .key = s->key,
				       .names = s->names,
				       .any_name = s->any_name,
				       .stop_fd = s->stop_fd,
				       .ready = server_ready,
				       .ctx = s,
				       .session_end = s->session_end,
				       .session_queue = s->session_queue};
	atomic_store(&s->port, 0);
	atomic_store(&s->ended, false);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
	s->running = true;
	assert_true(WAIT_FOR(atomic_load(&s->port) != 0 || atomic_load(&s->ended)));
	assert_int_not_equal(atomic_load(&s->port), 0);
}

int server_stop(struct server *s)
{
	uint64_t one = 1;

	if (!s->running)
		return 0;
	assert_int_equal(write(s->stop_fd, &one, sizeof(one)), sizeof(one));
	pthread_join(s->thread, NULL);
	close(s->stop_fd);
	s->running = false;
	return s->err;
}

struct eng_client_opts client_opts(const struct server *s, const struct topo_plan *plan,
				   uint32_t chunk, const char *key_file)
{
	return (struct eng_client_opts){.host = "127.0.0.1",
					.port = (uint16_t)atomic_load(&s->port),
					.chunk = chunk,
					.plan = plan,
					.timeout_ms = TIMEOUT_MS,
					.key_file = key_file,
					.tr = eng__transport_loopback()};
}

int bench(const struct server *s, const struct topo_plan *plan, uint64_t bytes, uint32_t chunk,
	  const char *key_file, struct eng_report *r)
{
	struct eng_client_opts o = client_opts(s, plan, chunk, key_file);

	o.bench_bytes = bytes;
	return eng__client_run(&o, r);
}

void bench_ok(const struct server *s, const char *key_file)
{
	static const unsigned one[] = {1};
	struct topo_plan plan;
	struct eng_report r;
	int err;

	plan_make(&plan, one, 1, 1, 1, BUDGET);
	err = bench(s, &plan, 256 * KiB, 64 * KiB, key_file, &r);
	if (err)
		print_error("bench: %s\n", rcp_err_msg(err));
	assert_int_equal(err, 0);
	assert_int_equal(r.bytes, 256 * KiB);
}

struct eng_copy_opts copy_opts(enum eng_copy_dir dir, const char *const *src, size_t n_src,
			       const char *dst)
{
	return (struct eng_copy_opts){.dir = dir,
				      .src = src,
				      .n_src = n_src,
				      .dst = dst,
				      .recursive = true,
				      .chunk = 4 * KiB,
				      .timeout_ms = TIMEOUT_MS};
}

int copy(const struct server *s, const struct topo_plan *plan, const struct eng_copy_opts *cp,
	 const struct eng_transport *tr, struct eng_report *r)
{
	struct eng_client_opts o = client_opts(s, plan, cp->chunk, NULL);

	o.copy = cp;
	if (tr)
		o.tr = tr;
	return eng__client_run(&o, r);
}

json_t *stripe_json(const char *addr, json_int_t prefix)
{
	return json_pack("{s:s, s:I, s:s}", "addr", addr, "prefix", prefix, "rail", "loop1");
}

json_t *hello_bench(unsigned n, json_int_t chunk)
{
	json_t *st = json_array();
	unsigned i;

	for (i = 0; i < n; i++)
		json_array_append_new(st, stripe_json("198.18.1.1", 24));
	return json_pack("{s:s, s:s, s:i, s:s, s:I, s:I, s:o}", "type", "hello", "proto", "railcp",
			 "version", ENG_PROTO_VERSION, "job", "bench", "chunk", chunk, "bytes",
			 (json_int_t)MiB, "stripes", st);
}

int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	snprintf(fx->base, sizeof(fx->base), "/tmp/railcp-session-XXXXXX");
	assert_non_null(mkdtemp(fx->base));
	*state = fx;
	return 0;
}

int fx_teardown(void **state)
{
	struct fx *fx = *state;

	server_stop(&fx->srv);
	t_rm_rf(fx->base);
	free(fx);
	return 0;
}

void fx_dir(const struct fx *fx, const char *rel, char out[4096])
{
	t_path(out, fx->base, rel);
	assert_int_equal(mkdir(out, 0755), 0);
}

void fx_key(const struct fx *fx, const char *name, const char *key, char out[4096])
{
	t_path(out, fx->base, name);
	t_write(fx->base, name, key, strlen(key), 0600);
}

void pattern_write(const char *base, const char *rel, size_t len, uint32_t seed)
{
	uint8_t *buf = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	t_write(base, rel, buf, len, 0644);
	free(buf);
}

void tree_make(const char *base)
{
	static const char *const dirs[] = {"top", "top/sub", "top/sub/deeper", "top/void"};
	char p[4096];
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(dirs); i++) {
		t_path(p, base, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	pattern_write(base, "top/a.txt", 100, 1);
	pattern_write(base, "top/empty", 0, 2);
	pattern_write(base, "top/sub/big.bin", 300 * KiB + 1234, 3);
	pattern_write(base, "top/sub/deeper/c.txt", 5000, 4);
}

void file_same(const char *a, const char *b, off_t size)
{
	uint8_t *da = malloc(size + 1), *db = malloc(size + 1);
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);

	assert_true(fa >= 0 && fb >= 0 && da && db);
	assert_int_equal(read(fa, da, size + 1), size);
	assert_int_equal(read(fb, db, size + 1), size);
	assert_memory_equal(da, db, size);
	close(fa);
	close(fb);
	free(da);
	free(db);
}

void tree_same(const char *a, const char *b)
{
	char pa[4096], pb[4096];
	struct dirent *d;
	struct stat sa, sb;
	size_t na = 0, nb = 0;
	DIR *dh = opendir(a);

	assert_non_null(dh);
	while ((d = readdir(dh))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		na++;
		t_path(pa, a, d->d_name);
		t_path(pb, b, d->d_name);
		assert_int_equal(lstat(pa, &sa), 0);
		if (lstat(pb, &sb) != 0)
			fail_msg("%s is missing", pb);
		assert_int_equal(sa.st_mode & S_IFMT, sb.st_mode & S_IFMT);
		if (S_ISDIR(sa.st_mode)) {
			tree_same(pa, pb);
		} else if (S_ISLNK(sa.st_mode)) {
			char ta[4096], tb[4096];
			ssize_t la = readlink(pa, ta, sizeof(ta)),
				lb = readlink(pb, tb, sizeof(tb));

			assert_true(la >= 0 && la == lb);
			assert_memory_equal(ta, tb, (size_t)la);
		} else {
			assert_int_equal(sa.st_size, sb.st_size);
			file_same(pa, pb, sa.st_size);
		}
	}
	closedir(dh);
	dh = opendir(b);
	assert_non_null(dh);
	while ((d = readdir(dh)))
		nb += strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
	closedir(dh);
	assert_int_equal(na, nb);
}

bool dir_empty(const char *dir)
{
	struct dirent *d;
	size_t n = 0;
	DIR *dh = opendir(dir);

	assert_non_null(dh);
	while ((d = readdir(dh)))
		n += strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
	closedir(dh);
	return n == 0;
}

int push_one(struct fx *fx, struct push1 *p)
{
	static const unsigned loop1[] = {1};
	const unsigned *rails = p->rails ? p->rails : loop1;
	unsigned n_rails = p->rails ? p->n_rails : 1;
	const char *name = p->name ? p->name : "big";
	const char *srcs[] = {p->file};
	struct eng_copy_opts cp;

	t_path(p->src, fx->base, "src");
	t_path(p->root, fx->base, "root");
	t_path(p->file, p->src, name);
	assert_int_equal(mkdir(p->src, 0755), 0);
	assert_int_equal(mkdir(p->root, 0755), 0);
	pattern_write(p->src, name, p->bytes, p->seed);
	plan_make(&fx->srv.plan, rails, n_rails, 1, 1, BUDGET);
	fx->srv.plan.helpers = p->srv_helpers;
	plan_make(&p->plan, rails, n_rails, 1, 1, BUDGET);
	p->plan.helpers = p->helpers;
	if (p->rails_as) {
		plan_rails_as(&fx->srv.plan, p->rails_as);
		plan_rails_as(&p->plan, p->rails_as);
	}
	server_start(&fx->srv, p->srv_tr, p->root, NULL);
	cp = copy_opts(ENG_PUSH, srcs, 1, "");
	cp.cancel = p->cancel;
	memset(&p->r, 0, sizeof(p->r));
	return copy(&fx->srv, &p->plan, &cp, p->tr, &p->r);
}

void push_pull_bench_over(struct fx *fx, const char *kind, uint32_t seed)
{
	static const unsigned rails[] = {1, 2};
	const size_t bytes = 1 * MiB + 4321;
	struct push1 p = {
		.bytes = bytes, .seed = seed, .rails = rails, .n_rails = 2, .rails_as = kind};
	char got[4096], back[4096], name[64];
	const char *pull_src[] = {"big"};
	struct eng_copy_opts cp;
	uint64_t sum = 0;
	unsigned i;

	assert_int_equal(push_one(fx, &p), 0);
	t_path(got, p.root, "big");
	file_same(p.file, got, (off_t)bytes);
	assert_int_equal(p.r.n_rails, 2);
	for (i = 0; i < p.r.n_rails; i++) {
		snprintf(name, sizeof(name), "%s%u:1", kind, rails[i]);
		assert_string_equal(p.r.rail[i].name, name);
		assert_string_equal(p.r.rail[i].peer, name);
		sum += p.r.rail[i].bytes;
	}
	assert_int_equal(sum, bytes);
	fx_dir(fx, "back", back);
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, NULL, &p.r), 0);
	t_path(got, back, "big");
	file_same(p.file, got, (off_t)bytes);
	/* the server still serves over them (and its pull's session has ended before the stop) */
	assert_int_equal(bench(&fx->srv, &p.plan, 256 * KiB, 64 * KiB, NULL, &p.r), 0);
	assert_int_equal(p.r.bytes, 256 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int raw_connect(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

int raw_connect_from(uint16_t port, const char *from)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in src = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

void raw_write(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

void raw_frame(int fd, const void *body, uint32_t len)
{
	uint32_t be = htonl(len);

	raw_write(fd, &be, sizeof(be));
	raw_write(fd, body, len);
}

void raw_json(int fd, json_t *m)
{
	char *text = json_dumps(m, JSON_COMPACT);

	assert_non_null(text);
	raw_frame(fd, text, (uint32_t)strlen(text));
	free(text);
	json_decref(m);
}

bool raw_read(int fd, void *buf, size_t len)
{
	uint64_t end = rcp_now_ns() + 10000000000ull;
	char *p = buf;

	while (len > 0 && rcp_now_ns() < end) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return len == 0;
}

json_t *dialed_json(uint16_t port)
{
	return json_pack("{s:s, s:i}", ENG_KEY_HOST, "127.0.0.1", ENG_KEY_PORT, (int)port);
}

json_t *raw_recv(int fd)
{
	uint32_t be, len;
	json_t *m = NULL;
	char *buf;

	if (!raw_read(fd, &be, sizeof(be)))
		return NULL;
	len = ntohl(be);
	if (len == 0 || len > ENG_PROTO_MAX_FRAME || !(buf = malloc(len)))
		return NULL;
	if (raw_read(fd, buf, len))
		m = json_loadb(buf, len, 0, NULL);
	free(buf);
	return m;
}

static void *log_tap_main(void *arg)
{
	struct log_tap *t = arg;
	char line[1024];

	while (fgets(line, sizeof(line), t->in)) /* to the end: stderr never blocks */
		t->line(line, t->ctx);
	return NULL;
}

void log_tap_start(struct log_tap *t, void (*line)(const char *line, void *ctx), void *ctx)
{
	int pfd[2];

	t->line = line;
	t->ctx = ctx;
	assert_int_equal(pipe(pfd), 0);
	assert_non_null(t->in = fdopen(pfd[0], "r"));
	t->saved = dup(STDERR_FILENO);
	assert_true(t->saved >= 0);
	assert_int_equal(dup2(pfd[1], STDERR_FILENO), STDERR_FILENO);
	close(pfd[1]);
	assert_int_equal(pthread_create(&t->thread, NULL, log_tap_main, t), 0);
}

void log_tap_stop(struct log_tap *t)
{
	/*
	 * The pipe's last writer goes: the tap reads to its end. t->saved is
	 * closed only after that, as a tap's line function may still write
	 * there (test_session_queue: a dprintf to a descriptor closed under
	 * it failed, and glibc's vdprintf then lost its buffer, which ASan's
	 * leak check reported about once in ten runs under load).
	 */
	dup2(t->saved, STDERR_FILENO);
	pthread_join(t->thread, NULL);
	close(t->saved);
	fclose(t->in);
}

int raw_push_ready(uint16_t port, const char *dst)
{
	int fd = raw_connect(port);
	json_t *hello = hello_bench(1, 4096), *ready;

	json_object_set_new(hello, "job", json_string("push"));
	json_object_set_new(hello, "chunks", json_integer(0));
	json_object_set_new(hello, "slots", json_integer(4));
	json_object_set_new(hello, "dst", eng__proto_hex(dst, strlen(dst)));
	json_object_set_new(hello, "flags", json_pack("{s:b}", "recursive", 1));
	json_object_set_new(hello, ENG_KEY_SERVER, dialed_json(port));
	raw_json(fd, hello);
	ready = raw_recv(fd);
	assert_non_null(ready);
	assert_string_equal(json_string_value(json_object_get(ready, "type")) ?: "?", "ready");
	json_decref(ready);
	return fd;
}

bool raw_closed(int fd)
{
	char c;

	return !raw_read(fd, &c, 1);
}

void assert_refused(int fd, const char *what)
{
	json_t *m = raw_recv(fd);
	const char *text;
	size_t i;

	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")) ?: "?", "error");
	text = json_string_value(json_object_get(m, "message"));
	assert_non_null(text);
	for (i = 0; text[i]; i++)
		if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] >= 0x7f)
			fail_msg("the server's message has byte 0x%02x at %zu",
				 (unsigned char)text[i], i);
	if (!strstr(text, what))
		fail_msg("the server said \"%s\", not \"%s\"", text, what);
	json_decref(m);
	assert_true(raw_closed(fd));
	close(fd);
}

/* Where the group points XDG_CONFIG_HOME: an empty directory of its own. */
static char session_cfg[] = "/tmp/railcp-session-cfg-XXXXXX";

int session_group_setup(void **state)
{
	(void)state;
	unsetenv(ENG_AUTH_ENV);
	if (!mkdtemp(session_cfg))
		return -1;
	return setenv("XDG_CONFIG_HOME", session_cfg, 1);
}

int session_group_teardown(void **state)
{
	(void)state;
	return rmdir(session_cfg);
}
