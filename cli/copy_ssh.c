/*
 * copy_ssh.c - how a copy reaches its far side: the railcp server on
 * --port, or a railcp that ssh (or -e's command) starts on the host for
 * this one copy (rsh.h), where remote paths become names beneath that
 * server's root and the key is the one it made. A copy goes over ssh with
 * -e, when nothing answers on --port, or, without a key, when what answers
 * is not a server of this user on this host.
 *
 * Threading: the copy's thread.
 */
#include "cli/copy.h"
#include "cli/rsh.h"

#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The copy through a far side that rsh starts for it (rsh.h): remote paths
 * become names beneath its root, and the key is the one it made.
 */
static int copy_over_ssh(struct cli_copy *cc, const char *rsh, struct eng_report *rep)
{
	struct eng_copy_opts o = cc->o;
	size_t i, n = o.dir == ENG_PUSH ? 1 : o.n_src;
	char **names = calloc(n, sizeof(*names)), host[256];
	/*
	 * The far side on auto when this side's auto chose rdma: the two agree
	 * (engine/session/agree.c). One that chose tcp has no rdma to offer.
	 */
	const char *far = cc->place.chose && cc->o.transport == ENG_TRANSPORT_RDMA
				  ? "auto"
				  : eng_transport_str(cc->o.transport);
	struct cli_rsh r;
	int err = names ? cli_rsh_start(&r, rsh, cc->host, cc->railcp_path, &cc->sess, far)
			: rcp_err(-ENOMEM, "out of memory");

	for (i = 0; i < n && !err; i++) {
		err = cli_rsh_path(&r, o.dir == ENG_PUSH ? o.dst : o.src[i], &names[i]);
		if (!err && o.dir == ENG_PULL && !names[i][0])
			names[i][0] = '.', names[i][1] = '\0'; /* "/": the root, "" pushes to it */
	}
	if (!err) {
		if (o.dir == ENG_PUSH)
			o.dst = names[0];
		else
			o.src = (const char *const *)names;
		o.host = strcmp(r.addr, "0.0.0.0") && strcmp(r.addr, "::")
				 ? r.addr
				 : cli_rsh_hostname(cc->host);
		o.port = r.port;
		o.key = r.key;
		cc->over_ssh = true;
		rcp_printable(r.home, cc->ssh_home, sizeof(cc->ssh_home));
		if (cc->line.label) /* the progress line says it too */
			cc->line.label = o.dir == ENG_PUSH ? "push over ssh" : "pull over ssh";
		/* Said whatever the way to ssh: the paths now mean something else there. */
		rcp_log(RCP_LOG_NOTICE,
			"over ssh to %s: its railcp serves this copy; a relative path there is "
			"beneath %s",
			rcp_printable(cc->host, host, sizeof(host)), cc->ssh_home);
		err = eng_copy_run(&o, rep);
	}
	if (names)
		cli_rsh_finish(&r, o.timeout_ms);
	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

int cli__copy_run(struct cli_copy *cc, struct eng_report *rep)
{
	const char *env = getenv(CLI_RSH_ENV);
	char why[512];
	bool keyless;
	int err;

	if (cc->rsh)
		return copy_over_ssh(cc, cc->rsh, rep);
	err = eng_copy_run(&cc->o, rep);
	if ((err != -ECONNREFUSED && err != -ENOKEY) || (cc->o.cancel && atomic_load(cc->o.cancel)))
		return err;
	keyless = err == -ENOKEY;
	snprintf(why, sizeof(why), "%s", rcp_err_msg(err));
	rcp_log(RCP_LOG_INFO, "%s; starting railcp over ssh", why);
	err = copy_over_ssh(cc, env && env[0] ? env : CLI_RSH_DEFAULT, rep);
	if (err && !cc->over_ssh && keyless)
		err = rcp_err(err, "no key for a railcp server on %s, and over ssh: %s", cc->o.host,
			      rcp_err_msg(err));
	else if (err && !cc->over_ssh)
		err = rcp_err(err, "no railcp serve answers on %s port %u, and over ssh: %s",
			      cc->o.host, cc->o.port ? cc->o.port : ENG_DEFAULT_PORT,
			      rcp_err_msg(err));
	return err;
}
