/*
 * kind.c - which transport a session runs on, by the kind its options name
 * (engine.h), and the word users see for it.
 *
 * Threading: thread-safe (constant tables).
 */
#include "engine/engine.h"
#include "engine/transport/transport.h"

#include <string.h>

const struct eng_transport *eng__transport_of(int kind)
{
	return kind == ENG_TRANSPORT_TCP ? eng__transport_tcp() : eng__transport_verbs();
}

const char *eng__transport_word(const struct eng_transport *tr)
{
	return strcmp(tr->name, "tcp") == 0 ? "tcp" : "rdma";
}

const char *eng_transport_str(enum eng_transport_kind kind)
{
	return kind == ENG_TRANSPORT_TCP ? "tcp" : "rdma";
}
