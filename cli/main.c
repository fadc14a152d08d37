/*
 * main.c - the railcp command: global options and subcommand dispatch.
 */
#include "cli/cli.h"

#include "common/common.h"

#include <stdio.h>
#include <string.h>

#define RAILCP_VERSION "0.1.0"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"devices", cli_cmd_devices, "list RDMA devices, ports, GIDs and NUMA locality"},
	{"serve", cli_cmd_serve, "receive sessions from railcp senders (RDMA server)"},
	{"bench", cli_cmd_bench, "memory-to-memory transfer to a server, verified, with throughput"},
	{"topo", cli_cmd_topo, "show NUMA nodes, rails and the worker placement plan"},
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: railcp [-q|-v|-vv] COMMAND [OPTIONS]\n\ncommands:\n");
	for (i = 0; i < RCP_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'railcp COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	int i = 1;
	size_t c;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return CLI_EXIT_OK;
		} else if (!strcmp(argv[i], "--version")) {
			printf("railcp %s\n", RAILCP_VERSION);
			return CLI_EXIT_OK;
		} else if (!strcmp(argv[i], "-v")) {
			rcp_log_set_level(RCP_LOG_INFO);
		} else if (!strcmp(argv[i], "-q")) {
			rcp_log_set_level(RCP_LOG_SILENT);
		} else if (!strcmp(argv[i], "-vv")) {
			rcp_log_set_level(RCP_LOG_DEBUG);
		} else {
			return cli_usage_error(NULL, "unknown option '%s'", argv[i]);
		}
	}
	if (i == argc) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	for (c = 0; c < RCP_ARRAY_SIZE(commands); c++)
		if (!strcmp(argv[i], commands[c].name))
			return commands[c].run(argc - i, argv + i);
	return cli_usage_error(NULL, "unknown command '%s'", argv[i]);
}
