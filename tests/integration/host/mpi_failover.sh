# railcp-mpi's server failover, over Open MPI on this host, over TCP on
# 127.0.0.1 (the rail lo): two ranks, two railcp serve processes serving
# one root. A push cuts the big file, larger than a rank's share: rank 0's
# share is the first half of the job's bytes of it (to server 1), rank 1's
# the rest of it and the 200 small files beneath d (to server 2); a pull
# keeps files whole, rank 0's share the big file, rank 1's the small
# files. Once some
# of rank 1's files are in place, server 2 is stopped, what it put in place
# counted, and killed (kill -9) while the copy runs:
# - rank 1 moves to server 1 in one line and the job completes, the trees
#   equal (sha256); --json has the move, and rank 1's bytes after it are
#   its share less at least what server 2 had put in place (compared, not
#   sent again). The same for a pull, rank 1 pulling from server 2, and
#   for a push whose server 2 is stopped with SIGTERM instead (it says
#   "shutting down", and its port refuses the probe while it drains).
# - with --no-failover the job fails in one line naming rank 1, its host
#   and server 2, with no final-named partial file;
# - with both servers killed it fails in one line saying every server is
#   gone, with no final-named partial file.
. tests/integration/lib.sh
mpi_setup

small=200 piece=262144
mkdir -p "$tmp/src/d" "$tmp/root/data"
head -c $((64 * 1024 * 1024)) /dev/urandom >"$tmp/src/big"
head -c $((small * piece)) /dev/urandom | (cd "$tmp/src/d" && split -b $piece -a 3 - f)
(cd "$tmp/src" && find . -type f | sort | xargs sha256sum) >"$tmp/src.sum"

# kill_when DIR N PID...: once N files are in place in DIR, stop the PIDs,
# print how many are in place, and kill them (kill -9). With sig=TERM, print
# the count, send SIGTERM, and 20 ms later stop them for 2.5 s: a drain
# that takes its time, during which the server's port must refuse the
# probe. Python, so that the look comes every half millisecond, well
# before the share is done.
kill_when() {
	python3 - "$@" <<'EOF'
import os, signal, sys, time
d, n, pids = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
term = os.environ.get("sig") == "TERM"
def landed():
    try:
        return sum(1 for f in os.listdir(d) if not f.startswith(".railcp-tmp-"))
    except FileNotFoundError:
        return 0
end = time.time() + 60
while landed() < n:
    if time.time() > end:
        sys.exit("nothing landed in %s within 60 s" % d)
    time.sleep(0.0005)
def signal_if_there(p, sig):
    # A server that ended its sessions and exited in the 20 ms (and was
    # reaped by the shell) has closed its port already: the probe is refused.
    try:
        os.kill(p, sig)
    except ProcessLookupError:
        pass
if term:
    print(landed())
    for p in pids:
        os.kill(p, signal.SIGTERM)
    time.sleep(0.02)
    for p in pids:
        signal_if_there(p, signal.SIGSTOP)
    time.sleep(2.5)
    for p in pids:
        signal_if_there(p, signal.SIGCONT)
    sys.exit(0)
for p in pids:
    os.kill(p, signal.SIGSTOP)
print(landed())
for p in pids:
    os.kill(p, signal.SIGKILL)
EOF
}

# Two new servers of $tmp/root: $port1 and $port2, $pid1 and $pid2.
servers() {
	mpi_ports
	mpi_serve_two
}

# What $1 holds under final names equals the source, each file whole; $2: all of it.
same_tree() {
	(cd "$1" && find . -type f ! -name '.railcp-tmp-*' | sort | xargs -r sha256sum) >"$tmp/dst.sum"
	if [ "$2" = all ]; then
		diff "$tmp/src.sum" "$tmp/dst.sum" >/dev/null
	else
		sort "$tmp/src.sum" >"$tmp/src.sorted"
		[ -z "$(sort "$tmp/dst.sum" | comm -13 "$tmp/src.sorted" -)" ]
	fi
}

# The move in --json ($out): rank 1 from server 2 to server 1, its bytes
# after it its share less at least the $landed small files in place when
# server 2 stopped (compared at both ends, not sent again; its range of
# the big file is sent again whole, into the job's same temporary).
check_move() {
	printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = r0, r1 = j["ranks"]
assert r0["moves"] == [] and j["moves"] == 1, j
m, = r1["moves"]
assert m["moved_from"] == {"server": "127.0.0.1", "port": '"$port2"'}, m
assert m["moved_to"] == {"server": "127.0.0.1", "port": '"$port1"'}, m
assert m["cause"], m
assert r1["port"] == '"$port1"', r1
assert r0["share_bytes"] + r1["share_bytes"] == '"$((64 * 1024 * 1024 + small * piece))"', r
assert r1["share_bytes"] >= '"$((small * piece))"', r1
# More may land after the count: renames in flight in a push server
# io_uring, or by a pull rank itself. Each small file is one chunk: sent whole or not.
kept = r1["share_bytes"] - '"$landed"' * '"$piece"'
assert m["bytes_after"] <= kept and m["bytes_after"] % '"$piece"' == 0, (m, kept)
s = j["series"]
for a, b in zip(s["bytes"], s["bytes"][1:]):
    assert all(x <= y for x, y in zip(a, b)), (a, b)
# The job bytes are the ranks bytes, a failed session bytes at its last sample (20 ms
# apart) among them; the series ends there too.
assert r1["bytes"] >= m["bytes_after"], (r1, m)
assert j["bytes"] == r0["bytes"] + r1["bytes"] == sum(s["bytes"][-1]), (j["bytes"], s["bytes"][-1])
' || fail "$1: --json does not have rank 1's move from port $port2 to $port1 with $landed files not sent again: $out"
	case "$err" in "railcp-mpi: rank 1 on $(hostname): server 127.0.0.1 port $port2 is gone ("*"); its copy goes on with 127.0.0.1 port $port1") ;;
	*) fail "$1: not one line saying rank 1 moved from port $port2 to $port1: $err" ;; esac
}

# kill_run DIR "PID..." ARGS...: railcp-mpi ARGS ($out, $err, $rc) while
# kill_when DIR 5 PID... kills; $landed, how many were in place.
kill_run() {
	_dir=$1 _pids=$2
	shift 2
	kill_when "$_dir" 5 $_pids >"$tmp/landed" &
	_w=$!
	capture mpi "$@"
	wait $_w || fail "no server was killed: $(cat "$tmp/landed")"
	landed=$(cat "$tmp/landed")
}

# completed WHAT DIR: the job completed, rank 1 moved, DIR the source's tree.
completed() {
	[ "$rc" -eq 0 ] || fail "$1 whose server 2 was killed: exit $rc: $err"
	[ "$landed" -lt $small ] || fail "$1: rank 1's share was done before its server was killed: too short to show a move"
	same_tree "$2" all || fail "$1: the tree with a server killed differs: $(diff "$tmp/src.sum" "$tmp/dst.sum" | head -5)"
	check_move "$1"
	kill "$pid1"
	wait "$pid1"
}

# A push: rank 1's server killed mid-copy; it moves, the job completes.
# --no-steal: check_move counts every small file in place as rank 1's,
# which holds only while rank 0 takes none of them from the pool.
servers
kill_run "$tmp/root/in/src/d" "$pid2" -r --no-steal --json "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
completed push "$tmp/root/in/src"

# A push whose server 2 is stopped (SIGTERM): it drains, refusing the probe; rank 1 moves.
servers
sig=TERM kill_run "$tmp/root/term/src/d" "$pid2" -r --no-steal --json "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:term"
wait "$pid2" || fail "server 2 stopped with SIGTERM: exit $?: $(cat "$tmp/s2.log")"
completed "push, server 2 stopped" "$tmp/root/term/src"

# --no-failover: the job ends in one line naming rank 1, its host and server 2.
servers
kill_run "$tmp/root/nf/src/d" "$pid2" -r --no-failover "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:nf"
[ "$rc" -eq 1 ] || fail "--no-failover with a server killed: exit $rc, not 1: $err"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "--no-failover: not one line: $err"
case "$err" in "railcp-mpi: rank 1 on $(hostname) failed pushing to 127.0.0.1 port $port2: "*) ;;
*) fail "--no-failover: the failure does not name rank 1, its host and server 2: $err" ;; esac
same_tree "$tmp/root/nf/src" || fail "--no-failover left a partial file under a final name"
kill "$pid1"
wait "$pid1"

# Every server killed: one line, and no final-named partial file.
servers
kill_run "$tmp/root/all/src/d" "$pid2 $pid1" -r "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:all"
[ "$rc" -eq 1 ] || fail "every server killed: exit $rc, not 1: $err"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "every server killed: not one line: $err"
case "$err" in "railcp-mpi: rank "[01]" on $(hostname) failed pushing to 127.0.0.1 port "*", the last of the job's 2 servers, every other one gone: "*) ;;
*) fail "every server killed: the line does not say every server is gone: $err" ;; esac
same_tree "$tmp/root/all/src" || fail "every server killed: a partial file under a final name"

# A pull: rank 1's server killed mid-copy; it pulls the rest from server 1.
cp -r "$tmp/src" "$tmp/root/data/"
servers
mkdir "$tmp/pulled"
kill_run "$tmp/pulled/src/d" "$pid2" -r --json "127.0.0.1:$port1,127.0.0.1:$port2:data/src" "$tmp/pulled"
no_temp "$tmp/pulled" || fail "the pull left temporaries: $(find "$tmp/pulled" -name '.railcp-tmp-*')"
completed pull "$tmp/pulled/src"
