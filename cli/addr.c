/*
 * addr.c - hosts as the command line names them (addr.h).
 */
#include "cli/addr.h"
#include "cli/cli.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Bytes no host name or address holds, nor what ssh is given for one. */
static bool bad_host_byte(unsigned char c)
{
	return c <= ' ' || c == 0x7f || strchr("[]@/", c) != NULL;
}

/* The what (n bytes at s) begins with '-': CLI_EXIT_USAGE said for cmd. */
static int dash(const char *cmd, const char *what, const char *s, size_t n)
{
	char raw[CLI_HOST_MAX + 1], shown[200];

	snprintf(raw, sizeof(raw), "%.*s", (int)n, s);
	return cli_usage_error(cmd, "the %s '%s' begins with '-': %s", what,
			       rcp_printable(raw, shown, sizeof(shown)),
			       cmd ? "no host name does" : "ssh would read it as an option");
}

/* host (its n bytes) as arg (shown: arg escaped) names it: 0, or CLI_EXIT_USAGE said for cmd. */
static int host_check(const char *cmd, const char *shown, const char *host, size_t n)
{
	size_t i;

	if (n == 0)
		return cli_usage_error(cmd, "'%s' names no host%s", shown,
				       cmd ? ""
					   : " before its ':' (write ./ before a local name that "
					     "has a ':')");
	if (n > CLI_HOST_MAX)
		return cli_usage_error(cmd, "the host in '%.60s...' is longer than %d bytes", shown,
				       CLI_HOST_MAX);
	if (host[0] == '-')
		return dash(cmd, "host", host, n);
	for (i = 0; i < n; i++)
		if (bad_host_byte((unsigned char)host[i]))
			return cli_usage_error(
				cmd,
				"the host in '%s' cannot be one: it holds a blank, a "
				"control byte or one of '[]@/' (an IPv6 address is "
				"written [ADDR])",
				shown);
	return 0;
}

/* The user before a host's '@' (n bytes): 0, or CLI_EXIT_USAGE said. */
static int user_check(const char *shown, const char *user, size_t n)
{
	size_t i;

	if (n == 0)
		return cli_usage_error(NULL, "'%s' names no user before its '@'", shown);
	if (user[0] == '-')
		return dash(NULL, "user", user, n);
	for (i = 0; i < n; i++)
		if ((unsigned char)user[i] <= ' ' || user[i] == 0x7f)
			return cli_usage_error(
				NULL, "the user in '%s' holds a blank or a control byte", shown);
	return 0;
}

/*
 * [USER@][ADDR]:PATH: the host between open and its ']' (*host, *n), the
 * path after its "]:". CLI_EXIT_USAGE said when no "]:" closes it.
 */
static int bracketed(const char *shown, const char *open, const char **host, size_t *n,
		     const char **path)
{
	const char *close = strchr(open, ']');

	if (!close || close[1] != ':')
		return cli_usage_error(NULL,
				       "'%s' opens an address with '[' that no ']:' closes: write "
				       "[USER@][ADDR]:PATH, or ./ before a local name",
				       shown);
	*host = open + 1;
	*n = (size_t)(close - open - 1);
	*path = close + 2;
	return 0;
}

/* Whether s is an IPv6 address, with a %SCOPE after it or not. */
static bool bare_ipv6(const char *s)
{
	unsigned char a[16];
	char buf[64];
	size_t n = strcspn(s, "%");

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET6, buf, a) == 1;
}

int cli_remote_parse(const char *arg, struct cli_remote *r)
{
	const char *colon = strchr(arg, ':'), *slash = strchr(arg, '/'), *open = strchr(arg, '[');
	const char *host = arg, *at = NULL, *path = NULL;
	char shown[200];
	size_t n = 0;
	int err;

	/* An IPv6 address alone is no HOST:PATH: the caller asks for [ADDR]:PATH. */
	if (!colon || (slash && slash < colon) || bare_ipv6(arg))
		return 0;
	rcp_printable(arg, shown, sizeof(shown));
	if (open && open < colon && (open == arg || open[-1] == '@')) {
		const char *close = strchr(open, ']');

		if (slash && (!close || close[1] != ':' || slash < close))
			return 0; /* as scp: a '/' before the "]:" makes it local */
		if ((err = bracketed(shown, open, &host, &n, &path)) != 0)
			return err;
		at = open == arg ? NULL : open - 1;
	} else {
		at = memrchr(arg, '@', (size_t)(colon - arg));
		host = at ? at + 1 : arg;
		n = (size_t)(colon - host);
		path = colon + 1;
	}
	if ((at && (err = user_check(shown, arg, (size_t)(at - arg))) != 0) ||
	    (err = host_check(NULL, shown, host, n)) != 0)
		return err;
	if (snprintf(r->login, sizeof(r->login), "%.*s%.*s", at ? (int)(at - arg + 1) : 0, arg,
		     (int)n, host) >= (int)sizeof(r->login))
		return cli_usage_error(NULL,
				       "the user and host in '%.60s...' are longer than %d bytes",
				       shown, CLI_HOST_MAX);
	r->host = r->login + (at ? at - arg + 1 : 0);
	r->path = path;
	return 1;
}

int cli_host_port_parse(const char *cmd, const char *arg, char *host, size_t len, uint16_t *port)
{
	const char *h = arg, *colon;
	char shown[200];
	unsigned p = 0;
	size_t n;
	int err;

	rcp_printable(arg, shown, sizeof(shown));
	if (arg[0] == '[') {
		const char *close = strchr(arg, ']');

		if (!close || (close[1] && close[1] != ':'))
			return cli_usage_error(cmd, "'%s' is not HOST, HOST:PORT or [ADDR]:PORT",
					       shown);
		h = arg + 1;
		n = (size_t)(close - h);
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(arg, ':');
		if (colon && strchr(colon + 1, ':')) {
			if (!bare_ipv6(arg))
				return cli_usage_error(
					cmd,
					"'%s' is not HOST, HOST:PORT, [ADDR]:PORT or an "
					"IPv6 address",
					shown);
			colon = NULL; /* a bare IPv6 address: a port needs [ADDR]:PORT */
		}
		n = colon ? (size_t)(colon - arg) : strlen(arg);
	}
	if ((err = host_check(cmd, shown, h, n)) != 0)
		return err;
	if (n >= len)
		return cli_usage_error(cmd, "the host in '%.60s...' is longer than %zu bytes",
				       shown, len - 1);
	if (colon && cli_parse_count(cmd, "the port", colon + 1, 65535, &p))
		return CLI_EXIT_USAGE;
	memcpy(host, h, n);
	host[n] = '\0';
	if (colon)
		*port = (uint16_t)p;
	return 0;
}

const char *cli_host_shown(const char *host, char *buf, size_t len)
{
	if (!strchr(host, ':'))
		return host;
	snprintf(buf, len, "[%s]", host);
	return buf;
}
