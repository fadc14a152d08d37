# railcp-mpi across two hosts: Open MPI starts one rank on a and one on b
# (mpirun on a, its rsh launcher reaching b through an sshd this test
# starts there, MPI's own traffic on the management link), and each rank
# pushes over the rails to the other host's railcp serve; both servers
# serve one root on the share both guests see. A tree with a 24 MiB file
# (cut over both ranks and both servers, --chunk 256K) and a directory of
# small files lands identical with -p's modes and times, and no temporary
# left; a -u re-run sends nothing; the tree pulled back by both ranks is
# the same. Two ranks in a, one per NUMA node (--map-by ppr:1:numa
# --bind-to numa), to b's server: each takes its own node's rail. b's
# server killed (-9) mid-push: rank 0 moves to a's server, the job
# completes, the tree identical (but for the temporaries the killed
# server leaves, as usage.md says). About 95 s, most of it mpirun's start
# of each job under QEMU.
# Left out: issue 27's rank killed at half the job and a --partial re-run
# sending at most 55%. A kill of b's rank, decided here or by a poll in
# b, did not land mid-copy reliably: a job of 16-32 MiB (--partial keeps
# files whole, one QP per rail, 64K chunks) ended within the time the
# kill took to reach b in 4 of 9 runs, and a slower one costs CI minutes.
. tests/integration/lib.sh
need_two_hosts
MPI=$(dirname "$RAILCP")/railcp-mpi
command -v mpirun >/dev/null || skip "no mpirun (openmpi-bin): run tools/setup"
[ -x "$MPI" ] || fail "mpirun is here but $MPI was not built (scons says why: is libopenmpi-dev installed?)"
command -v /usr/sbin/sshd >/dev/null || skip "no sshd (openssh-server): run tools/setup"
port=7531
dir=$(shared_dir mpi)
cd "$dir" || fail "cannot enter $dir"
run=/run/railcp-x-mpi # tmpfs in each guest: keys must not be readable by others

# b: sshd on the management link alone, taking a's key, for Open MPI's
# rsh launcher (as twohosts/ssh does). HOME in b's tmpfs: the shell that
# runs orted there then reads no profile of this machine's root (one
# printed pyenv's complaint and took seconds under QEMU).
start_sshd_on b $run "SetEnv HOME=$run"
# One connection to b that every launch shares (a key exchange under
# QEMU takes seconds): mpirun's ssh goes through its socket.
spawn_on a sshm $ssh -M -N -o ControlPath=$run/cm b
ssh="$ssh -o ControlPath=$run/cm"
wait_until 30 tb on a $ssh b true || fail "no shared ssh connection to b: $(cat "$(job_file a sshm err)")"

# mpi HOSTS ARGS: railcp-mpi ARGS under mpirun on a, ranks placed by
# HOSTS (--host), the key passed to b's ranks (-x), Open MPI's control
# (oob) and data (btl tcp) on the management link. Its stderr without
# Open MPI's libevent warning at an abort (see mpi in lib.sh).
mpi() {
	_h=$1
	shift
	_mpierr=$(mktemp)
	tb on a timeout 200 mpirun --allow-run-as-root -q --host "$_h" \
		--mca plm_rsh_agent "$ssh" --mca oob_tcp_if_include 198.19.0.0/24 \
		--mca btl self,tcp --mca btl_tcp_if_include 198.19.0.0/24 \
		-x RAILCP_KEY $mpi_extra "$MPI" "$@" 2>"$_mpierr"
	_mpirc=$?
	grep -v -e '^\[warn\] Epoll [A-Z]*([0-9]*) on fd [0-9]* failed\.' "$_mpierr" >&2
	rm -f "$_mpierr"
	return $_mpirc
}
mpi_extra=""
# lap WHAT: how long WHAT took, since the last lap.
t0=$(date +%s)
lap() {
	echo "$1: $(($(date +%s) - t0)) s"
	t0=$(date +%s)
}

mkdir -p root src/sub src/small
big=$((24 << 20))
head -c $big /dev/urandom >src/sub/big
for i in $(seq 1 40); do echo "small file $i" >src/small/f$i; done
chmod 640 src/sub/big
chmod 600 src/small/f7
# Whole seconds: the share's 9p drops the nanoseconds of a time a guest
# sets, so a source time with them would never match its copy's (-p's
# check below, and -u, which would send every file again).
find src -exec touch -d '2022-05-06 07:08:09' {} +
touch -d '2021-03-04 05:06:07' src/sub/big
touch -d '2020-01-02 03:04:05' src/sub
small=$(cat src/small/* | wc -c)

start_server_on a srva --port $port --root "$dir/root"
start_server_on b srvb --port $port --root "$dir/root"
# Rank 0 (on a) pushes to b's server, rank 1 (on b) to a's: the data crosses the wires.
servers="198.18.0.2:$port,198.18.0.1:$port"

lap "set-up (sshd on b, two servers)"
capture mpi a:1,b:1 -r -p --chunk 256K --json src "$servers:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi push across a and b: exit $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums root/in/src)" ] || fail "the tree pushed across a and b differs"
for f in sub/big sub small/f7 small/f1; do
	[ "$(stat -c '%a %y' "src/$f")" = "$(stat -c '%a %y' "root/in/src/$f")" ] ||
		fail "$f: not -p's mode and time: $(stat -c '%n %a %y' "src/$f" "root/in/src/$f")"
done
expect_no_temps root
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["ranks"]
assert [x["host"] for x in r] == ["a", "b"], r
assert [x["server"] for x in r] == ["198.18.0.2", "198.18.0.1"], r
share = [x["share_bytes"] for x in r]
assert sum(share) == '"$((big + small))"' == j["bytes"], (share, j["bytes"])
# The own share of each rank is 3/8 of the job, within a chunk; the four
# batches of the pool went to whichever rank asked first, so share_bytes
# (own share plus batches taken) need not be half.
for x in r:
    assert abs(x["static_bytes"] - j["bytes"] * 3 / 8) <= 262144, r
    assert x["bytes"] == x["share_bytes"] >= x["static_bytes"], x
assert sum(x["batches"] for x in r) == 4, r
assert j["files"] == 41, j["files"]
assert j["moves"] == 0, j
' || fail "--json does not show the big file cut over rank 0 on a and rank 1 on b: $out"
for h in a b; do
	grep -q 'session 1 from 198\.18\.[01]\.[12]: push of .* done' "$(job_file $h srv$h err)" ||
		fail "the server on $h served no push: $(cat "$(job_file $h srv$h err)")"
done
grep -q 'a job.s ranged files put in place in "in' "$(job_file a srva err)" "$(job_file b srvb err)" ||
	fail "no server put the cut file in place"
lap "push across a and b, the big file cut"

# -u: nothing is sent again.
capture mpi a:1,b:1 -r -p -u --json src "$servers:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi -u across a and b: exit $rc: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["bytes"] == 0 and all(x["bytes"] == 0 for x in j["ranks"]), j
' || fail "-u sent something again: $out"
lap "-u re-run"

# Pulled back by both ranks into one directory both hosts see.
capture mpi a:1,b:1 -r -p --json "$servers:in/src/" back
[ "$rc" -eq 0 ] || fail "railcp-mpi pull across a and b: exit $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums back)" ] || fail "the tree pulled back differs"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["direction"] == "pull", j
assert [x["host"] for x in j["ranks"]] == ["a", "b"], j["ranks"]
assert all(x["bytes"] > 0 for x in j["ranks"]), j["ranks"]
' || fail "the pull was not shared by rank 0 on a and rank 1 on b: $out"
expect_no_temps back
lap "pull back"

# Two ranks on a, one per NUMA node, to b's server: each takes its node's
# rail. Over RDMA alone, with time to connect: on auto, a rank whose rail
# took over --connect-timeout's 10 s to connect (seen with the host
# loaded) went on over TCP, on every IP interface.
mpi_extra="--map-by ppr:1:numa --bind-to numa"
capture mpi a:2 -r --json --transport rdma --connect-timeout 60 src "198.18.0.2:$port:numa"
[ "$rc" -eq 0 ] || fail "railcp-mpi with a rank per NUMA node of a: exit $rc: $err; b's server: $(tail -n 8 "$(job_file b srvb err)")"
mpi_extra=""
[ "$(tree_sums src)" = "$(tree_sums root/numa/src)" ] || fail "the tree pushed by two ranks on a differs"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert [x["host"] for x in j["ranks"]] == ["a", "a"], j["ranks"]
assert j["series"]["rails"] == ["rank 0 rxe0:1", "rank 1 rxe1:1"], j["series"]["rails"]
' || fail "the ranks on a did not take their own node's rail: $err $out"
lap "two ranks on a, one per NUMA node"

# b's server killed mid-push: rank 0 moves to a's server, the job completes.
kill_when() {
	python3 - "$@" <<'EOF'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
def landed():
    try:
        return sum(1 for f in os.listdir(d) if not f.startswith(".railcp-tmp-"))
    except FileNotFoundError:
        return 0
end = time.time() + 120
while landed() < n:
    if time.time() > end:
        sys.exit("nothing landed in %s within 120 s" % d)
    time.sleep(0.001)
print(landed())
EOF
}
mkdir -p src/many
head -c $((200 * 65536)) /dev/urandom | (cd src/many && split -b 65536 -a 3 - f)
( kill_when root/kill/many 5 >"$dir/landed" && tb kill b srvb KILL ) &
w=$!
capture mpi a:1,b:1 -r --json src/many "$servers:kill"
wait $w || fail "b's server was not killed mid-push: $(cat "$dir/landed")"
[ "$rc" -eq 0 ] || fail "railcp-mpi with b's server killed: exit $rc: $err"
# What b's killed server was writing stays as its temporaries (as after
# a plain railcp copy to a killed server: usage.md): the final names alone.
tree_sums src/many >"$dir/src.sum"
tree_sums root/kill/many | grep -v ' \./\.railcp-tmp-' >"$dir/kill.sum"
diff "$dir/src.sum" "$dir/kill.sum" >/dev/null ||
	fail "the tree pushed with b's server killed differs: $(diff "$dir/src.sum" "$dir/kill.sum" | head -5); $err"
case "$err" in *"railcp-mpi: rank 0 on a: server 198.18.0.2 port $port is gone ("*"); its copy goes on with 198.18.0.1 port $port"*) ;;
*) fail "not one line saying rank 0 moved from b's server to a's: $err" ;; esac
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["moves"] == 1, j
m, = j["ranks"][0]["moves"]
assert m["moved_to"]["server"] == "198.18.0.1", m
' || fail "--json does not have rank 0's move to a's server: $out"
lap "b's server killed mid-push"
stop_server_on a srva
cd / && rm -rf "$dir"
