/*
 * manifest.c - the file list on the control connection: a manifest's
 * encoding (io/) in "manifest" frames of at most ENG_MANIFEST_PART bytes,
 * the first announcing the total. The announced total is bounded before
 * its buffer is allocated, and the parts must add up to exactly that total.
 * With --update the receiver answers with a bit per entry it holds already,
 * in "skip" frames, and with --partial with a bit per planned chunk an
 * earlier copy kept, in "kept" frames: both sides know the sizes.
 *
 * Threading: one thread per connection; no shared state.
 */
#include "engine/session/proto.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int eng__manifest_send(struct eng_ctl *c, const struct io_manifest *m)
{
	void *buf = NULL;
	size_t len = 0, off = 0;
	int err = io_manifest_encode(m, &buf, &len);

	while (!err) {
		size_t n = len - off < ENG_MANIFEST_PART ? len - off : ENG_MANIFEST_PART;
		json_t *msg = eng__proto_msg(ENG_MSG_MANIFEST, false),
		       *part = eng__proto_hex((char *)buf + off, n);

		if (!msg || !part || json_object_set_new(msg, ENG_KEY_PART, part)) {
			json_decref(msg); /* json_object_set_new took part even on failure */
			if (!msg)
				json_decref(part);
			err = rcp_err(-ENOMEM, "out of memory sending the file list");
			break;
		}
		if (off == 0)
			json_object_set_new(msg, ENG_KEY_TOTAL, json_integer((json_int_t)len));
		err = eng__proto_send(c, msg);
		json_decref(msg);
		off += n;
		if (off == len)
			break;
	}
	free(buf);
	return err;
}

int eng__manifest_recv(struct eng_ctl *c, int timeout_ms, struct io_manifest **m_out)
{
	uint64_t total = 0, off = 0;
	char *buf = NULL;
	int err = 0;

	do {
		json_t *msg = NULL;
		char *part = NULL;
		size_t n = 0;

		err = eng__proto_recv(c, timeout_ms, ENG_MSG_MANIFEST, &msg);
		if (!err && off == 0) {
			err = eng__proto_get_u64(msg, ENG_KEY_TOTAL, &total);
			if (!err && total > ENG_MANIFEST_MAX)
				err = rcp_err(-EFBIG,
					      "the peer announced a file list of %" PRIu64
					      " MiB, more than the %llu MiB allowed",
					      total >> 20, ENG_MANIFEST_MAX >> 20);
			if (!err && !(buf = malloc(total ? total : 1)))
				err = rcp_err(-ENOMEM,
					      "out of memory for a file list of %" PRIu64 " MiB",
					      total >> 20);
		}
		if (!err)
			err = eng__proto_hex_value(json_object_get(msg, ENG_KEY_PART),
						   "a file list part", ENG_MANIFEST_PART, &part,
						   &n);
		if (!err && (n > total - off || (n == 0 && off < total)))
			err = rcp_err(-EPROTO,
				      "the peer's file list does not add up to the %" PRIu64
				      " bytes it announced",
				      total);
		if (!err) {
			memcpy(buf + off, part, n);
			off += n;
		}
		free(part);
		json_decref(msg);
	} while (!err && off < total);
	if (!err)
		err = io_manifest_decode(buf, total, m_out);
	free(buf);
	return err;
}

int eng__map_send(struct eng_ctl *c, const char *type, const uint8_t *bits, size_t len)
{
	size_t off, n;
	int err = 0;

	for (off = 0; off < len && !err; off += n) {
		json_t *msg = eng__proto_msg(type, false);

		n = len - off < ENG_MANIFEST_PART ? len - off : ENG_MANIFEST_PART;
		err = msg ? eng__proto_set_hex(msg, ENG_KEY_PART, bits + off, n) : -ENOMEM;
		if (!err)
			err = eng__proto_send(c, msg);
		json_decref(msg);
	}
	return err;
}

int eng__map_recv(struct eng_ctl *c, int timeout_ms, const char *type, size_t n, uint8_t *bits,
		  size_t len)
{
	size_t off, k;
	int err = 0;

	for (off = 0; off < len && !err; off += k) {
		json_t *msg = NULL;

		k = len - off < ENG_MANIFEST_PART ? len - off : ENG_MANIFEST_PART;
		err = eng__proto_recv(c, timeout_ms, type, &msg);
		if (!err)
			err = eng__proto_get_hex(msg, ENG_KEY_PART, bits + off, k);
		json_decref(msg);
	}
	/* No bit past the last entry. */
	for (k = n / 8; !err && k < len; k++)
		if (bits[k] & (k == n / 8 ? 0xffu << (n % 8) : 0xffu))
			err = rcp_err(-EPROTO,
				      "the receiver's map (%s) names more than the %zu "
				      "items the sender has",
				      type, n);
	return err;
}
