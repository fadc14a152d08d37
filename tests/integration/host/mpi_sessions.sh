# railcp-mpi: a rank whose share is more than one session's list (at most
# IO_MANIFEST_MAX_ENTRIES entries and as many chunks) pushes it as several
# sessions, one after another, each list with the directories its files
# need (cli/mpi_parts.c). RAILCP_TEST_SESSION_ENTRIES lowers that cap to 16
# here, so a tree of about 250 entries takes several sessions per rank: the
# tree lands whole with -p's modes and times (files' and links' times,
# directories' modes, an empty one too), each server's log shows the
# sessions, --json counts every file and byte once, a -u re-run sends
# nothing, a cut file and the pool's batches land too, and a tree of empty
# directories is shared out, each one rank's (not every rank's). Without
# the variable each rank's share is one session. Over TCP on 127.0.0.1, two ranks, two
# servers; skipped, saying so, where no MPI is installed or mpirun cannot run.
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
# directory's mode, not its time (a push's sessions, of several ranks as of
# one, touch a directory another session made and set: doc/design.md).
meta() { (cd "$1" && find . ! -type d -printf '%p %y %m %T@ %s\n' -o -printf '%p %y %m\n' | sort); }
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
echo "ok: sessions of 16 entries ($n1 and $n2 sessions), -p, -u, the pool, 180 empty directories in $took sessions, and one session without the cap"
