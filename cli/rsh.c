/*
 * rsh.c - start railcp's far side over ssh for one copy (design: rsh.h).
 *
 * The remote shell runs with a pipe on its stdin (held open for the whole
 * copy: the far side stops when it closes), a pipe on its stdout (the
 * greeting) and an anonymous memfd on its stderr, so whatever ssh or the far
 * side prints can never fill a pipe and block them, and is there to quote
 * when they fail.
 */
#include "cli/rsh.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define RSH_GREETING_MAX 8192
#define RSH_REAP_POLL_MS 20

const char *cli_rsh_hostname(const char *host)
{
	const char *at = strrchr(host, '@');

	return at ? at + 1 : host;
}

/* s in single quotes for a POSIX shell, into buf; false when it does not fit. */
static bool shell_quote(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	if (len < 3)
		return false;
	buf[n++] = '\'';
	for (; *s; s++) {
		const char *piece = *s == '\'' ? "'\\''" : NULL;
		size_t k = piece ? 4 : 1;

		if (n + k + 2 > len)
			return false;
		if (piece)
			memcpy(buf + n, piece, k);
		else
			buf[n] = *s;
		n += k;
	}
	buf[n++] = '\'';
	buf[n] = '\0';
	return true;
}

int cli_rsh_host_check(const char *host)
{
	const char *name = cli_rsh_hostname(host);
	char esc[200];

	if (host[0] != '-' && name[0] != '-')
		return 0;
	return rcp_err(-EINVAL,
		       "the host '%s' begins with '-': ssh would read it as an option (write ./ "
		       "before a local name that has a ':')",
		       rcp_printable(host[0] == '-' ? host : name, esc, sizeof(esc)));
}

/* Whether the program rsh runs (its first word) is ssh, and whether rsh ends in "--" already. */
static bool runs_ssh(const char *rsh, bool *dashes_out)
{
	const char *prog = rsh + strspn(rsh, " \t"), *base = prog, *end;
	size_t n = strcspn(prog, " \t");

	for (end = prog; end < prog + n; end++)
		if (*end == '/')
			base = end + 1;
	for (end = rsh + strlen(rsh); end > rsh && (end[-1] == ' ' || end[-1] == '\t'); end--)
		;
	*dashes_out = end - rsh >= 3 && !memcmp(end - 3, " --", 3);
	return prog + n - base == 3 && !memcmp(base, "ssh", 3);
}

int cli_rsh_argv(const char *rsh, const char *host, const char *remote, char cmd[CLI_RSH_CMD_MAX],
		 const char *argv_out[CLI_RSH_ARGV_MAX])
{
	bool dashes, ssh = runs_ssh(rsh, &dashes);
	int n = 0, k;

	/*
	 * The user's command as the shell reads it (rsync's -e does the same),
	 * then ours; exec, so that signals reach ssh itself.
	 */
	k = snprintf(cmd, CLI_RSH_CMD_MAX, "exec %s \"$@\"", rsh);
	if (k < 0 || k >= CLI_RSH_CMD_MAX)
		return rcp_err(-ENAMETOOLONG, "the remote shell command is too long: '%.40s...'",
			       rsh);
	argv_out[n++] = "/bin/sh";
	argv_out[n++] = "-c";
	argv_out[n++] = cmd;
	argv_out[n++] = "railcp-rsh"; /* $0 */
	if (ssh && !dashes)
		argv_out[n++] = "--"; /* the end of ssh's options: the host is never one */
	argv_out[n++] = host;
	argv_out[n++] = remote;
	argv_out[n] = NULL;
	return 0;
}

static void child_exec(const char *const *argv, int in, int out, int err)
{
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	signal(SIGPIPE, SIG_DFL);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

static int spawn(struct cli_rsh *r, const char *rsh, const char *const *argv)
{
	int in[2], out[2];

	r->err_fd = memfd_create("railcp-rsh-stderr", MFD_CLOEXEC);
	if (r->err_fd < 0)
		return rcp_err(-errno, "memfd_create: %s", strerror(errno));
	if (pipe2(in, O_CLOEXEC) < 0)
		return rcp_err(-errno, "pipe: %s", strerror(errno));
	if (pipe2(out, O_CLOEXEC) < 0) {
		int e = errno;

		close(in[0]);
		close(in[1]);
		return rcp_err(-e, "pipe: %s", strerror(e));
	}
	r->pid = fork();
	if (r->pid == 0)
		child_exec(argv, in[0], out[1], r->err_fd);
	close(in[0]);
	close(out[1]);
	r->in_fd = in[1];
	r->out_fd = out[0];
	if (r->pid < 0)
		return rcp_err(-errno, "cannot start '%s': fork: %s", rsh, strerror(errno));
	return 0;
}

/*
 * The last line the remote shell printed on stderr, through rcp_printable
 * (ssh's words, or the far side's), into buf ("" if none).
 */
static void last_err_line(const struct cli_rsh *r, char *buf, size_t len)
{
	char text[RSH_GREETING_MAX];
	ssize_t n = pread(r->err_fd, text, sizeof(text) - 1, 0);
	off_t size = lseek(r->err_fd, 0, SEEK_END);
	char *end, *start;

	if (size > (off_t)sizeof(text) - 1) /* the tail: the error comes last */
		n = pread(r->err_fd, text, sizeof(text) - 1, size - (off_t)sizeof(text) + 1);
	buf[0] = '\0';
	if (n <= 0)
		return;
	text[n] = '\0';
	for (end = text + n; end > text && (end[-1] == '\n' || end[-1] == '\r'); end--)
		*(end - 1) = '\0';
	start = strrchr(text, '\n');
	rcp_printable(start ? start + 1 : text, buf, len);
}

/* Wait up to ms for the remote shell to end; its wait status, or -1 if it has not. */
static int reap(struct cli_rsh *r, int ms)
{
	int status, waited = 0;

	while (r->pid > 0) {
		pid_t p = waitpid(r->pid, &status, WNOHANG);

		if (p == r->pid || (p < 0 && errno != EINTR)) {
			r->pid = -1;
			return p == -1 ? -1 : status;
		}
		if (waited >= ms)
			return -1;
		usleep(RSH_REAP_POLL_MS * 1000);
		waited += RSH_REAP_POLL_MS;
	}
	return -1;
}

/* The sentence for a remote shell that ended (or said something else) before its greeting. */
static int start_failed(struct cli_rsh *r, const char *rsh, const char *host, const char *said)
{
	char prog[256];
	char line[512];
	char esc[84]; /* what it said, cut to about 80 bytes */
	int status = reap(r, 2000);
	int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;

	last_err_line(r, line, sizeof(line));
	if (said) /* the far side's words: never a terminal escape (scp's CVE-2019-6109) */
		return rcp_err(-EPROTO,
			       "%s did not answer as 'railcp serve --ssh' does (it said '%s')%s%s",
			       host, rcp_printable(said, esc, sizeof(esc)), line[0] ? ": " : "",
			       line);
	if (code == 255)
		return rcp_err(-EHOSTUNREACH, "ssh to %s failed: %s", host,
			       line[0] ? line : "it exited with status 255");
	if (sscanf(rsh, "%255s", prog) == 1 && (code == 126 || code == 127) && strstr(line, prog))
		return rcp_err(-ENOENT, "cannot start the remote shell '%s': %s", prog, line);
	if (code == 126 || code == 127)
		return rcp_err(-ENOENT,
			       "cannot run railcp on %s over ssh: %s (is railcp installed there? "
			       "--railcp-path names it)",
			       host, line[0] ? line : "command not found");
	if (line[0])
		return rcp_err(-EPROTO, "railcp on %s did not start a session: %s", host, line);
	return rcp_err(-EPROTO, "railcp on %s did not start a session (the remote shell %s %d)",
		       host, code >= 0 ? "exited with status" : "was killed by signal",
		       code >= 0 ? code : (status >= 0 ? WTERMSIG(status) : 0));
}

int cli_rsh_greeting_parse(struct cli_rsh *r, const char *line)
{
	char word[16], addr[sizeof(r->addr)], key[sizeof(r->key)];
	unsigned version, port;
	int home = -1;
	size_t i;

	if (sscanf(line, "%15s %u %63s %u %64s %n", word, &version, addr, &port, key, &home) != 5 ||
	    home < 0 || strcmp(word, CLI_RSH_GREETING) != 0 || version != CLI_RSH_VERSION ||
	    port == 0 || port > 65535 || strlen(key) != CLI_RSH_KEY_HEX || line[home] != '/' ||
	    strlen(line + home) >= sizeof(r->home))
		return -EPROTO;
	for (i = (size_t)home; line[i]; i++) /* no home has one; a hostile far side might */
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return -EPROTO;
	memcpy(r->addr, addr, sizeof(addr));
	r->port = (uint16_t)port;
	memcpy(r->key, key, sizeof(key));
	snprintf(r->home, sizeof(r->home), "%s", line + home);
	return 0;
}

/* Read the greeting line within timeout_ms; -EPIPE at EOF, -ETIMEDOUT, or -ENOSPC. */
static int greeting_read(struct cli_rsh *r, char *line, size_t len, int timeout_ms)
{
	uint64_t end = rcp_now_ns() + (uint64_t)timeout_ms * 1000000u;
	size_t n = 0;

	for (;;) {
		struct pollfd pfd = {.fd = r->out_fd, .events = POLLIN};
		uint64_t now = rcp_now_ns();
		ssize_t k;
		char *nl;

		if (now >= end)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)((end - now) / 1000000 + 1)) <= 0)
			continue;
		k = read(r->out_fd, line + n, len - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		n += (size_t)k;
		line[n] = '\0';
		if ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			return 0;
		}
		if (n == len - 1)
			return -ENOSPC;
	}
}

/* printf's words appended to buf (len bytes) at *n; false when they do not fit. */
static bool __attribute__((format(printf, 4, 5)))
append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= len - *n)
		return false;
	*n += (size_t)k;
	return true;
}

int cli_rsh_remote(const char *railcp_path, const struct cli_session *s, const char *transport,
		   char *buf, size_t len)
{
	char quoted[4096];
	size_t n = 0;
	bool ok;

	if (!shell_quote(railcp_path, quoted, sizeof(quoted)))
		return rcp_err(-ENAMETOOLONG, "--railcp-path is too long");
	/* Each option in whole seconds or counts, as parsed: what was given is what goes. */
	ok = append(buf, len, &n, "%s serve --ssh --timeout %d", quoted, s->timeout_ms / 1000);
	if (ok && s->stall_ms > 0)
		ok = append(buf, len, &n, " --stall %d", s->stall_ms / 1000);
	if (ok && s->rail_stall_ms > 0)
		ok = append(buf, len, &n, " --rail-stall %d", s->rail_stall_ms / 1000);
	if (ok && s->connect_timeout_ms > 0)
		ok = append(buf, len, &n, " --connect-timeout %d", s->connect_timeout_ms / 1000);
	if (ok && s->no_failover)
		ok = append(buf, len, &n, " --no-failover");
	if (ok && s->qp.ack_timeout)
		ok = append(buf, len, &n, " --ack-timeout %u", s->qp.ack_timeout);
	if (ok && s->qp.retry_count)
		ok = append(buf, len, &n, " --retry-count %u", s->qp.retry_count);
	if (ok && s->qp.tos_set)
		ok = append(buf, len, &n, " --tos %u", s->qp.tos);
	if (ok && transport)
		ok = append(buf, len, &n, " --transport %s", transport);
	return ok ? 0 : rcp_err(-ENAMETOOLONG, "--railcp-path is too long");
}

int cli_rsh_start(struct cli_rsh *r, const char *rsh, const char *host, const char *railcp_path,
		  const struct cli_session *s, const char *transport)
{
	char remote[4400], line[RSH_GREETING_MAX], cmd[CLI_RSH_CMD_MAX];
	char esc[512];
	const char *argv[CLI_RSH_ARGV_MAX];
	int timeout_ms = s->timeout_ms;
	int err;

	*r = (struct cli_rsh){.pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1};
	err = cli_rsh_host_check(host);
	if (!err)
		err = cli_rsh_remote(railcp_path, s, transport, remote, sizeof(remote));
	if (!err)
		err = cli_rsh_argv(rsh, host, remote, cmd, argv);
	if (err)
		return err;
	rcp_log(RCP_LOG_INFO, "starting the far side: %s %s%s %s", rsh,
		argv[4] == host ? "" : "-- ", host, remote);
	err = spawn(r, rsh, argv);
	if (err)
		return err;
	err = greeting_read(r, line, sizeof(line), timeout_ms);
	if (err == -ETIMEDOUT) {
		kill(r->pid, SIGTERM);
		return rcp_err(-ETIMEDOUT,
			       "railcp on %s did not answer over ssh within %d s (started with "
			       "'%s')",
			       host, timeout_ms / 1000, rsh);
	}
	if (err)
		return start_failed(r, rsh, host, err == -ENOSPC ? "a line too long" : NULL);
	if (cli_rsh_greeting_parse(r, line) != 0)
		return start_failed(r, rsh, host, line);
	rcp_log(RCP_LOG_INFO, "the far side listens on %s port %u; its home is %s", r->addr,
		r->port, rcp_printable(r->home, esc, sizeof(esc)));
	return 0;
}

int cli_rsh_path(const struct cli_rsh *r, const char *path, char **out)
{
	const char *base = path[0] == '/' ? "" : r->home;
	size_t len;
	char *s;

	while (*base == '/')
		base++;
	while (*path == '/')
		path++;
	len = strlen(base) + strlen(path) + 2;
	s = malloc(len);
	if (!s)
		return rcp_err(-ENOMEM, "out of memory");
	/* "HOST:" is the home: "home/ann/", so that as a source it is still its contents */
	snprintf(s, len, "%s%s%s", base, base[0] ? "/" : "", path);
	*out = s;
	return 0;
}

void cli_rsh_finish(struct cli_rsh *r, int timeout_ms)
{
	if (r->in_fd >= 0)
		close(r->in_fd);
	r->in_fd = -1;
	if (r->pid > 0 && reap(r, timeout_ms) < 0 && r->pid > 0) {
		kill(r->pid, SIGTERM);
		if (reap(r, 2000) < 0 && r->pid > 0) {
			kill(r->pid, SIGKILL);
			reap(r, 2000);
		}
	}
	if (r->out_fd >= 0)
		close(r->out_fd);
	if (r->err_fd >= 0)
		close(r->err_fd);
	r->out_fd = r->err_fd = -1;
}
