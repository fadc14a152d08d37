# tests/integration/verbs_fail.sh - sourced by testbed/fault_verbs_client.sh
# and testbed/fault_verbs_server.sh (not a test itself: it lies beside the
# directories the runner globs): an LD_PRELOAD shim (tests/shim/verbs_fail.c)
# fails the k-th call a railcp process makes of the functions its rails are
# set up with (device list, open, query, PD, MR, completion channel, CQ, QP
# modify, event channel, cm id, bind, listen, address and route resolution,
# QP, connect, accept, cm events). A counting run (a trace) lists the calls
# of one bench (one QP per rail: each run costs the start-up of a server and
# two benches, about 7 s in the testbed, 9 with ASan); the k swept are, for
# each function, its first and last call (RAILCP_VERBS_SWEEP=all: every k,
# which also fails the calls in between, such as a second rail's). Each run must end within 60 s
# with status 0 (the failure was survived) or 1 with one line on stderr: no
# crash, no hang, no second line; in the ASan build no report either (more
# than one line, and a server's log is searched for one).
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
shim=$(dirname "$RAILCP")/tests/libverbs_fail.so
[ -e "$shim" ] || fail "no $shim: build it with scons"
# An ASan railcp with the shim preloaded ahead of its runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
bench="bench 127.0.0.1 --bytes 4M --timeout 10 --qps-per-rail 1"
log=serve.log

# shimmed K CMD...: CMD with the shim failing call K (0: none), its calls traced to trace.
shimmed() {
	_k=$1
	shift
	rm -f "$dir/trace"
	LD_PRELOAD=$shim RAILCP_VERBS_FAIL_AT=$_k RAILCP_VERBS_TRACE=$dir/trace "$@"
}

# What call K was: "<k> <name> failed".
what() { grep " failed$" "$dir/trace" 2>/dev/null || echo "call $1 (not reached)"; }

# sweep TRACE: the k to fail, from a counting run's trace.
sweep() {
	if [ "${RAILCP_VERBS_SWEEP:-}" = all ]; then
		cut -d' ' -f1 "$1"
		return
	fi
	awk '{ n[$2]++; if (n[$2] == 1) print $1; last[$2] = $1 } END { for (f in last) print last[f] }' "$1" |
		sort -n -u
}

# survived LABEL: $rc/$err of a run are status 0, or 1 with one line.
survived() {
	[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "$1: no end within 60 s"
	[ "$rc" -eq 0 ] && return 0
	expect_one_line_error "$1"
	[ "$rc" -eq 1 ] || fail "$1: exit status $rc: $err"
}

# names TRACE: the functions a trace holds.
names() { cut -d' ' -f2 "$1" | sort -u | tr '\n' ' '; }
