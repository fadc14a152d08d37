/*
 * place.h - private to cli/: placement options and plans (see place.c).
 */
#ifndef RAILCP_CLI_PLACE_H
#define RAILCP_CLI_PLACE_H

#include <getopt.h>

#include "cli/cli.h"
#include "topology/topology.h"

struct cli_place {
	struct topo_opts opts;
	const char *profile;
	/* --helpers and --io-depth (copies and serve): the plan's, see topology.h */
	unsigned helpers;
	unsigned io_depth;
	/* --transport: auto until cli_place_live settles it */
	enum cli_transport { CLI_TRANSPORT_AUTO, CLI_TRANSPORT_RDMA, CLI_TRANSPORT_TCP } transport;
	bool chose; /* auto settled it: the other end may agree on another (cli_place_live_tcp) */
};

/* Codes of the placement options: beyond any character, so commands keep every short option. */
enum {
	CLI_OPT_NUMA = 0x100,
	CLI_OPT_RAILS,
	CLI_OPT_QPS,
	CLI_OPT_BUFFER,
	CLI_OPT_PROFILE,
	CLI_OPT_HELPERS,
	CLI_OPT_IO_DEPTH,
	CLI_OPT_TRANSPORT,
};

/* getopt_long entries of the placement options, for a command's table. */
#define CLI_PLACE_OPTIONS                                                                          \
	{"numa", required_argument, NULL, CLI_OPT_NUMA},                                           \
		{"rails", required_argument, NULL, CLI_OPT_RAILS},                                 \
		{"qps-per-rail", required_argument, NULL, CLI_OPT_QPS},                            \
		{"buffer-mib", required_argument, NULL, CLI_OPT_BUFFER},                           \
		{"transport", required_argument, NULL, CLI_OPT_TRANSPORT},                         \
	{                                                                                          \
		"profile", required_argument, NULL, CLI_OPT_PROFILE                                \
	}

/* getopt_long entries of the file I/O options, for the commands that move files. */
#define CLI_IO_OPTIONS                                                                             \
	{"helpers", required_argument, NULL, CLI_OPT_HELPERS},                                     \
	{                                                                                          \
		"io-depth", required_argument, NULL, CLI_OPT_IO_DEPTH                              \
	}

/* Their lines in a command's usage. */
#define CLI_IO_USAGE                                                                               \
	"  --helpers N        threads per worker that read, hash and write chunks\n"               \
	"                     (default: the worker's node's CPUs but one, up to 8;\n"              \
	"                     0, the default on a node of one CPU: the worker does it)\n"          \
	"  --io-depth N       reads or writes in flight per helper (or worker), through\n"         \
	"                     io_uring (default: the worker's slots shared among its\n"            \
	"                     helpers; 0: pread and pwrite, one at a time)\n"

/* 0 when c was a placement option and arg good, CLI_EXIT_USAGE when bad, -1 when not ours. */
int cli_place_opt(const char *cmd, struct cli_place *p, int c, const char *arg);

/* Options that cannot go together; CLI_EXIT_USAGE after one line. */
int cli_place_check(const char *cmd, const struct cli_place *p);

/* This host (xml NULL: binding, hwloc, RDMA devices) or an hwloc XML export. */
int cli_machine_load(const char *xml, struct topo_machine **m_out);

/* The plan for m: from the profile when one was given, else by the policy. */
int cli_place_plan(const struct cli_place *p, const struct topo_machine *m,
		   struct topo_plan **plan_out);

/*
 * The machine for p's transport: cli_machine_load's, whose rails for TCP
 * are the IP interfaces instead (loopback ones too when --rails or --profile names
 * rails). --transport auto becomes rdma when the machine has an ACTIVE
 * RDMA port, else tcp (p->transport says which from then on).
 */
int cli_place_machine(struct cli_place *p, const char *xml, struct topo_machine **m_out);

/* cli_place_machine(NULL) and cli_place_plan in one. */
int cli_place_live(struct cli_place *p, struct topo_plan **plan_out);

/*
 * --transport auto that chose rdma: the plan over this host's IP
 * interfaces as well, for a session over tcp with the other end (a client
 * at a server that serves tcp alone; a server, for clients asking for
 * tcp). *tcp_out NULL when p is otherwise, has a --profile, or the host
 * has no rail for it (its --rails naming RDMA devices): no error.
 */
void cli_place_live_tcp(const struct cli_place *p, struct topo_plan **tcp_out);

/* The engine's transport of a settled p. */
enum eng_transport_kind cli_place_transport(const struct cli_place *p);

#endif
