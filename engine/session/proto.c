/*
 * proto.c - the control connection: framing (sealed once both sides proved
 * the key: seal.c), hello and hex names (see proto.h for the messages of a
 * session; the file list travels in manifest.c).
 *
 * The length prefix is checked before anything is allocated, so a peer that
 * is not railcp (an HTTP client, a port scanner) costs four bytes and gets a
 * clear refusal rather than a multi-megabyte read.
 *
 * Threading: one thread per connection; no shared state.
 */
#include "engine/session/proto.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return rcp_err(-errno ? -errno : -EPIPE,
				       "the control connection failed: %s",
				       strerror(errno ? errno : EPIPE));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* How often a read waiting for the peer looks at the stop flag. */
#define PROTO_STOP_CHECK_MS 50

static int read_all(const struct eng_ctl *c, void *buf, size_t len, uint64_t deadline_ns)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		uint64_t now = rcp_now_ns(), wait_ms;
		ssize_t n;
		int r;

		if (c->stop && atomic_load(c->stop))
			return c->stop_why ? rcp_err(-EINTR, "%s", c->stop_why)
					   : rcp_err(-ESHUTDOWN, "the server is shutting down");
		if (now >= deadline_ns)
			return -ETIME; /* the deadline: eng__proto_recv_max says what for */
		wait_ms = (deadline_ns - now) / 1000000 + 1;
		if (c->stop && wait_ms > PROTO_STOP_CHECK_MS)
			wait_ms = PROTO_STOP_CHECK_MS;
		r = poll(&pfd, 1, (int)wait_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			continue;
		n = recv(c->fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == 0)
			return rcp_err(-ECONNRESET, "the peer closed the control connection");
		if (n < 0)
			return rcp_err(-errno, "the control connection failed: %s",
				       strerror(errno));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int eng__proto_send(struct eng_ctl *c, const json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT), *frame;
	size_t n = text ? strlen(text) : 0, tag = c->sealed ? ENG_SEAL_TAG_LEN : 0;
	uint32_t be = htonl((uint32_t)(n + tag));
	int err = 0;

	frame = text ? malloc(sizeof(be) + n + tag) : NULL;
	if (!frame) {
		free(text);
		return -ENOMEM;
	}
	memcpy(frame, &be, sizeof(be));
	memcpy(frame + sizeof(be), text, n);
	if (c->sealed)
		err = eng__seal_tag(c->key_out, c->seq_out++, text, (uint32_t)n,
				    (uint8_t *)frame + sizeof(be) + n);
	else
		err = eng__seal_fold(c, text, (uint32_t)n);
	if (!err)
		err = write_all(c->fd, frame, sizeof(be) + n + tag);
	if (err == -EAGAIN || err == -EWOULDBLOCK) /* SO_SNDTIMEO ran out (eng__tcp_tune) */
		err = rcp_err(-ETIMEDOUT,
			      "%s stopped reading: the control connection took nothing in time",
			      c->peer ? c->peer : "the peer");
	free(frame);
	free(text);
	return err;
}

/* A sealed frame's body: its tag must be right for the next number in. */
static int frame_open(struct eng_ctl *c, const char *buf, uint32_t *len)
{
	uint8_t want[ENG_SEAL_TAG_LEN];
	uint32_t n = *len - ENG_SEAL_TAG_LEN;
	int err, same;

	if (*len <= ENG_SEAL_TAG_LEN)
		return rcp_err(-EBADMSG, "the peer sent a frame too short to carry its seal");
	if ((err = eng__seal_tag(c->key_in, c->seq_in++, buf, n, want)) != 0)
		return err;
	same = CRYPTO_memcmp(want, buf + n, sizeof(want)) == 0;
	if (!same)
		return rcp_err(-EBADMSG,
			       "a control frame failed its integrity check: it was "
			       "altered, dropped or replayed on the way; ending the session");
	*len = n;
	return 0;
}

static int frame_read(struct eng_ctl *c, int timeout_ms, uint32_t max, json_t **msg_out)
{
	uint64_t deadline = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint32_t len, max_len = max + (c->sealed ? ENG_SEAL_TAG_LEN : 0);
	json_error_t jerr;
	char *buf;
	json_t *msg;
	int err;

	if ((err = read_all(c, &len, sizeof(len), deadline)) != 0)
		return err;
	len = ntohl(len);
	if (len == 0 || len > max_len)
		return rcp_err(-EPROTO,
			       "the peer does not speak the railcp protocol "
			       "(it sent a frame of %u bytes)",
			       len);
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	err = read_all(c, buf, len, deadline);
	if (!err && c->sealed)
		err = frame_open(c, buf, &len);
	else if (!err)
		err = eng__seal_fold(c, buf, len);
	msg = err ? NULL : json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (err)
		return err;
	if (!json_is_object(msg)) {
		json_decref(msg);
		return rcp_err(-EPROTO,
			       "the peer does not speak the railcp protocol (not a JSON object)");
	}
	*msg_out = msg;
	return 0;
}

int eng__proto_recv(struct eng_ctl *c, int timeout_ms, const char *want_type, json_t **msg_out)
{
	return eng__proto_recv_max(c, timeout_ms, want_type, ENG_PROTO_MAX_FRAME, msg_out);
}

/*
 * An "error" frame's message as the sentence of -ECONNABORTED (-EBUSY when
 * it says to try again, ENG_ERR_OTHER_TRANSPORT when to try the other one),
 * after who ("the server says").
 */
static int error_frame(struct eng_ctl *c, const json_t *msg, const char *who)
{
	const char *text = json_string_value(json_object_get(msg, ENG_KEY_MESSAGE));
	bool retry = json_is_true(json_object_get(msg, ENG_KEY_RETRY));
	bool other = json_is_true(json_object_get(msg, ENG_KEY_OTHER_TRANSPORT));
	char esc[400];

	/* Only a proven peer's word: an unproven one could hold a server open. */
	c->peer_rails_down |= c->trusted && json_is_true(json_object_get(msg, ENG_KEY_RAILS_DOWN));
	return rcp_err(retry   ? -EBUSY
		       : other ? ENG_ERR_OTHER_TRANSPORT
			       : -ECONNABORTED,
		       "%s: %s", who,
		       rcp_printable(text ? text : "(no reason given)", esc, sizeof(esc)));
}

/* Whether msg is an "alive" frame (--delete's walk): a wait passes over it and starts afresh. */
static bool is_alive(const json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, ENG_KEY_TYPE));

	return type && strcmp(type, ENG_MSG_ALIVE) == 0;
}

/* Whether msg is a "lost" frame, which a wait for a frame of another type passes over. */
static bool is_lost(const json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, ENG_KEY_TYPE));

	return type && strcmp(type, ENG_MSG_LOST) == 0;
}

/*
 * Whether msg is a "queued" frame: the server has this session wait its
 * turn (said at -v). The wait for the next frame then starts afresh; the
 * server bounds the whole wait by this side's --timeout (queue.c).
 */
static bool is_queued(const json_t *msg, const struct eng_ctl *c)
{
	const char *type = json_string_value(json_object_get(msg, ENG_KEY_TYPE));
	json_int_t place = json_integer_value(json_object_get(msg, ENG_KEY_PLACE));
	json_int_t of = json_integer_value(json_object_get(msg, ENG_KEY_OF));

	if (!type || strcmp(type, ENG_MSG_QUEUED) != 0)
		return false;
	if (place > 0)
		rcp_log(RCP_LOG_INFO,
			"%s is full: this session waits its turn, place %lld of %lld in its queue",
			c->peer ? c->peer : "the peer", (long long)place, (long long)of);
	else
		rcp_log(RCP_LOG_INFO, "%s admits this session: its turn came",
			c->peer ? c->peer : "the peer");
	return true;
}

int eng__proto_recv_max(struct eng_ctl *c, int timeout_ms, const char *want_type, uint32_t max,
			json_t **msg_out)
{
	uint64_t end = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	bool skip = want_type && strcmp(want_type, ENG_MSG_LOST) != 0;
	const char *type;
	json_t *msg = NULL;
	int err;

	/* One deadline for them all: a peer that sends only "lost" frames still times out. */
	while ((err = frame_read(c, eng__proto_ms_left(end), max, &msg)) == 0 && skip &&
	       (is_lost(msg) || is_alive(msg) || is_queued(msg, c))) {
		if (!is_lost(msg))
			end = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
		json_decref(msg);
	}
	if (err == -ETIME) /* our deadline, not the socket's ETIMEDOUT: what was waited for */
		return rcp_err(-ETIMEDOUT, "%s did not answer in time (waiting for its %s%s%s)",
			       c->peer ? c->peer : "the peer", want_type ? "'" : "",
			       want_type ? want_type : "next message", want_type ? "'" : "");
	if (err)
		return err;
	type = json_string_value(json_object_get(msg, ENG_KEY_TYPE));
	if (type && strcmp(type, ENG_MSG_ERROR) == 0) {
		char who[64];

		snprintf(who, sizeof(who), "%s says", c->peer ? c->peer : "the peer");
		err = error_frame(c, msg, who);
	} else if (want_type && (!type || strcmp(type, want_type) != 0)) {
		char esc[ENG_PROTO_ESC_SHORT];

		err = rcp_err(-EPROTO, "the peer sent '%s' where '%s' was due",
			      rcp_printable(type ? type : "?", esc, sizeof(esc)), want_type);
	}
	if (err) {
		json_decref(msg);
		return err;
	}
	*msg_out = msg;
	return 0;
}

int eng__proto_peer_failed(struct eng_ctl *c, int timeout_ms, const char *peer_name)
{
	uint64_t end = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	json_t *msg = NULL;
	const char *type;
	char who[64];
	int err = 0;

	do {
		json_decref(msg);
		msg = NULL;
		if (frame_read(c, eng__proto_ms_left(end), ENG_PROTO_MAX_FRAME, &msg) != 0)
			return 0;
	} while (is_lost(msg));
	type = json_string_value(json_object_get(msg, ENG_KEY_TYPE));
	if (type && strcmp(type, ENG_MSG_ERROR) == 0)
		c->peer_rails_down |=
			c->trusted && json_is_true(json_object_get(msg, ENG_KEY_RAILS_DOWN));
	if (type && strcmp(type, ENG_MSG_ERROR) == 0 &&
	    !json_is_true(json_object_get(msg, ENG_KEY_SYMPTOM))) {
		snprintf(who, sizeof(who), "%s failed", peer_name);
		err = error_frame(c, msg, who);
	}
	json_decref(msg);
	return err;
}

int eng__proto_ms_left(uint64_t end_ns)
{
	uint64_t now = rcp_now_ns(), ms = now >= end_ns ? 0 : (end_ns - now + 999999) / 1000000;

	return ms > INT_MAX ? INT_MAX : (int)ms;
}

json_t *eng__proto_msg(const char *type, bool hello)
{
	json_t *m = json_object();

	if (!m)
		return NULL;
	if (hello) {
		json_object_set_new(m, ENG_KEY_PROTO, json_string(ENG_PROTO_NAME));
		json_object_set_new(m, ENG_KEY_VERSION, json_integer(ENG_PROTO_VERSION));
	}
	json_object_set_new(m, ENG_KEY_TYPE, json_string(type));
	return m;
}

int eng__proto_send_type(struct eng_ctl *c, const char *type)
{
	json_t *m = eng__proto_msg(type, false);
	int err = m ? eng__proto_send(c, m) : -ENOMEM;

	json_decref(m);
	return err;
}

void eng__alive_init(struct eng_alive *a, struct eng_ctl *ctl)
{
	*a = (struct eng_alive){.ctl = ctl, .sent_ns = rcp_now_ns()};
}

void eng__alive_tick(void *a)
{
	struct eng_alive *al = a;
	uint64_t now = rcp_now_ns();

	if (now - al->sent_ns < ENG_ALIVE_NS)
		return;
	al->sent_ns = now;
	(void)eng__proto_send_type(al->ctl, ENG_MSG_ALIVE);
}

int eng__proto_poll(struct eng_ctl *c, const char *want, json_t **msg_out)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	int err;

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	/* Something arrived, or the peer hung up: a whole frame follows quickly, if any. */
	err = eng__proto_recv(c, 5000, want, msg_out);
	return err ? err : 1;
}

int eng__proto_check_hello(const json_t *msg)
{
	const char *proto = json_string_value(json_object_get(msg, ENG_KEY_PROTO));
	json_t *v = json_object_get(msg, ENG_KEY_VERSION);

	if (!proto || strcmp(proto, ENG_PROTO_NAME) != 0 || !json_is_integer(v))
		return rcp_err(-EPROTO, "the peer does not speak the railcp protocol");
	if (json_integer_value(v) != ENG_PROTO_VERSION)
		return rcp_err(-EPROTO,
			       "the peer speaks railcp protocol version %lld, this railcp "
			       "speaks version %d: use the same railcp release on both sides",
			       (long long)json_integer_value(v), ENG_PROTO_VERSION);
	return 0;
}

void eng__proto_send_error(struct eng_ctl *c, int err, bool symptom)
{
	json_t *m = eng__proto_msg(ENG_MSG_ERROR, false);
	char text[512];

	snprintf(text, sizeof(text), "%s", rcp_err_msg(err));
	if (m) {
		json_object_set_new(m, ENG_KEY_MESSAGE, json_string(text));
		if (symptom)
			json_object_set_new(m, ENG_KEY_SYMPTOM, json_true());
		if (err == -EBUSY) /* by convention: the server's "try again later" */
			json_object_set_new(m, ENG_KEY_RETRY, json_true());
		if (err == ENG_ERR_OTHER_TRANSPORT) /* and this: "ask again over tcp" */
			json_object_set_new(m, ENG_KEY_OTHER_TRANSPORT, json_true());
		if (c->rails_down)
			json_object_set_new(m, ENG_KEY_RAILS_DOWN, json_true());
		eng__proto_send(c, m);
		json_decref(m);
	}
	rcp_err(err, "%s", text); /* a failed send must not replace the sentence */
}

int eng__proto_get_u64(const json_t *msg, const char *key, uint64_t *v_out)
{
	json_t *v = json_object_get(msg, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return rcp_err(-EPROTO, "the peer sent a message without a valid '%s'", key);
	*v_out = (uint64_t)json_integer_value(v);
	return 0;
}

json_t *eng__proto_hex(const void *bytes, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = bytes;
	char *text = malloc(2 * len + 1);
	json_t *v;
	size_t i;

	if (!text)
		return NULL;
	for (i = 0; i < len; i++) {
		text[2 * i] = digits[b[i] >> 4];
		text[2 * i + 1] = digits[b[i] & 15];
	}
	v = json_stringn_nocheck(text, 2 * len);
	free(text);
	return v;
}

int eng__proto_set_hex(json_t *msg, const char *key, const void *bytes, size_t len)
{
	json_t *v = eng__proto_hex(bytes, len);

	return v && json_object_set_new(msg, key, v) == 0 ? 0 : -ENOMEM;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_decode(const char *t, size_t n, uint8_t *b)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int hi = hex_digit(t[2 * i]), lo = hex_digit(t[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int eng__proto_get_hex(const json_t *msg, const char *key, void *bytes_out, size_t len)
{
	const char *t = json_string_value(json_object_get(msg, key));

	if (!t || json_string_length(json_object_get(msg, key)) != 2 * len ||
	    hex_decode(t, len, bytes_out))
		return rcp_err(-EPROTO, "the peer sent no valid '%s'", key);
	return 0;
}

int eng__proto_hex_value(const json_t *v, const char *what, size_t max, char **bytes_out,
			 size_t *len_out)
{
	const char *t = json_string_value(v);
	size_t n = t ? json_string_length(v) : 0;
	char *b;

	if (!t || n % 2 || n / 2 > max)
		return rcp_err(-EPROTO, "the peer sent %s that is not hex of at most %zu bytes",
			       what, max);
	b = malloc(n / 2 + 1);
	if (!b)
		return rcp_err(-ENOMEM, "out of memory reading %s", what);
	if (hex_decode(t, n / 2, (uint8_t *)b)) {
		free(b);
		return rcp_err(-EPROTO, "the peer sent %s that is not hex", what);
	}
	b[n / 2] = '\0';
	*bytes_out = b;
	if (len_out)
		*len_out = n / 2;
	return 0;
}

int eng__proto_name(const json_t *v, const char *what, char **name_out)
{
	size_t n;
	int err = eng__proto_hex_value(v, what, IO_PATH_MAX - 1, name_out, &n);

	if (!err && strlen(*name_out) != n) {
		free(*name_out);
		*name_out = NULL;
		err = rcp_err(-EPROTO, "the peer sent %s with a NUL byte in it", what);
	}
	return err;
}
