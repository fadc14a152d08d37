/*
 * fallback.c - when every RDMA rail fails mid-copy, the copy goes on over
 * tcp (protocol 15). A client on --transport auto that chose rdma holds a
 * TCP plan (eng_client_opts.plan_tcp); with failover on, its hello's flags
 * say "fallback", and then:
 *
 * - the receiver (the server of a push, the client of a pull) writes each
 *   file of several chunks in its partial file, as --partial does
 *   (io/partial.c), so what landed can be kept; without --partial or -c
 *   what an earlier --partial copy kept at those names is left alone
 *   (IO_ROOT_SPARE, eng__dest_flags);
 * - when the session ends failed, the receiver keeps those files and their
 *   records only if every rail failed: the client's own job says so, or
 *   the server's error frame flagged "rails_down"; a server trusts only
 *   the client's error frame so flagged (the client goes on over tcp: a
 *   client killed outright, whose stripes fail too, says nothing and
 *   never comes back); on any other failure they go, as without
 *   --partial (eng__session_fallback_drop), unless --partial or -c asked
 *   to keep them anyway;
 * - the client runs the copy once more over its TCP plan, as -c: kept
 *   chunks are confirmed by the sender's keyed digest, files in place are
 *   compared chunk by chunk, only what differs travels
 *   (eng__client_fall_back);
 * - a server serving once does not count the first session, and waits for
 *   the second as it does for a client it sent to tcp (server.c,
 *   listener.c), once per run. A server with no TCP plan refuses the second
 *   (eng__transport_pick), and the client's sentence names both causes.
 *
 * Threading: the session's thread.
 */
#include "engine/session/fallback.h"

#include "common/common.h"

#include <stdio.h>

bool eng__session_own_rails_down(const struct eng_session *s)
{
	if (s->setup_down)
		return true;
	return s->job && !s->no_failover && eng__job_fabric_err(s->job) &&
	       eng__job_stripes_alive(s->job) == 0;
}

bool eng__session_falls(const struct eng_session *s)
{
	/* Decided once, by the word both ends saw: the client's error frame. */
	if (s->side == ENG_SERVER)
		return s->ctl.peer_rails_down;
	return s->err_sent && s->ctl.rails_down;
}

void eng__session_fallback_drop(struct eng_session *s, int err)
{
	char why[ENG_JOB_ERR_LEN];

	if (!err || !s->fallback || s->partial || !s->files || eng__session_falls(s))
		return;
	snprintf(why, sizeof(why), "%s", rcp_err_msg(err));
	eng__files_unkept(s->files);
	rcp_err(err, "%s", why); /* a marker that could not go: said by nothing */
}

void eng__fall_record(const struct eng_session *s, const struct eng_client_opts *o)
{
	struct eng_report r;

	if (!o->fall || !s->fallback || !eng__session_falls(s))
		return;
	o->fall->rails_down = true;
	o->fall->setup = s->setup_down;
	if (!s->job)
		return;
	eng__job_report(s->job, &r);
	o->fall->bytes = r.bytes;
	o->fall->bytes_total = r.bytes_total;
	o->fall->chunks = r.chunks;
	o->fall->seconds = r.seconds;
}

int eng__client_fall_back(const struct eng_client_opts *o, int err, uint64_t t0_ns,
			  struct eng_report *report_out)
{
	const struct eng_fall *f = o->fall;
	struct eng_client_opts tcp = *o;
	struct eng_copy_opts cp;
	char why[ENG_JOB_ERR_LEN];

	if (!err || !f || !f->rails_down || !o->plan_tcp || !o->copy)
		return err;
	snprintf(why, sizeof(why), "%s", rcp_err_msg(err));
	if (f->setup)
		rcp_log(RCP_LOG_NOTICE,
			"no RDMA rail connected: going over tcp (--transport auto)");
	else
		rcp_log(RCP_LOG_NOTICE,
			"every RDMA rail failed after %.1f of %.1f MiB: going on over tcp "
			"(--transport auto)",
			(double)f->bytes / (1 << 20), (double)f->bytes_total / (1 << 20));
	cp = *o->copy;
	cp.checksum = true; /* a resume: kept chunks confirmed, files in place compared */
	tcp.copy = &cp;
	tcp.plan = o->plan_tcp;
	tcp.plan_tcp = NULL;
	tcp.fall = NULL;
	tcp.tr = eng__transport_tcp();
	err = eng__client_ask(&tcp, report_out);
	if (err)
		return rcp_err(err, "%s; going on over tcp: %s", why, rcp_err_msg(err));
	report_out->fell_back = true;
	report_out->fallback_setup = f->setup;
	snprintf(report_out->fallback_from, sizeof(report_out->fallback_from), "%s",
		 eng__transport_word(o->tr));
	snprintf(report_out->fallback_why, sizeof(report_out->fallback_why), "%s", why);
	report_out->fallback_bytes = f->bytes;
	report_out->bytes += f->bytes; /* bytes_kept counts them again, as not sent over tcp */
	report_out->chunks += f->chunks;
	report_out->seconds += f->seconds;
	report_out->wall_seconds = (double)(rcp_now_ns() - t0_ns) / 1e9;
	return 0;
}
