# railcp-mpi started by Slurm's srun instead of mpirun (Open MPI's PMIx
# support, srun --mpi=pmix), on this host, over TCP on 127.0.0.1: the test
# runs a Slurm of its own (munged, slurmctld and slurmd in its temporary
# directory, on free ports, one node: this host). Two tasks push a tree with
# a big file cut over both ranks and both servers, with -p: it lands
# byte-identical with its modes and times, each server served a push, no
# temporary is left; a -u re-run sends nothing; two tasks pull it back whole;
# a missing source ends the job with railcp-mpi's one line and srun's
# non-zero status.
# Skipped, saying so, where Slurm or munge is not installed (tools/setup
# installs them), where the test is not root (slurmd starts tasks as their
# user), or where MPI cannot run at all (need_mpi in lib.sh).
. tests/integration/lib.sh
mpi_setup
for tool in munged slurmctld slurmd srun sinfo; do
	command -v "$tool" >/dev/null || skip "no $tool here (slurmctld, slurmd, slurm-client, munge): run tools/setup"
done
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root to start the tasks"

# The test's Slurm: its own munge key and socket, state, ports and logs.
sl="$tmp/slurm"
mkdir -m 700 "$sl" "$sl/state" "$sl/spool"
head -c 1024 /dev/urandom >"$sl/munge.key"
chmod 600 "$sl/munge.key"
munged -F -f -S "$sl/munge.sock" --key-file="$sl/munge.key" --log-file="$sl/munged.log" \
	--pid-file="$sl/munged.pid" --seed-file="$sl/munged.seed" 2>>"$sl/munged.log" &
munge_pid=$!
node=$(hostname -s)
cat >"$sl/slurm.conf" <<EOF
ClusterName=railcp
SlurmctldHost=$node(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$sl/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$sl/state
SlurmdSpoolDir=$sl/spool
SlurmctldPidFile=$sl/slurmctld.pid
SlurmdPidFile=$sl/slurmd.pid
SlurmctldLogFile=$sl/slurmctld.log
SlurmdLogFile=$sl/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=railcp Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$sl/slurm.conf"
wait_until 10 [ -S "$sl/munge.sock" ] || fail "munged did not start: $(cat "$sl/munged.log")"
slurmctld -D -f "$SLURM_CONF" 2>>"$sl/slurmctld.log" &
ctld_pid=$!
slurmd -D -f "$SLURM_CONF" -N "$node" 2>>"$sl/slurmd.log" &
slurmd_pid=$!
mpi_at_exit='kill $slurmd_pid $ctld_pid 2>/dev/null; sleep 0.2; kill $munge_pid 2>/dev/null'
node_idle() { [ "$(sinfo -h -o %t 2>/dev/null)" = idle ]; }
wait_until 30 node_idle ||
	fail "the test's Slurm has no idle node: $(sinfo 2>&1; tail -n 5 "$sl/slurmctld.log" "$sl/slurmd.log")"

# srun's tasks run railcp-mpi; its own report of a failed task stays apart ($srun_err).
srun_mpi() {
	_serr=$(mktemp)
	timeout 120 srun -n 2 --mpi=pmix "$MPI" --transport tcp --rails lo "$@" 2>"$_serr"
	_src=$?
	srun_err=$(grep '^srun: ' "$_serr")
	grep -v '^srun: ' "$_serr" | grep -v '^\[warn\] Epoll [A-Z]*([0-9]*) on fd [0-9]* failed\.' >&2
	rm -f "$_serr"
	return $_src
}

big=$((6 * 1024 * 1024 + 5))
mkdir -p "$tmp/root" "$tmp/src/sub"
head -c $big /dev/urandom >"$tmp/src/sub/big"
for i in 1 2 3 4 5 6 7 8; do echo "small $i" >"$tmp/src/s$i"; done
chmod 640 "$tmp/src/sub/big"
touch -d '2021-03-04 05:06:07.5' "$tmp/src/sub/big"
touch -d '2020-01-02 03:04:05' "$tmp/src/sub"
mpi_serve_two

capture srun_mpi -r -p --chunk 256K --json "$tmp/src" "$servers:in"
[ "$rc" -eq 0 ] || fail "srun railcp-mpi push: exit $rc: $err $srun_err"
diff -r "$tmp/src" "$tmp/root/in/src" || fail "the tree srun's ranks pushed differs"
for f in sub/big sub; do
	[ "$(stat -c '%a %y' "$tmp/src/$f")" = "$(stat -c '%a %y' "$tmp/root/in/src/$f")" ] ||
		fail "$f: not -p's mode and time: $(stat -c '%a %y' "$tmp/src/$f" "$tmp/root/in/src/$f")"
done
no_temp "$tmp/root" || fail "temporaries left: $(find "$tmp/root" -name '.railcp-tmp-*')"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["ranks"]
assert [x["rank"] for x in r] == [0, 1], r
assert [x["port"] for x in r] == ['"$port1, $port2"'], r
assert j["bytes"] == '"$((big + 64))"' == sum(x["bytes"] for x in r), j
assert all(x["bytes"] > 2 * 1024 * 1024 for x in r), r  # both carried part of the big file
assert sum(x["batches"] for x in r) == 4, r  # the pool: two batches per rank, each taken once
' || fail "srun's two ranks did not share the job as mpirun's do: $out"
for log in "$tmp/s1.log" "$tmp/s2.log"; do
	grep -q 'session 1 from 127.0.0.1: push of .* done' "$log" || fail "a server served no push: $(cat "$log")"
done

capture srun_mpi -r -p -u --json "$tmp/src" "$servers:in"
[ "$rc" -eq 0 ] || fail "srun railcp-mpi -u: exit $rc: $err $srun_err"
printf '%s' "$out" | python3 -c '
import json, sys
assert json.load(sys.stdin)["bytes"] == 0
' || fail "a -u re-run under srun sent something again: $out"

capture srun_mpi -r -p "$servers:in/src" "$tmp/back"
[ "$rc" -eq 0 ] || fail "srun railcp-mpi pull: exit $rc: $err $srun_err"
diff -r "$tmp/src" "$tmp/back/src" || fail "the tree srun's ranks pulled back differs"
[ "$(stat -c '%a %y' "$tmp/src/sub/big")" = "$(stat -c '%a %y' "$tmp/back/src/sub/big")" ] ||
	fail "the pulled big file lost -p's mode and time"

capture srun_mpi -r "$tmp/nonexistent" "$servers:in"
[ "$rc" -ne 0 ] || fail "srun railcp-mpi of a missing source succeeded"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "a missing source: not one line of railcp-mpi's: $err"
case "$err" in "railcp-mpi: rank 0 on "*"failed before its session: "*nonexistent*) ;;
*) fail "a missing source under srun is not said as it is: $err" ;; esac
