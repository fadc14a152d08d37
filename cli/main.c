/*
 * main.c - the railcp command: global options and subcommand dispatch.
 */
#include "cli/cli.h"

#include "common/common.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RAILCP_VERSION "0.1.0"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"devices", cli_cmd_devices, "list RDMA devices and the IP interfaces a TCP copy uses"},
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

	fprintf(f,
		"usage: railcp [options] SRC... HOST:DST     copy to a railcp server\n"
		"       railcp [options] HOST:SRC... DST     copy from a railcp server\n"
		"       railcp COMMAND [options]\n"
		"       railcp -h|--help|--help-copy|--version\n\n"
		"Common options of copies (every one: railcp --help-copy):\n"
		"  -r, --recursive    copy directories and their contents\n"
		"  -p, --preserve     keep mode and modification time\n"
		"  -u, --update       send only what the destination lacks\n"
		"  -c, --checksum     send only the chunks that differ from the destination\n"
		"  --partial          keep what an interrupted copy received, for the next\n"
		"  --delete           with -r: remove what the destination holds and the\n"
		"                     sources lack, once the copy succeeded\n"
		"  --port P           the server's TCP port (default %d)\n"
		"  -e, --rsh CMD      start the far side with CMD, e.g. ssh\n"
		"  --json             the summary, or the error, as one JSON object on stdout\n\n"
		"Options of every command, before or after it:\n"
		"  -q                 leave out notices: only errors\n"
		"  -v, -vv            say more on stderr; -vv: debug too\n\n"
		"  -h, --help         print this and exit\n"
		"  --help-copy        print every option of copies and exit\n"
		"  --version          print the version and exit\n\n"
		"commands:\n",
		ENG_DEFAULT_PORT);
	for (i = 0; i < RCP_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\n'railcp COMMAND --help' describes a command's options.\n"
		"RAILCP_TCP_ZEROCOPY=auto|on|off: how a TCP sender sends chunks (man railcp).\n");
}

/* The command named w, or -1. */
static int command_of(const char *w)
{
	size_t c;

	for (c = 0; c < RCP_ARRAY_SIZE(commands); c++)
		if (!strcmp(w, commands[c].name))
			return (int)c;
	return -1;
}

/* Whether a word after argv[i] names a command (so argv[i] is before COMMAND). */
static bool command_later(int i, int argc, char **argv)
{
	for (; i < argc && argv[i][0] == '-'; i++)
		;
	return i < argc && command_of(argv[i]) >= 0;
}

/* The global option that word is a slip for, or NULL. */
static const char *near_global(const char *word)
{
	static const char *const names[] = {"help", "help-copy", "version"};

	return word[1] == '-' ? cli_nearest(word + 2, names, RCP_ARRAY_SIZE(names)) : NULL;
}

/* An option before COMMAND that is none of the global ones: say so, with the nearest. */
static int unknown_global(const char *word)
{
	const char *hit = near_global(word);

	if (hit)
		return cli_usage_error("", "unknown option '%s': did you mean --%s?", word, hit);
	return cli_usage_error("",
			       "unknown option '%s' before the command: only -q, -v and -vv "
			       "go there",
			       word);
}

/*
 * The one word of the line names no command, no file and no HOST:PATH:
 * a mistyped command, said as such.
 */
static int unknown_command(const char *word)
{
	const char *names[RCP_ARRAY_SIZE(commands)], *hit;
	size_t c;

	for (c = 0; c < RCP_ARRAY_SIZE(commands); c++)
		names[c] = commands[c].name;
	hit = cli_nearest(word, names, RCP_ARRAY_SIZE(commands));
	if (hit)
		return cli_usage_error("", "unknown command '%s': did you mean %s?", word, hit);
	return cli_usage_error("", "'%s' is no command, no file here and no HOST:PATH", word);
}

/* Global options, then a command; or a copy, when no word of the line names a command. */
static int dispatch(int argc, char **argv)
{
	int i, c;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return CLI_EXIT_OK;
		} else if (!strcmp(argv[i], "--help-copy")) {
			char *help[] = {argv[0], "--help", NULL};

			return cli_cmd_copy(2, help);
		} else if (!strcmp(argv[i], "--version")) {
			printf("railcp %s\n", RAILCP_VERSION);
			return CLI_EXIT_OK;
		} else if (!strcmp(argv[i], "-v")) {
			rcp_log_set_level(RCP_LOG_INFO);
		} else if (!strcmp(argv[i], "-q")) {
			rcp_log_set_level(RCP_LOG_SILENT);
		} else if (!strcmp(argv[i], "-vv")) {
			rcp_log_set_level(RCP_LOG_DEBUG);
		} else if (command_later(i, argc, argv) || near_global(argv[i])) {
			return unknown_global(argv[i]);
		} else {
			break;
		}
	}
	if (i == argc) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (eng_tcp_zerocopy_check() != 0) /* an environment no session could run under */
		return cli_usage_error("", "%s", rcp_err_msg(-EINVAL));
	c = command_of(argv[i]);
	if (c >= 0)
		return commands[c].run(argc - i, argv + i);
	if (i == argc - 1 && argv[i][0] != '-' && !strchr(argv[i], ':') &&
	    access(argv[i], F_OK) != 0)
		return unknown_command(argv[i]);
	rcp_log_set_level(RCP_LOG_NOTICE); /* the copy's parser reads -q and -v again */
	return cli_cmd_copy(argc, argv);
}

int main(int argc, char **argv)
{
	int r;

	r = dispatch(argc, argv);
	if (r == CLI_EXIT_USAGE && cli_wants_json(argc, argv))
		cli_json_error(r, NULL); /* the failures of a run print their own */
	return r;
}
