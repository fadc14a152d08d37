/*
 * session.c - the options of a session with a peer that copies, railcp
 * bench and railcp serve share (--timeout, --stall, --key-file,
 * --no-failover, --rail-stall, --connect-timeout, --ack-timeout, --retry-count,
 * --tos): one parser, so the three commands take them alike. The last
 * four are the fabric knobs a profile may hold too (topology/profile.c):
 * cli_session_knobs fills those the command line left unset from it.
 */
#include "cli/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* --tos: a decimal number from 0 to 255 (0 is a traffic class too, not "none"). */
static int tos_parse(const char *cmd, const char *arg, struct eng_qp_knobs *qp)
{
	unsigned long x;
	char *end;

	errno = 0;
	x = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || x > TOPO_MAX_TOS || arg[0] == '-' || arg[0] == '+')
		return cli_usage_error(cmd, "--tos needs a traffic class from 0 to %u, not '%s'",
				       TOPO_MAX_TOS, arg);
	qp->tos_set = true;
	qp->tos = (uint8_t)x;
	return 0;
}

int cli_session_opt(const char *cmd, struct cli_session *s, int c, const char *arg)
{
	switch (c) {
	case CLI_OPT_TIMEOUT:
		return cli_parse_secs(cmd, "--timeout", arg, &s->timeout_ms);
	case CLI_OPT_STALL:
		return cli_parse_secs(cmd, "--stall", arg, &s->stall_ms);
	case CLI_OPT_KEY_FILE:
		s->key_file = arg;
		return 0;
	case CLI_OPT_NO_FAILOVER:
		s->no_failover = true;
		return 0;
	case CLI_OPT_RAIL_STALL:
		return cli_parse_secs(cmd, "--rail-stall", arg, &s->rail_stall_ms);
	case CLI_OPT_CONNECT_TIMEOUT:
		/* a profile's connect_timeout has the bound of every seconds option */
		_Static_assert(TOPO_MAX_CONNECT_TIMEOUT == CLI_MAX_SECS, "one bound");
		return cli_parse_secs(cmd, "--connect-timeout", arg, &s->connect_timeout_ms);
	case CLI_OPT_ACK_TIMEOUT:
		return cli_parse_count(cmd, "--ack-timeout", arg, TOPO_MAX_ACK_TIMEOUT,
				       &s->qp.ack_timeout);
	case CLI_OPT_RETRY_COUNT:
		return cli_parse_count(cmd, "--retry-count", arg, TOPO_MAX_RETRY_COUNT,
				       &s->qp.retry_count);
	case CLI_OPT_TOS:
		return tos_parse(cmd, arg, &s->qp);
	}
	return -1;
}

void cli_session_knobs(struct cli_session *s, const struct topo_plan *plan)
{
	const struct topo_knobs *k = plan ? &plan->knobs : NULL;

	if (!k)
		return;
	if (!s->qp.tos_set && k->tos_set) {
		s->qp.tos_set = true;
		s->qp.tos = (uint8_t)k->tos;
	}
	if (!s->qp.ack_timeout)
		s->qp.ack_timeout = k->ack_timeout;
	if (!s->qp.retry_count)
		s->qp.retry_count = k->retry_count;
	if (!s->connect_timeout_ms)
		s->connect_timeout_ms = (int)k->connect_timeout * 1000;
}

void cli_knobs_of(const struct eng_qp_knobs *qp, int connect_timeout_ms, struct topo_knobs *k)
{
	*k = (struct topo_knobs){.tos_set = qp->tos_set,
				 .tos = qp->tos,
				 .ack_timeout = qp->ack_timeout,
				 .retry_count = qp->retry_count,
				 .connect_timeout = (unsigned)connect_timeout_ms / 1000};
}

void cli_session_knobs_save(const struct cli_session *s, struct topo_knobs *k)
{
	cli_knobs_of(&s->qp, s->connect_timeout_ms, k);
}

void cli_knobs_str(const struct topo_knobs *k, char *buf, size_t len)
{
	int n = 0;

	buf[0] = '\0';
	if (k->tos_set)
		n += snprintf(buf + n, len - (size_t)n, "tos %u", k->tos);
	if (k->ack_timeout && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%sack_timeout %u", n ? ", " : "",
			      k->ack_timeout);
	if (k->retry_count && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%sretry_count %u", n ? ", " : "",
			      k->retry_count);
	if (k->connect_timeout && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "%sconnect_timeout %u s", n ? ", " : "",
			 k->connect_timeout);
}
