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

#include <stdint.h>
#include <sys/types.h>

#define CLI_RSH_VERSION 1
#define CLI_RSH_GREETING "railcp-ssh"
#define CLI_RSH_KEY_HEX 64 /* 32 random bytes */
#define CLI_RSH_DEFAULT "ssh"
#define CLI_RSH_ENV "RAILCP_RSH"

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
 * Start 'RAILCP_PATH serve --ssh' on host ([user@]name) through the shell
 * command rsh (run by /bin/sh with the host and the remote command as its
 * last two words) and read its greeting within timeout_ms; the far side
 * gets the same --timeout, and --stall when stall_ms is not 0. On success *r
 * is filled and the far side waits for its one session. Errors are one
 * sentence naming what failed: ssh itself, railcp missing on the host, or
 * the far side's own error line.
 */
int cli_rsh_start(struct cli_rsh *r, const char *rsh, const char *host, const char *railcp_path,
		  int timeout_ms, int stall_ms);

/*
 * A remote path as scp reads it (relative to the far side's home, or
 * absolute) as a name beneath the far side's root, '/', malloc'd into *out:
 * "" (HOST: alone) is the home itself, "/" the root (""), "." the home's
 * contents.
 */
int cli_rsh_path(const struct cli_rsh *r, const char *path, char **out);

/* Close the channel and reap the remote shell (SIGTERM, then SIGKILL, after timeout_ms). */
void cli_rsh_finish(struct cli_rsh *r, int timeout_ms);

/* "[user@]name" without the "user@". */
const char *cli_rsh_hostname(const char *host);

/* The greeting line's parts; 0, or -EPROTO when line is not a greeting of this version. */
int cli_rsh_greeting_parse(struct cli_rsh *r, const char *line);

#endif
