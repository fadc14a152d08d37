# railcp-mpi: a rank whose share is more than one session's list (at most
# IO_MANIFEST_MAX_ENTRIES entries and as many chunks) pushes it as several
# sessions, one after another, each list with the directories its files
# need (cli/mpi_parts.c). RAILCP_TEST_SESSION_ENTRIES lowers that cap to 16
# here, so a tree of about 250 entries takes several sessions per rank: the
# tree lands whole with -p's modes and times (files' and links' times,
# directories' modes and times, an empty one too: the job's last session
# sets them, once), each server's log shows the sessions, --json counts
# every file and byte once, a -u re-run sends nothing, a cut file and the
# pool's batches land too, and a tree of empty directories is shared out,
# each one rank's (not every rank's); no marker of the job's is left. A
# read-only (0555) directory whose files span several sessions lands 0555
# with its time on a server that is not root. Without the variable each
# rank's share is one session. Over TCP on 127.0.0.1, two ranks, two
# servers (a third as nobody when we are root); skipped, saying so, where
# no MPI is installed or mpirun cannot run. A job that fails leaves no
# marker of the job's (with -c, the copy's own stay), also when --delete's
# pass failed (as nobody, when we are root), and its removal makes no
# missing destination.
. tests/integration/lib.sh
mpi_setup

mkdir -p "$tmp/root/in" "$tmp/src/empty/deeper"
for d in 1 2 3 4 5 6; do
	mkdir -p "$tmp/src/d$d/sub"
	for i in $(seq 1 30); do echo "file $d $i" >"$tmp/src/d$d/f$i"; done
	for i in 1 2 3; do echo "sub $d $i" >"$tmp/src/d$d/sub/g$i"; done
	chmod 750 "$tmp/src/d$d/sub"
done
: >"$tmp/src/d3/sub/zero"
ln -s ../d1/f1 "$tmp/src/d4/link"
chmod 700 "$tmp/src/empty/deeper"
find "$tmp/src" -exec touch -h -d '2020-02-03 04:05:06.123456789' {} +
files=$(find "$tmp/src" -type f | wc -l)
total=$(find "$tmp/src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

mpi_serve "$port1" "$tmp/s1.log"
pid1=$_p
mpi_serve "$port2" "$tmp/s2.log"
pid2=$_p

# What -p keeps, of every file, link and directory beneath a tree: a
# directory's mode and time too (the job's last session sets them, after
# every session's files: doc/design.md).
meta() { (cd "$1" && find . ! -type d -printf '%p %y %m %T@ %s\n' -o -printf '%p %y %m %T@\n' | sort); }
# No marker of a job's directories left beneath $1.
no_markers() {
	_left=$(find "$1" -name '.railcp-tmp-dir*')
	[ -z "$_left" ] || fail "markers left: $_left"
}
# Whether tree $2 has -p's copy of tree $1's; else what differs.
same_meta() {
	meta "$1" >"$tmp/meta.a"
	meta "$2" >"$tmp/meta.b"
	diff "$tmp/meta.a" "$tmp/meta.b"
}
sessions() { grep -c 'from 127.0.0.1: push of .* done' "$1"; }

servers="127.0.0.1:$port1,127.0.0.1:$port2"
export RAILCP_TEST_SESSION_ENTRIES=16
capture mpi -r -p --no-steal --json "$tmp/src" "$servers:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi, sessions of 16 entries: exit $rc: $err"
diff -r "$tmp/src" "$tmp/root/in/src" || fail "the tree pushed in sessions of 16 entries differs"
same_meta "$tmp/src" "$tmp/root/in/src" >"$tmp/d" || fail "-p's modes and times differ: $(cat "$tmp/d")"
no_markers "$tmp/root/in"
for log in "$tmp/s1.log" "$tmp/s2.log"; do
	n=$(sessions "$log")
	[ "$n" -ge 5 ] || fail "a rank's share of about 120 entries took $n sessions of 16: $(cat "$log")"
done
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["files"] == '"$files"' and sum(x["files"] for x in j["ranks"]) == '"$files"', j
assert j["bytes"] == '"$total"' == sum(x["share_bytes"] for x in j["ranks"]), j
assert all(x["static_bytes"] == x["share_bytes"] for x in j["ranks"]), j["ranks"]
' || fail "--json of a push in sessions of 16 entries is wrong: $out"
n1=$(sessions "$tmp/s1.log") n2=$(sessions "$tmp/s2.log")

# -u: nothing sent again.
capture mpi -r -p -u --json "$tmp/src" "$servers:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi -u in sessions of 16 entries: exit $rc: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["bytes"] == 0 and j["files"] == 0, j
' || fail "-u in sessions of 16 entries sent something again: $out"

# The pool and a file it cuts, in sessions too.
head -c $((300 * 1024)) /dev/urandom >"$tmp/src/d2/big"
touch -d '2020-02-03 04:05:06.123456789' "$tmp/src/d2/big" "$tmp/src/d2"
capture mpi -r -p --chunk 64K "$tmp/src" "$servers:pool"
[ "$rc" -eq 0 ] || fail "railcp-mpi with the pool, sessions of 16 entries: exit $rc: $err"
same_meta "$tmp/src" "$tmp/root/pool/src" >"$tmp/d" ||
	fail "with the pool, -p's modes and times differ: $(cat "$tmp/d")"
cmp "$tmp/src/d2/big" "$tmp/root/pool/src/d2/big" || fail "the cut file differs"
ls -a "$tmp/root/pool/src/d2" | grep -q '^\.railcp-tmp' && fail "a temporary is left"
no_markers "$tmp/root/pool"

# A read-only directory whose files span sessions of both ranks, to a server
# that is not root (as root, nobody's, in a root of its own under /dev/shm:
# $TMPDIR's parent may be private): no session may leave it read-only
# while another still writes into it. Keyed, as the ranks are root.
as_user="" nb=$tmp/nb
if [ "$(id -u)" -eq 0 ]; then
	as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
	nb=$(mktemp -d /dev/shm/railcp-mpi-ro-XXXXXX) || fail "no directory under /dev/shm"
	trap 'kill $pid1 $pid2 $pid3 2>/dev/null; rm -rf "$tmp" "$nb"' EXIT
fi
mkdir -p "$nb/root" "$tmp/ro/locked/inner"
for i in $(seq 1 40); do echo "ro $i" >"$tmp/ro/locked/f$i"; done
echo inner >"$tmp/ro/locked/inner/g"
chmod 555 "$tmp/ro/locked/inner" "$tmp/ro/locked"
touch -d '2021-03-04 05:06:07' "$tmp/ro/locked/inner" "$tmp/ro/locked" "$tmp/ro"
chmod a+rwx "$nb" "$nb/root"
RAILCP_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RAILCP_KEY
port3=$(free_port)
: >"$tmp/s3.log"
HOME="$nb" $as_user "$RAILCP" serve --transport tcp --rails lo --port "$port3" --root "$nb/root" \
	2>"$tmp/s3.log" &
pid3=$!
wait_for_line "serving on " 20 "$tmp/s3.log" || fail "the server as nobody did not start: $(cat "$tmp/s3.log")"
export RAILCP_TEST_SESSION_ENTRIES=16
capture mpi -r -p --no-steal "$tmp/ro" "127.0.0.1:$port3:ro"
[ "$rc" -eq 0 ] || fail "a read-only directory over several sessions to a server that is not root: exit $rc: $err"
same_meta "$tmp/ro" "$nb/root/ro/ro" >"$tmp/d" ||
	fail "the read-only directory's mode or time differs: $(cat "$tmp/d")"
[ "$(stat -c %a "$nb/root/ro/ro/locked")" = 555 ] || fail "the read-only directory did not land 555"
no_markers "$nb/root"
ro_sessions=$(grep -c 'push of .* done' "$tmp/s3.log")
[ "$ro_sessions" -ge 3 ] || fail "the read-only directory's files took $ro_sessions sessions, not several"
kill "$pid3"
unset RAILCP_KEY

# A job that fails removes its directories' markers: one rank (no other
# still making directories after the removal), its last session's file
# blocked by a directory in the way; what its first sessions made stays.
mkdir -p "$tmp/fl/a" "$tmp/fl/zz" "$tmp/root/failed/fl/zz/last/in-the-way"
for i in $(seq 1 30); do echo "f $i" >"$tmp/fl/a/f$i"; done
echo last >"$tmp/fl/zz/last"
capture timeout 120 mpirun --allow-run-as-root --oversubscribe -q -n 1 "$MPI" --transport tcp \
	--rails lo -r -p --no-steal "$tmp/fl" "127.0.0.1:$port1:failed"
[ "$rc" -ne 0 ] || fail "a push whose last file is blocked by a directory succeeded"
[ -f "$tmp/root/failed/fl/a/f30" ] || fail "the failed job's first sessions landed nothing (exit $rc): $err"
no_markers "$tmp/root/failed"

# So with -c, whose sessions mark each directory they make as --partial's
# do: the job's markers go, the copy's own stay for a re-run (-c's removal
# took them, as a plain push's does).
mkdir -p "$tmp/root/failedc/fl/zz/last/in-the-way"
capture timeout 120 mpirun --allow-run-as-root --oversubscribe -q -n 1 "$MPI" --transport tcp \
	--rails lo -r -p -c --no-steal "$tmp/fl" "127.0.0.1:$port1:failedc"
[ "$rc" -ne 0 ] || fail "a -c push whose last file is blocked by a directory succeeded"
[ -f "$tmp/root/failedc/fl/a/f30" ] || fail "the failed -c job's first sessions landed nothing (exit $rc): $err"
[ -z "$(find "$tmp/root/failedc" -name '.railcp-tmp-dir-j*')" ] || fail "the failed -c job left its markers"
[ -f "$tmp/root/failedc/fl/a/.railcp-tmp-dir" ] || fail "the failed -c job's removal took the copy's own marker of fl/a"

# A failed job's removal never makes DST: one rank refused by a keyed
# server (its first) has the removal go on to the other, which is to make
# nothing (it made an empty newdst/, the session settling nothing there).
mkdir -p "$tmp/kroot" "$tmp/nd/a/b"
echo x >"$tmp/nd/a/b/f"
portk=$(free_port)
: >"$tmp/sk.log"
RAILCP_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') "$RAILCP" serve --transport tcp \
	--rails lo --port "$portk" --root "$tmp/kroot" 2>"$tmp/sk.log" &
pidk=$!
wait_for_line "serving on " 20 "$tmp/sk.log" || fail "the keyed server did not start: $(cat "$tmp/sk.log")"
capture timeout 120 mpirun --allow-run-as-root --oversubscribe -q -n 1 "$MPI" --transport tcp \
	--rails lo -r -p --no-failover "$tmp/nd" "127.0.0.1:$portk,127.0.0.1:$port1:newdst"
kill "$pidk"
[ "$rc" -ne 0 ] || fail "a push refused by its keyed server succeeded"
[ ! -e "$tmp/root/newdst" ] || fail "the failed job's removal made the destination newdst"
grep -q "markers removed" "$tmp/s1.log" || fail "the failed job's removal did not reach the other server: $(cat "$tmp/s1.log")"

# A job whose --delete pass fails (a file of root's beneath nobody's server)
# removes its markers as the job's (it went out as a plain push, without the
# job's id: the listed directories made again, every marker left).
if [ -n "$as_user" ]; then
	mkdir -p "$nb/root/del/dl/extra" "$tmp/dl/a/b" "$tmp/dl/c"
	echo x >"$tmp/dl/a/b/f"
	echo y >"$tmp/dl/c/g"
	echo keep >"$nb/root/del/dl/extra/rootfile"
	chmod 777 "$nb/root/del" "$nb/root/del/dl"
	RAILCP_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	export RAILCP_KEY
	: >"$tmp/s3.log"
	port3=$(free_port)
	HOME="$nb" $as_user "$RAILCP" serve --transport tcp --rails lo --port "$port3" \
		--root "$nb/root" 2>"$tmp/s3.log" &
	pid3=$!
	wait_for_line "serving on " 20 "$tmp/s3.log" || fail "the server as nobody did not start again: $(cat "$tmp/s3.log")"
	capture timeout 120 mpirun --allow-run-as-root --oversubscribe -q -n 1 "$MPI" --transport tcp \
		--rails lo -r -p --delete "$tmp/dl" "127.0.0.1:$port3:del"
	kill "$pid3"
	unset RAILCP_KEY
	[ "$rc" -ne 0 ] || fail "a --delete that cannot remove a file of root's succeeded"
	case $err in *rootfile*) ;; *) fail "the job failed otherwise than on --delete's pass: $err" ;; esac
	case $err in *ranges_done*) fail "the failed job's removal went out without the job's id: $err" ;; esac
	grep -q "markers removed" "$tmp/s3.log" || fail "the failed job's markers were not removed: $(cat "$tmp/s3.log")"
	no_markers "$nb/root/del"
fi

# A tree of 180 empty directories and 2 files: each empty directory is one
# rank's, not in every share (about 13 sessions of 16 for the two ranks; 24
# or more when each share carried all 180), and every one lands with its mode.
mkdir -p "$tmp/many"
for i in $(seq 100 279); do mkdir "$tmp/many/e$i"; done
for i in $(seq 100 159); do mv "$tmp/many/e$((i + 120))" "$tmp/many/e$i/sub"; done
chmod 700 "$tmp/many/e150/sub"
echo one >"$tmp/many/f1"
echo two >"$tmp/many/f2"
b1=$(sessions "$tmp/s1.log") b2=$(sessions "$tmp/s2.log")
capture mpi -r -p --no-steal "$tmp/many" "$servers:many"
[ "$rc" -eq 0 ] || fail "railcp-mpi, 180 empty directories in sessions of 16: exit $rc: $err"
same_meta "$tmp/many" "$tmp/root/many/many" >"$tmp/d" ||
	fail "180 empty directories: the tree differs: $(cat "$tmp/d")"
took=$(($(sessions "$tmp/s1.log") - b1 + $(sessions "$tmp/s2.log") - b2))
[ "$took" -le 18 ] || fail "180 empty directories took $took sessions of 16: the shares carry each one more than once"

# Without the variable: one session per rank.
unset RAILCP_TEST_SESSION_ENTRIES
m1=$(sessions "$tmp/s1.log") m2=$(sessions "$tmp/s2.log")
capture mpi -r -p --no-steal "$tmp/src" "$servers:one"
[ "$rc" -eq 0 ] || fail "railcp-mpi, one session each: exit $rc: $err"
same_meta "$tmp/src" "$tmp/root/one/src" >"$tmp/d" || fail "one session each: the tree differs: $(cat "$tmp/d")"
[ "$(sessions "$tmp/s1.log")" -eq $((m1 + 1)) ] && [ "$(sessions "$tmp/s2.log")" -eq $((m2 + 1)) ] ||
	fail "without RAILCP_TEST_SESSION_ENTRIES a rank took more than one session: $(cat "$tmp/s1.log" "$tmp/s2.log")"
echo "ok: sessions of 16 entries ($n1 and $n2 sessions), -p with directories' times, -u, the pool, 180 empty directories in $took sessions, a 0555 directory over $ro_sessions sessions${as_user:+ to nobody's server}, and one session without the cap"
