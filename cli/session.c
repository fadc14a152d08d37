/*
 * session.c - the options of a session with a peer that copies, railcp
 * bench and railcp serve share (--timeout, --stall, --key-file,
 * --no-failover, --rail-stall, --connect-timeout, --ack-timeout, --retry-count,
 * --tos): one parser, so the three commands take them alike.
 */
#include "cli/session.h"

#include <errno.h>
#include <stdlib.h>

/* --tos: a decimal number from 0 to 255 (0 is a traffic class too, not "none"). */
static int tos_parse(const char *cmd, const char *arg, struct eng_qp_knobs *qp)
{
	unsigned long x;
	char *end;

	errno = 0;
	x = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || x > 255 || arg[0] == '-' || arg[0] == '+')
		return cli_usage_error(cmd, "--tos needs a traffic class from 0 to 255, not '%s'",
				       arg);
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
		return cli_parse_secs(cmd, "--connect-timeout", arg, &s->connect_timeout_ms);
	case CLI_OPT_ACK_TIMEOUT:
		return cli_parse_count(cmd, "--ack-timeout", arg, 31, &s->qp.ack_timeout);
	case CLI_OPT_RETRY_COUNT:
		return cli_parse_count(cmd, "--retry-count", arg, 7, &s->qp.retry_count);
	case CLI_OPT_TOS:
		return tos_parse(cmd, arg, &s->qp);
	}
	return -1;
}
