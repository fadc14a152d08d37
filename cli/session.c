/*
 * session.c - the options of a session with a peer that copies, railcp
 * bench and railcp serve share (--timeout, --stall, --key-file,
 * --no-failover, --rail-stall, --connect-timeout, --ack-timeout, --retry-count): one parser, so the
 * three commands take them alike.
 */
#include "cli/session.h"

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
	}
	return -1;
}
