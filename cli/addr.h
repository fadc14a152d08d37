/*
 * addr.h - private to cli/: hosts as the command line names them.
 *
 * A copy's remote argument is read as scp reads it: [USER@]HOST:PATH, or
 * [USER@][ADDR]:PATH for an IPv6 address (its ':'s would split it). An
 * argument is local when it has no ':' before its first '/' (write ./a:b
 * for a local name with a colon), when it is an IPv6 address alone (the
 * copy then asks for [ADDR]:PATH), or, as scp reads it, when a '/' comes
 * before the "]:" that closes its '['. A host that is empty, begins with '-' (ssh
 * would read it as an option) or holds a '[', ']', '@' or blank where a
 * host cannot is refused in one sentence.
 *
 * bench's and doctor's HOST[:PORT] take HOST, HOST:PORT, [ADDR]:PORT,
 * [ADDR] and a bare IPv6 address (two ':' or more: all of it is the host,
 * and a port needs the brackets).
 *
 * Threading: none; reentrant.
 */
#ifndef RAILCP_CLI_ADDR_H
#define RAILCP_CLI_ADDR_H

#include <stddef.h>
#include <stdint.h>

#define CLI_HOST_MAX 255

struct cli_remote {
	char login[CLI_HOST_MAX + 1]; /* what ssh is given: USER@HOST or HOST, no brackets */
	const char *host;	      /* within login: HOST alone */
	const char *path;	      /* within the argument: what follows HOST's ':' */
};

/*
 * arg read as a copy's argument: 1 when it is remote (*r filled), 0 when
 * it is a local path, CLI_EXIT_USAGE after one line when it names a host
 * that cannot be one.
 */
int cli_remote_parse(const char *arg, struct cli_remote *r);

/*
 * cmd's HOST[:PORT] argument: the host into host (len bytes), the port
 * into *port when one is given (else *port is left). 0, or CLI_EXIT_USAGE
 * after one line.
 */
int cli_host_port_parse(const char *cmd, const char *arg, char *host, size_t len, uint16_t *port);

/* host as a copy's argument writes it: "[ADDR]" for an IPv6 address, else host itself. */
const char *cli_host_shown(const char *host, char *buf, size_t len);

#endif
