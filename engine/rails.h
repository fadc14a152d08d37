/*
 * rails.h - private to engine/: rail addresses and stripe-to-rail pairing.
 */
#ifndef RAILCP_ENGINE_RAILS_H
#define RAILCP_ENGINE_RAILS_H

#include <netinet/in.h>

#include "engine/engine.h"

struct eng_rail_addr {
	struct sockaddr_in addr; /* port 0 */
	unsigned prefix;         /* bits of the subnet */
	char text[INET_ADDRSTRLEN];
};

/* The IPv4 address of port dev:port, from its RoCE v2 GIDs. */
int eng__rail_addr(const struct eng_device_list *list, const char *dev, unsigned port,
		   struct eng_rail_addr *out);

/*
 * The receiver rail (index into to[]) a stripe leaving from should use: the
 * least loaded rail on from's subnet, else the least loaded rail. load[] counts
 * stripes per receiver rail and is updated.
 */
unsigned eng__rail_pair(const struct eng_rail_addr *from, const struct eng_rail_addr *to,
			unsigned n_to, unsigned *load);

#endif
