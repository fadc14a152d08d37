/*
 * rsh.h - private to cli/: copies with no railcp serve running on the far
 * side. ssh (or the command -e names) starts 'railcp serve --ssh' there;
 * that server of one session listens on a port of the kernel's choice with
 * a key it has just made, and says both, and its home directory, in one
 * line on the ssh channel:
 *
 *     railcp-ssh 1 ADDR PORT KEY HOME
 *
 * The client then connects to ADDR:PORT as to any railcp server and proves
 * KEY, so the control connection, its deadlines and the data path over the
 * rails are the ones every copy uses; ssh only starts the far side and
 * carries its key, which never touches a disk. The far side ends when its
 * session ends, and at once when the ssh channel closes (its stdin), so a
 * client that dies leaves no process behind.
 *
 * Threading: none; not thread-safe.
 */
#ifndef RAILCP_CLI_RSH_H
#define RAILCP_CLI_RSH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/session.h"

#define CLI_RSH_VERSION 1
#define CLI_RSH_GREETING "railcp-ssh"
#define CLI_RSH_KEY_HEX 64 /* 32 random bytes */
#define CLI_RSH_DEFAULT "ssh"
#define CLI_RSH_ENV "RAILCP_RSH"
#define CLI_RSH_ARGV_MAX 8 /* /bin/sh -c CMD railcp-rsh [--] HOST REMOTE NULL */
#define CLI_RSH_CMD_MAX 4096

struct cli_rsh {
	pid_t pid;  /* the remote shell */
	int in_fd;  /* its stdin: closing it ends the far side */
	int out_fd; /* its stdout: the greeting */
	int err_fd; /* a memfd holding its stderr, for the sentence when it fails */
	char addr[64];
	uint16_t port;
	char key[CLI_RSH_KEY_HEX + 1];
	char home[4096];
};

/*
 * The far side's command, into buf (len bytes): 'RAILCP_PATH serve --ssh'
 * (the path quoted for a POSIX shell) with the copy's --timeout, the
 * session options of s the user gave (--stall, --rail-stall,
 * --connect-timeout, --no-failover, --ack-timeout, --retry-count, --tos),
 * and --transport TRANSPORT unless NULL: the far side's session then runs
 * as this side's does. --key-file stays here (the far side makes its key),
 * and so do the placement options, which describe this host. 0, or
 * -ENAMETOOLONG with a sentence.
 */
int cli_rsh_remote(const char *railcp_path, const struct cli_session *s, const char *transport,
		   char *buf, size_t len);

/*
 * Start the far side (cli_rsh_remote's command) on host ([user@]name)
 * through the shell command rsh (run by /bin/sh with the host and the
 * remote command as its last two words, and "--" before them when rsh is
 * ssh: cli_rsh_argv) and read its greeting within s->timeout_ms. On success
 * *r is filled and the far side waits for its one session. Errors are one sentence naming what
 * failed: a host ssh would read as an option (cli_rsh_host_check, before
 * anything starts), ssh itself, railcp missing on the host, or the far
 * side's own error line; whatever the far side said is quoted through
 * rcp_printable, so no byte of it reaches the terminal as a control.
 */
int cli_rsh_start(struct cli_rsh *r, const char *rsh, const char *host, const char *railcp_path,
		  const struct cli_session *s, const char *transport);

/*
 * A remote path as scp reads it (relative to the far side's home, or
 * absolute) as a name beneath the far side's root, '/', malloc'd into *out:
 * "" (HOST: alone) is the home itself with a trailing slash ("home/ann/":
 * as a source, its contents), "/" the root (""), "." the home's contents.
 */
int cli_rsh_path(const struct cli_rsh *r, const char *path, char **out);

/* Close the channel and reap the remote shell (SIGTERM, then SIGKILL, after timeout_ms). */
void cli_rsh_finish(struct cli_rsh *r, int timeout_ms);

/* "[user@]name" without the "user@". */
const char *cli_rsh_hostname(const char *host);

/*
 * The greeting line's parts; 0, or -EPROTO when line is not a greeting of
 * this version or its home holds a control byte (< 0x20, 0x7f).
 */
int cli_rsh_greeting_parse(struct cli_rsh *r, const char *line);

/*
 * 0 when host ([user@]name) may be handed to the remote shell; -EINVAL with
 * one sentence when it or its name begins with '-', which ssh would read as
 * an option ("-oProxyCommand=..." runs a command here). The sentence quotes
 * host through rcp_printable.
 */
int cli_rsh_host_check(const char *host);

/*
 * The remote shell's argv for execv: /bin/sh -c "exec RSH \"$@\""
 * railcp-rsh [--] HOST REMOTE. The "--" comes when RSH's program is ssh (and
 * RSH does not end in "--" already): ssh's options end there, so HOST is
 * never one. Another program gets HOST and REMOTE as its last two words, as
 * rsync's -e does; cli_rsh_host_check keeps an option out of HOST for it.
 * cmd (CLI_RSH_CMD_MAX bytes) holds the -c string argv_out points into.
 * 0, or -ENAMETOOLONG with a sentence.
 */
int cli_rsh_argv(const char *rsh, const char *host, const char *remote, char cmd[CLI_RSH_CMD_MAX],
		 const char *argv_out[CLI_RSH_ARGV_MAX]);

#endif
