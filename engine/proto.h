/*
 * proto.h - private to engine/: the control connection.
 *
 * Frames are a 4-byte big-endian length and a JSON object of at most
 * ENG_PROTO_MAX_FRAME bytes. Each side's first frame is a hello carrying
 * "proto": "railcp" and "version"; anything else ends the connection with a
 * sentence saying what the peer is not. Every read has a timeout.
 */
#ifndef RAILCP_ENGINE_PROTO_H
#define RAILCP_ENGINE_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENG_PROTO_VERSION 1
#define ENG_PROTO_MAX_FRAME (1u << 20)
/* A hello arrives before authentication: keep what a stranger can make us parse small. */
#define ENG_PROTO_MAX_HELLO (64u << 10)

/* Send msg (not consumed). */
int eng__proto_send(int fd, const json_t *msg);

/*
 * Receive one frame within timeout_ms. If want_type is not NULL the frame
 * must have that "type"; a frame of type "error" becomes -ECONNABORTED with
 * the peer's message as the sentence.
 */
int eng__proto_recv(int fd, int timeout_ms, const char *want_type, json_t **msg_out);

/* eng__proto_recv with a smaller frame limit than ENG_PROTO_MAX_FRAME. */
int eng__proto_recv_max(int fd, int timeout_ms, const char *want_type, uint32_t max,
			json_t **msg_out);

/* A new message {"type": type}; with proto and version when hello is true. */
json_t *eng__proto_msg(const char *type, bool hello);

/* Check a hello frame's proto and version; -EPROTO with a sentence. */
int eng__proto_check_hello(const json_t *msg);

/*
 * Send {"type": "error", "message": <err's sentence>}, ignoring failures (the
 * peer may be gone); err's sentence stays recorded for the caller.
 */
void eng__proto_send_error(int fd, int err);

/* Fetch an integer member (>= 0); -EPROTO with a sentence when missing or wrong. */
int eng__proto_get_u64(const json_t *msg, const char *key, uint64_t *v_out);

/* The hex text of len bytes as a JSON string; NULL when out of memory. */
json_t *eng__proto_hex(const void *bytes, size_t len);

/* Set key to the hex text of len bytes; -ENOMEM. */
int eng__proto_set_hex(json_t *msg, const char *key, const void *bytes, size_t len);

/* Read key as exactly len bytes of hex; -EPROTO with a sentence otherwise. */
int eng__proto_get_hex(const json_t *msg, const char *key, void *bytes_out, size_t len);

/*
 * Decode v, hex of at most max bytes, into a new buffer with a NUL after the
 * bytes (*len_out may be NULL); what names v in the sentence of an error.
 */
int eng__proto_hex_value(const json_t *v, const char *what, size_t max, char **bytes_out,
			 size_t *len_out);

#endif
