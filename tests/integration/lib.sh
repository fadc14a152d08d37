# tests/integration/lib.sh - helpers sourced by the integration scripts.

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# Skip unless this machine has at least one RDMA device (the testbed has).
need_rdma() {
	ls /sys/class/infiniband/* >/dev/null 2>&1 ||
		skip "no RDMA device here; run this test inside tools/testbed/boot"
}

# Run a command, capturing stdout, stderr and exit status in $out, $err, $rc.
capture() {
	_o=$(mktemp) _e=$(mktemp)
	"$@" >"$_o" 2>"$_e"
	rc=$?
	out=$(cat "$_o") err=$(cat "$_e")
	rm -f "$_o" "$_e"
}

# Fail unless stderr is exactly one line starting with "railcp: " and the
# exit status is non-zero.
expect_one_line_error() {
	[ "$rc" -ne 0 ] || fail "expected a non-zero exit status for: $*"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "expected one line on stderr, got: $err"
	case "$err" in "railcp: "*) ;; *) fail "error does not start with 'railcp: ': $err" ;; esac
}

# Start "railcp serve ARGS" in the background with stderr in $1; wait until
# it is ready. Sets $server_pid. Stop it with stop_server.
start_server() {
	_log=$1
	shift
	"$RAILCP" serve "$@" 2>"$_log" &
	server_pid=$!
	_i=0
	until grep -q "serving on " "$_log"; do
		_i=$((_i + 1))
		kill -0 "$server_pid" 2>/dev/null || fail "railcp serve exited: $(cat "$_log")"
		[ $_i -lt 200 ] || fail "railcp serve did not become ready in 20 s: $(cat "$_log")"
		sleep 0.1
	done
}

stop_server() {
	kill "$server_pid" 2>/dev/null
	wait "$server_pid"
	_rc=$?
	[ $_rc -eq 0 ] || fail "railcp serve exited with status $_rc on SIGTERM"
}

# Wait up to $1 seconds, looking every 0.1 s, until the command $2... succeeds.
wait_until() {
	_n=$(($1 * 10)) _i=0
	shift
	until "$@"; do
		_i=$((_i + 1))
		[ $_i -lt $_n ] || return 1
		sleep 0.1
	done
}

# dm_ext4 NAME MIB DIR: ext4 on the device-mapper device NAME, dm-linear
# over a brd RAM disk of MIB MiB, mounted on DIR: a disk whose table a test
# can swap or suspend. Sets $dm_sectors (the RAM disk's size in sectors).
# The caller's cleanup unmounts DIR, removes NAME and unloads brd.
dm_ext4() {
	modprobe brd rd_nr=1 rd_size=$(($2 * 1024)) 2>/dev/null
	[ -b /dev/ram0 ] || fail "no RAM disk (brd) in the guest"
	dm_sectors=$(blockdev --getsz /dev/ram0)
	# No udev in the guest: dmsetup makes the node when asked.
	dmsetup create "$1" --noudevsync --table "0 $dm_sectors linear /dev/ram0 0" &&
		dmsetup mknodes "$1" || fail "dmsetup create failed"
	mkfs.ext4 -q -F "/dev/mapper/$1" || fail "mkfs.ext4 failed"
	mount "/dev/mapper/$1" "$3" || fail "cannot mount ext4 on /dev/mapper/$1"
}

# Whether $RAILCP is an ASan build. Its RSS is ASan's (freed memory held in
# quarantine, shadow memory): a bound on RSS means nothing there, while its
# leak check at exit and the descriptor and thread counts still do.
is_asan() { grep -q __asan_init "$RAILCP" 2>/dev/null; }

# free_port: a TCP port of 127.0.0.1 that nothing listens on now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# server_tmp: the set-up of a host test of a server on 127.0.0.1: a new
# temporary directory $tmp, removed at exit once $server_pid is killed;
# HOME in it, the C locale, no RAILCP_KEY; $port free on 127.0.0.1.
server_tmp() {
	tmp=$(mktemp -d)
	trap 'kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
	export HOME="$tmp" LC_ALL=C
	unset RAILCP_KEY
	port=$(free_port)
}

# need_mpi: $MPI, the railcp-mpi beside $RAILCP, and an mpirun that can
# run; skipped, saying why, only where no MPI is installed or where
# Debian 12's Open MPI mpirun itself aborts ("stack smashing detected", on
# a host name of 58 characters or more: tools/dev/check-odd-machine gives
# 63): nothing of railcp-mpi's, and no MPI job can run there.
need_mpi() {
	MPI=$(dirname "$RAILCP")/railcp-mpi
	if ! command -v mpirun >/dev/null; then
		[ ! -x "$MPI" ] || fail "railcp-mpi is built but mpirun is missing: run tools/setup"
		skip "no MPI here (no mpirun, and railcp-mpi was not built): run tools/setup, then scons"
	fi
	[ -x "$MPI" ] || fail "mpirun is here but $MPI was not built (scons says why: is libopenmpi-dev installed?)"
	if ! _out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe -q -n 1 true 2>&1); then
		skip "mpirun itself cannot run on this host (its name has $(hostname | tr -d '\n' | wc -c) characters): $(printf '%s' "$_out" | head -n 1)"
	fi
}

# mpi_setup: need_mpi, then a new temporary directory $tmp (removed at
# exit once $pid1 and $pid2 are killed and the commands in $mpi_at_exit,
# which a test may set, have run), HOME in it, the C locale, no
# RAILCP_KEY; $port1 and $port2 free for two servers (mpi_ports), $dead a
# port nothing listens on. mpi ARGS runs railcp-mpi ARGS under mpirun -n 2
# over TCP on lo (its stderr without Open MPI's libevent noise, below);
# mpi_serve PORT LOG starts a server of $tmp/root there, its pid in $_p;
# mpi_serve_two starts the two.
mpi_setup() {
	need_mpi
	tmp=$(mktemp -d)
	mpi_at_exit=
	trap 'kill $pid1 $pid2 2>/dev/null; eval "$mpi_at_exit"; rm -rf "$tmp"' EXIT
	export HOME="$tmp" LC_ALL=C
	unset RAILCP_KEY
	mpi_ports
	dead=$(free_port)
}
# mpi_ports: $port1 and $port2, two free ports (not the same one).
mpi_ports() {
	port1=$(free_port) port2=$(free_port)
	[ "$port1" != "$port2" ] || port2=$((port1 + 1))
}
# Its stderr leaves out Open MPI's own libevent warning at an abort ("[warn]
# Epoll MOD(1) on fd 25 failed. ... Bad file descriptor", now and then
# under load: open-mpi/ompi#2004), which is mpirun's, not railcp-mpi's.
mpi() {
	_mpierr=$(mktemp)
	timeout 120 mpirun --allow-run-as-root --oversubscribe -q -n 2 "$MPI" --transport tcp --rails lo "$@" 2>"$_mpierr"
	_mpirc=$?
	grep -v '^\[warn\] Epoll [A-Z]*([0-9]*) on fd [0-9]* failed\.' "$_mpierr" >&2
	rm -f "$_mpierr"
	return $_mpirc
}
mpi_serve() {
	: >"$2" # there before the wait reads it, not a grep error while the server starts
	"$RAILCP" serve --transport tcp --rails lo --port "$1" --root "$tmp/root" 2>"$2" &
	_p=$!
	wait_for_line "serving on " 20 "$2" || fail "railcp serve on port $1 did not start: $(cat "$2")"
}
# mpi_serve_two: mpi_serve on $port1 and on $port2, logs $tmp/s1.log and
# $tmp/s2.log, pids in $pid1 and $pid2, and $servers naming both for
# railcp-mpi's HOSTS. A test that starts a new pair (the last one killed)
# calls mpi_ports first.
mpi_serve_two() {
	mpi_serve "$port1" "$tmp/s1.log"
	pid1=$_p
	mpi_serve "$port2" "$tmp/s2.log"
	pid2=$_p
	servers="127.0.0.1:$port1,127.0.0.1:$port2"
}

# loop_setup: the set-up of a host test on a file system of its own on a
# loop device: skipped, saying why, when not root or without loop devices or
# losetup; a new temporary directory $tmp, entered, HOME in it, the C
# locale, no RAILCP_KEY, $port free on 127.0.0.1. At exit (a second signal
# too), fs_down undoes in reverse what the test set up and named in
# $server_pid (it holds its root open), $mnt and $dev; then $tmp and any
# paths in $loop_also are removed.
loop_setup() {
	[ "$(id -u)" -eq 0 ] || skip "not root: loop devices and mounts need root"
	[ -e /dev/loop-control ] || modprobe loop 2>/dev/null
	[ -e /dev/loop-control ] || skip "no loop device support (/dev/loop-control) in this kernel"
	command -v losetup >/dev/null || skip "no losetup (util-linux)"
	tmp=$(mktemp -d)
	export HOME="$tmp" LC_ALL=C
	unset RAILCP_KEY
	port=$(free_port)
	server_pid="" mnt="" dev="" loop_also=""
	trap 'trap "" TERM INT HUP PIPE; fs_down; rm -rf "$tmp" $loop_also' EXIT
	trap 'exit 143' TERM INT HUP PIPE
	cd "$tmp" || fail "no $tmp"
}
fs_down() {
	[ -z "$server_pid" ] || { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
	server_pid=""
	[ -z "$mnt" ] || umount "$mnt" || umount -l "$mnt"
	mnt=""
	[ -z "$dev" ] || losetup -d "$dev"
	dev=""
}

# mistakes_dir: a new temporary directory $tmp, removed at exit and
# entered, holding what the tests of a new user's mistakes name: a
# directory dir, a file a.txt and short.key (a key file too short, mode 600).
mistakes_dir() {
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cd "$tmp" || fail "cannot enter $tmp"
	mkdir dir
	echo data >a.txt
	printf 'too short\n' >short.key
	chmod 600 short.key
}

# Whether a railcp temporary file is beneath $1, or none is.
has_temp() { [ -n "$(find "$1" -name '.railcp-tmp-*')" ]; }
no_temp() { ! has_temp "$1"; }

# Wait up to $2 seconds for the pattern $1 to appear in file $3.
wait_for_line() { wait_until "$2" grep -q "$1" "$3"; }

# Wait up to $2 seconds for a temporary file beneath $1: data has started to land.
wait_for_temp() { wait_until "$2" has_temp "$1"; }

# Wait up to $2 seconds for no temporary file to be left beneath $1.
wait_for_no_temp() { wait_until "$2" no_temp "$1"; }

# Check a bench --json document on stdin: bytes, verification, its time
# series (2 or more samples, from zeros to each rail's bytes), and (unless
# $3 is "any", for runs smaller than the credit window, where the first
# worker to start may take every chunk) bytes on every rail and NUMA node.
check_bench_json() {
	/usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
want, qps, spread = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] != "any"
assert doc["bytes"] == want, "moved %d bytes, asked for %d" % (doc["bytes"], want)
assert doc["verified"] is True
assert doc["seconds"] > 0 and doc["gbps"] > 0
assert doc["stripes"] == qps * len(doc["rails"]), doc
rails = {r["name"]: r for r in doc["rails"]}
assert set(rails) == {"rxe0:1", "rxe1:1"}, rails
assert sum(r["bytes"] for r in rails.values()) == want
nodes = {n["node"]: n["bytes"] for n in doc["nodes"]}
assert set(nodes) == {0, 1}, nodes
if spread:
    for r in rails.values():
        assert r["bytes"] > 0, "rail %s carried nothing" % r["name"]
    assert all(b > 0 for b in nodes.values()), nodes
# The time series (tools/plot): from zeros at 0 to the summary, an interval apart.
s = doc["series"]
t, rows = s["t_ms"], s["bytes"]
assert s["rails"] == [r["name"] for r in doc["rails"]], s["rails"]
assert len(t) == len(rows) >= 2 and t[0] == 0 and rows[0] == [0] * len(s["rails"]), s
assert len(t) == 2 or all(b - a >= s["interval_ms"] - 1 for a, b in zip(t, t[1:])), t
for k in range(len(s["rails"])):
    assert all(a[k] <= b[k] for a, b in zip(rows, rows[1:])), "rail %d fell back" % k
    assert rows[-1][k] == doc["rails"][k]["bytes"], (rows[-1], doc["rails"])
assert sum(rows[-1]) == want, "the series ends at %d bytes, not %d" % (sum(rows[-1]), want)
print("bench: %d MiB verified, %.1f MiB/s, rails %s; series of %d samples over %.1f s" % (
      want >> 20, doc["mib_per_s"],
      ", ".join("%s %d MiB" % (n, r["bytes"] >> 20) for n, r in sorted(rails.items())),
      len(t), t[-1] / 1000))
' "$1" "$2" "${3:-spread}"
}

# Wait up to $2 seconds for file $1 to exist.
wait_for_file() { wait_until "$2" test -e "$1"; }

# Fail if a railcp temporary file (.railcp-tmp-*) is left beneath any of the
# directories given.
expect_no_temps() {
	_t=$(find "$@" -name '.railcp-tmp-*' 2>&1)
	[ -z "$_t" ] || fail "temporary files left behind (or find failed): $_t"
}

# Print the sha256 of every regular file beneath directory $1, named
# relative to it, sorted by name: two trees with the same files give the
# same list.
tree_sums() {
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}

# Two hosts: the twohosts/*.sh scripts run on this machine under
# 'tools/testbed/boot --hosts 2' and drive its guests a and b with tb (tools/testbed/tb).
# Their files live under $TESTBED_OUT, the one directory this machine and
# both guests see at the same path (writable).

# Skip unless a two-host testbed is up. A server that listens beyond
# loopback needs a key: make one and pass it to both guests (tb passes on
# the variables TB_ENV names). Jobs started by spawn_on are killed when the
# script exits, however it exits.
need_two_hosts() {
	[ "${TESTBED_HOSTS:-}" = 2 ] && [ -n "${TESTBED_OUT:-}" ] && command -v tb >/dev/null 2>&1 ||
		skip "no two-host testbed here; run: tools/testbed/boot --hosts 2 -- tests/integration/run 'twohosts/*.sh'"
	RAILCP_KEY=$(head -c 32 /dev/urandom | base64)
	TB_ENV="RAILCP_KEY ${TB_ENV:-}"
	export RAILCP_KEY TB_ENV
	_x_jobs=""
	trap kill_jobs EXIT
	trap 'exit 143' TERM # the runner's timeout: the EXIT trap still runs
}

kill_jobs() {
	for _j in $_x_jobs; do
		tb kill "${_j%%:*}" "${_j#*:}" KILL >/dev/null 2>&1
		tb wait "${_j%%:*}" "${_j#*:}" 10 >/dev/null 2>&1
	done
	_x_jobs=""
}

# A new directory under $TESTBED_OUT (this machine and both guests see
# it), named after $1.
shared_dir() {
	mktemp -d "$TESTBED_OUT/$1.XXXXXX" || fail "cannot make a directory in $TESTBED_OUT"
}

# The path of job $2's file $3 (out, err or rc) on host $1.
job_file() {
	echo "$TESTBED_OUT/tb/$1.$2.$3"
}

# Start "CMD..." as job $2 in host $1 (tb spawn), to be killed on exit.
spawn_on() {
	tb spawn "$@" || fail "tb spawn $1 $2 failed"
	_x_jobs="$_x_jobs $1:$2"
}

# start_sshd_on HOST RUN [LINE...]: sshd on HOST (a or b), listening on
# the management link alone, for root on the other host: a client key made
# there, a host key, HOST's authorized_keys and sshd_config (LINE... added
# to it) all in RUN, made anew in each guest's tmpfs (keys must not be
# readable by others); sshd runs as HOST's job "sshd". It waits (30 s)
# until HOST takes the key, and sets $ssh to the command line (without the
# host's name) that the other host reaches HOST with.
start_sshd_on() {
	case $1 in
	a) _sc=b _sa=198.19.0.1 ;;
	b) _sc=a _sa=198.19.0.2 ;;
	*) fail "start_sshd_on: no host '$1'" ;;
	esac
	_sh=$1 _srun=$2
	shift 2
	_sk=$(shared_dir sshd-key) # the client's public key on its way to HOST
	tb on "$_sc" sh -c "rm -rf $_srun && mkdir -m 700 $_srun && ssh-keygen -q -t ed25519 -N '' -f $_srun/id && cp $_srun/id.pub '$_sk/id.pub'" ||
		fail "cannot make a client key on $_sc"
	tb on "$_sh" sh -c "rm -rf $_srun && mkdir -m 700 $_srun && mkdir -p /run/sshd && ssh-keygen -q -t ed25519 -N '' -f $_srun/host && cp '$_sk/id.pub' $_srun/authorized_keys && cat >$_srun/sshd_config <<CFG
ListenAddress $_sa
HostKey $_srun/host
AuthorizedKeysFile $_srun/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PidFile $_srun/sshd.pid
$(printf '%s\n' "$@")
CFG" || fail "cannot configure sshd on $_sh"
	rm -rf "$_sk"
	spawn_on "$_sh" sshd /usr/sbin/sshd -D -e -f "$_srun/sshd_config"
	ssh="ssh -i $_srun/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR"
	wait_until 30 tb on "$_sc" $ssh "$_sh" true 2>/dev/null ||
		fail "sshd on $_sh does not take $_sc's key: $(cat "$(job_file "$_sh" sshd err)")"
}

# Start "railcp serve ARGS" as job $2 in host $1 and wait until it is ready.
start_server_on() {
	_h=$1 _n=$2
	shift 2
	spawn_on "$_h" "$_n" "$RAILCP" serve "$@"
	_i=0
	until grep -q "serving on " "$(job_file "$_h" "$_n" err)"; do
		_i=$((_i + 1))
		[ ! -e "$(job_file "$_h" "$_n" rc)" ] ||
			fail "railcp serve on $_h exited: $(cat "$(job_file "$_h" "$_n" err)")"
		[ $_i -lt 600 ] || fail "railcp serve on $_h did not become ready in 60 s: $(cat "$(job_file "$_h" "$_n" err)")"
		sleep 0.1
	done
}

# Copies server job $2 on host $1 has started (its log lines "push of",
# "pull of"); the log is on the share this machine sees, so no busy guest
# delays the look.
sessions_of() {
	grep -c ': \(push\|pull\) of ' "$(job_file "$1" "$2" err)"
}

# Wait (at most 60 s) until server job $2 on host $1 has started more than
# $3 copies.
wait_session_after() {
	_i=0
	while [ "$(sessions_of "$1" "$2")" -le "$3" ]; do
		_i=$((_i + 1))
		[ $_i -lt 3000 ] || fail "the server on $1 logged no new session in 60 s"
		sleep 0.02
	done
}

# SIGTERM to the server job $2 in host $1; it must exit 0.
stop_server_on() {
	tb kill "$1" "$2" TERM || fail "cannot signal the server on $1"
	tb wait "$1" "$2" 30
	_rc=$?
	[ $_rc -eq 0 ] || fail "railcp serve on $1 exited with status $_rc on SIGTERM: $(cat "$(job_file "$1" "$2" err)")"
}
