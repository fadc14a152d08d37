/*
 * terms.c - what a server takes from a proven client's hello: the job, the
 * server's role in it, the chunk and bench bounds, the stripes' count and
 * the copy's flags, checked before the session allocates anything
 * (server.c; the fuzz target fuzz_frame takes hellos through it too); the
 * flags as the client puts them in its hello, and what it takes from the
 * server's welcome.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

bool eng__hello_flag(const json_t *hello, const char *name)
{
	return json_is_true(json_object_get(json_object_get(hello, ENG_KEY_FLAGS), name));
}

int eng__hello_terms(const json_t *hello, bool serves_files, struct eng_hello_terms *out)
{
	const char *job = json_string_value(json_object_get(hello, ENG_KEY_JOB));
	json_t *stripes = json_object_get(hello, ENG_KEY_STRIPES);
	bool bench = job && !strcmp(job, ENG_JOB_BENCH);
	uint64_t chunk, bytes = 0;
	char esc[ENG_PROTO_ESC_SHORT];
	int err;

	memset(out, 0, sizeof(*out));
	if (!job || (!bench && strcmp(job, ENG_JOB_PUSH) && strcmp(job, ENG_JOB_PULL)))
		return rcp_err(-EPROTO, "this server does not run '%s' jobs",
			       rcp_printable(job ? job : "?", esc, sizeof(esc)));
	if (!bench && !serves_files)
		return rcp_err(-EPERM,
			       "this server was started without --root: it serves no files, "
			       "only railcp bench");
	if ((err = eng__proto_get_u64(hello, ENG_KEY_CHUNK, &chunk)) != 0)
		return err;
	if (bench && (err = eng__proto_get_u64(hello, ENG_KEY_BYTES, &bytes)) != 0)
		return err;
	if (bench && (bytes == 0 || bytes > ENG_MAX_BENCH_BYTES))
		return rcp_err(-EINVAL, "a bench of %" PRIu64 " bytes is out of bounds", bytes);
	if (chunk < ENG_CHUNK_MIN || chunk > ENG_CHUNK_MAX || chunk % ENG_CHUNK_MIN)
		return rcp_err(-EINVAL,
			       "a chunk of %" PRIu64 " bytes is out of bounds "
			       "(4 KiB to 64 MiB, multiples of 4 KiB)",
			       chunk);
	if (!json_is_array(stripes) || json_array_size(stripes) == 0 ||
	    json_array_size(stripes) > ENG_MAX_STRIPES)
		return rcp_err(-EINVAL, "a session needs 1 to %d stripes", ENG_MAX_STRIPES);
	if (eng__hello_flag(hello, ENG_FLAG_DELETE) && !eng__hello_flag(hello, ENG_FLAG_RECURSIVE))
		return rcp_err(-EINVAL, "--delete needs -r");
	out->kind = job;
	out->role = strcmp(job, ENG_JOB_PULL) ? ENG_RECEIVER : ENG_SENDER;
	out->chunk = (uint32_t)chunk;
	out->bench_bytes = bytes;
	/* -c trades the kept chunks' maps and digests as --partial does (checksum.c). */
	out->checksum = eng__hello_flag(hello, ENG_FLAG_CHECKSUM);
	out->partial = eng__hello_flag(hello, ENG_FLAG_PARTIAL) || out->checksum;
	out->delete_extra = eng__hello_flag(hello, ENG_FLAG_DELETE);
	out->direct = eng__hello_flag(hello, ENG_FLAG_DIRECT)	     ? ENG_DIRECT_ALWAYS
		      : eng__hello_flag(hello, ENG_FLAG_DIRECT_AUTO) ? ENG_DIRECT_AUTO
								     : ENG_DIRECT_NEVER;
	/* A copy that may go on over tcp keeps what landed as --partial does (fallback.c). */
	out->root_flags = eng__dest_flags(eng__hello_flag(hello, ENG_FLAG_PRESERVE),
					  eng__hello_flag(hello, ENG_FLAG_FSYNC), out->direct,
					  eng__hello_flag(hello, ENG_FLAG_PARTIAL),
					  eng__hello_flag(hello, ENG_FLAG_CHECKSUM),
					  eng__hello_flag(hello, ENG_FLAG_FALLBACK));
	return 0;
}

json_t *eng__hello_flags(const struct eng_copy_opts *cp, bool fallback)
{
	json_t *flags = json_object();

	json_object_set_new(flags, ENG_FLAG_PRESERVE, json_boolean(cp->preserve));
	json_object_set_new(flags, ENG_FLAG_FSYNC, json_boolean(cp->fsync));
	json_object_set_new(flags, ENG_FLAG_DIRECT, json_boolean(cp->direct == ENG_DIRECT_ALWAYS));
	if (cp->direct == ENG_DIRECT_AUTO)
		json_object_set_new(flags, ENG_FLAG_DIRECT_AUTO, json_true());
	json_object_set_new(flags, ENG_FLAG_RECURSIVE, json_boolean(cp->recursive));
	json_object_set_new(flags, ENG_FLAG_UPDATE, json_boolean(cp->update));
	json_object_set_new(flags, ENG_FLAG_PARTIAL, json_boolean(cp->partial));
	json_object_set_new(flags, ENG_FLAG_CHECKSUM, json_boolean(cp->checksum));
	json_object_set_new(flags, ENG_FLAG_DRY_RUN, json_boolean(cp->dry_run));
	json_object_set_new(flags, ENG_FLAG_DELETE, json_boolean(cp->delete_extra));
	json_object_set_new(flags, ENG_FLAG_CONTENTS,
			    json_boolean(io_src_contents_only(cp->src, cp->n_src)));
	if (fallback)
		json_object_set_new(flags, ENG_FLAG_FALLBACK, json_true());
	return flags;
}

int eng__welcome_terms(const json_t *welcome, unsigned max_slots, bool keyed,
		       const uint64_t *want_chunks, uint64_t *n_slots_out,
		       uint8_t tokens[ENG_SEAL_KEY_LEN])
{
	const json_t *stripes = json_object_get(welcome, ENG_KEY_STRIPES);
	uint64_t n_slots, chunks;
	int err;

	if ((err = eng__proto_get_u64(welcome, ENG_KEY_SLOTS, &n_slots)) != 0 ||
	    (err = eng__proto_get_u64(welcome, ENG_KEY_CHUNKS, &chunks)) != 0)
		return err;
	if (n_slots == 0 || !json_is_array(stripes))
		return rcp_err(-EPROTO, "the server's welcome is incomplete");
	if (n_slots < 2 || n_slots > max_slots)
		return rcp_err(-EPROTO,
			       "the server offered %" PRIu64 " slots per stripe; this side's "
			       "buffers take 2 to %u",
			       n_slots, max_slots);
	/* Keyed, the tokens were derived with the seal (and are never sent). */
	if (!keyed &&
	    (err = eng__proto_get_hex(welcome, ENG_KEY_TOKEN, tokens, ENG_SEAL_KEY_LEN)) != 0)
		return err;
	if (want_chunks && chunks != *want_chunks)
		return rcp_err(-EPROTO, "the server planned %" PRIu64 " chunks, this side %" PRIu64,
			       chunks, *want_chunks);
	*n_slots_out = n_slots;
	return 0;
}
