/*
 * main.c - the railcp command: global options and subcommand dispatch.
 */
#include "cli/cli.h"

#include "common/common.h"

#include <stdbool.h>
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
	{"bench", cli_cmd_bench,
	 "memory-to-memory transfer to a server, verified, with throughput"},
	{"topo", cli_cmd_topo, "show NUMA nodes, rails and the worker placement plan"},
	{"doctor", cli_cmd_doctor,
	 "check this host (and the way to a server) for what hurts copies"},
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: railcp [options] SRC... HOST:DST     copy to a railcp server\n"
		   "       railcp [options] HOST:SRC... DST     copy from a railcp server\n"
		   "       railcp [-q|-v|-vv] COMMAND [OPTIONS]\n"
		   "       railcp -h|--help|--version\n\n"
		   "Before COMMAND: -q leaves out notices, -v adds details, -vv debug too.\n\n"
		   "commands:\n");
	for (i = 0; i < RCP_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'railcp COMMAND --help' describes a command's options; 'railcp --help-copy'\n"
		   "those of copies.\n");
}

/* Is the first word that is not an option a command's name? */
static bool command_given(int argc, char **argv)
{
	size_t c;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++)
		;
	for (c = 0; i < argc && c < RCP_ARRAY_SIZE(commands); c++)
		if (!strcmp(argv[i], commands[c].name))
			return true;
	return false;
}

/* No command, and a word with a colon (HOST:PATH): a copy. */
static bool copy_given(int argc, char **argv)
{
	int i;

	if (command_given(argc, argv))
		return false;
	for (i = 1; i < argc; i++)
		if (argv[i][0] != '-' && strchr(argv[i], ':'))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int i = 1;
	size_t c;

	if (argc > 1 && !strcmp(argv[1], "--help-copy")) {
		char *help[] = {argv[0], "--help", NULL};

		return cli_cmd_copy(2, help);
	}
	if (copy_given(argc, argv))
		return cli_cmd_copy(argc, argv);
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
