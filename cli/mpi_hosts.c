/*
 * mpi_hosts.c - railcp-mpi's HOSTS:DST: the servers of the job, named on
 * the command line (h1,h2:7001,[fd00::2]:7001,...) or in a file (@FILE), and the
 * destination beneath their shared root.
 */
#include "cli/cli.h"
#include "cli/mpi.h"

#include "common/common.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SERVERS_MAX 4096

struct list {
	struct cli_mpi_server *s;
	size_t n;
};

/* One server, name (len bytes) with port (0: none); CLI_EXIT_USAGE when bad. */
static int server_add(struct list *l, const char *name, size_t len, unsigned long port)
{
	struct cli_mpi_server *grown;

	if (len == 0 || len >= sizeof(l->s[0].host))
		return cli_usage_error(NULL, "a server in HOSTS is %s",
				       len ? "a name too long" : "empty");
	if (name[0] == '-' || memchr(name, '[', len) || memchr(name, ']', len))
		return cli_usage_error(NULL,
				       "'%.*s' in HOSTS is no host (an IPv6 address is "
				       "written [ADDR] or [ADDR]:PORT)",
				       (int)len, name);
	if (port > 65535 || l->n >= SERVERS_MAX)
		return cli_usage_error(NULL, "%s",
				       l->n >= SERVERS_MAX ? "more than 4096 servers in HOSTS"
							   : "a server's port is above 65535");
	grown = realloc(l->s, (l->n + 1) * sizeof(*grown));
	if (!grown)
		return cli_fail(-ENOMEM);
	l->s = grown;
	/* Whole, so two lists of the same servers compare equal byte for byte (mpi_main.c). */
	memset(&l->s[l->n], 0, sizeof(l->s[l->n]));
	memcpy(l->s[l->n].host, name, len);
	l->s[l->n++].port = (uint16_t)port;
	return 0;
}

/* At p: 1 to 5 digits, then '\0' or one of stops (their end in *end): a port; else 0. */
static unsigned long port_at(const char *p, const char *stops, const char **end)
{
	const char *q = p;

	while (isdigit((unsigned char)*q))
		q++;
	if (q == p || q - p > 5 || (*q != '\0' && !strchr(stops, *q)))
		return 0;
	*end = q;
	return strtoul(p, NULL, 10);
}

/*
 * At s, "[ADDR]" followed by '\0' or one of seps: ADDR's start and length,
 * and the ']' in *close; else CLI_EXIT_USAGE said.
 */
static int bracketed(const char *s, const char *seps, const char **close)
{
	const char *c = strchr(s, ']');

	if (!c || (c[1] != '\0' && !strchr(seps, c[1])))
		return cli_usage_error(NULL,
				       "'%.*s' in HOSTS opens an address with '[' that no "
				       "']' closes before a separator",
				       (int)strcspn(s, ", \t\r\n"), s);
	*close = c;
	return 0;
}

/*
 * The servers of s up to the ':' before DST; with file set (a line of
 * @FILE) up to the string's end, spaces and lines separating them too.
 * An IPv6 address is [ADDR] or [ADDR]:PORT.
 */
static int servers_parse(struct list *l, const char *s, bool file, const char **dst_out)
{
	const char *sep = file ? ", \t\r\n:" : ",:", *stops = file ? ", \t\r\n" : ",:";
	int err = 0;

	while (!err) {
		size_t len = strcspn(s, sep);
		const char *next = s + len, *end = NULL, *name = s, *close = NULL;
		unsigned long p, port = 0;

		if (*s == '[') {
			if ((err = bracketed(s, sep, &close)) != 0)
				return err;
			name = s + 1, len = (size_t)(close - name), next = close + 1;
			if (len == 0)
				return server_add(l, name, 0, 0);
		}
		if (*next == ':' && (p = port_at(next + 1, stops, &end)) && (file || *end))
			port = p, next = end;
		if (file && *next == ':')
			return cli_usage_error(NULL, "'%.*s' is no HOST or HOST:PORT",
					       (int)strcspn(s, stops), s);
		if (len || !file)
			err = server_add(l, name, len, port);
		if (!err && !file && *next == ':') {
			*dst_out = next + 1;
			return 0;
		}
		if (*next == '\0')
			break;
		s = next + 1;
	}
	if (!err && !file)
		err = cli_usage_error(NULL, "the destination needs HOSTS:DST");
	return err;
}

/* @FILE's servers, comments (# to the line's end) left out. */
static int servers_file(struct list *l, const char *path)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f)
		return cli_usage_error(NULL, "cannot read the servers' file %s: %s", path,
				       strerror(errno));
	while (!err && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "#")] = '\0';
		err = servers_parse(l, line, true, NULL);
	}
	fclose(f);
	if (!err && l->n == 0)
		err = cli_usage_error(NULL, "the servers' file %s names no server", path);
	return err;
}

int cli_mpi_servers(const char *arg, struct cli_mpi_server **servers_out, size_t *n_out,
		    const char **dst_out)
{
	struct list l = {0};
	int err;

	if (arg[0] == '@') {
		const char *colon = strchr(arg, ':');
		char path[4096];

		if (!colon || (size_t)(colon - arg) >= sizeof(path) || colon == arg + 1)
			return cli_usage_error(NULL, "the destination needs @FILE:DST");
		memcpy(path, arg + 1, (size_t)(colon - arg - 1));
		path[colon - arg - 1] = '\0';
		err = servers_file(&l, path);
		*dst_out = colon + 1;
	} else {
		err = servers_parse(&l, arg, false, dst_out);
	}
	if (err) {
		free(l.s);
		return err;
	}
	*servers_out = l.s;
	*n_out = l.n;
	return 0;
}
