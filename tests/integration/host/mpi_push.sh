# railcp-mpi over Open MPI on this host, over TCP on 127.0.0.1 (the rail
# lo): two ranks push a tree of a few hundred small files and a few larger
# ones to two railcp serve processes on two ports serving one root. The tree
# lands whole; the summary and --json give each rank's bytes and their
# balance, and the job's series (every rank's rails), which tools/plot
# draws; each server served one session. A tree of empty directories lands
# too, and one file over two ranks (rank 1's empty share runs no session).
# --progress draws one line of the
# whole job, and --delete deletes once, after every rank's copy. A server
# that is not running, a missing source and a destination without HOSTS end
# the job with one line and a non-zero status, and nothing half-written
# under a final name.
# Skipped, saying so, only where no MPI is installed (tools/setup installs it)
# or where mpirun itself cannot run (need_mpi in lib.sh).
. tests/integration/lib.sh
mpi_setup # $dead: nothing listens there

mkdir -p "$tmp/root/in" "$tmp/src"
for d in 1 2 3 4 5 6; do
	mkdir -p "$tmp/src/d$d/sub"
	for i in $(seq 1 50); do echo "file $d $i" >"$tmp/src/d$d/f$i"; done
done
: >"$tmp/src/d1/sub/empty"
head -c $((3 * 1024 * 1024)) /dev/urandom >"$tmp/src/big3"
head -c $((2 * 1024 * 1024 + 7)) /dev/urandom >"$tmp/src/d2/sub/big2"
head -c $((1536 * 1024)) /dev/urandom >"$tmp/src/d3/big15"
head -c $((1024 * 1024 - 1)) /dev/urandom >"$tmp/src/d4/sub/big1"

mpi_serve "$port1" "$tmp/s1.log"
pid1=$_p
mpi_serve "$port2" "$tmp/s2.log"
pid2=$_p

capture mpi -r "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi push: exit $rc: $err"
diff -r "$tmp/src" "$tmp/root/in/src" || fail "the tree railcp-mpi pushed differs"
case "$out" in
"railcp-mpi: pushed 305 files, "*" with 2 ranks to 2 servers in "*"balance 1."*) ;;
*) fail "the summary does not say 305 files, 2 ranks, 2 servers and the balance: $out" ;;
esac
[ "$(printf '%s\n' "$out" | grep -c '^  rank [01] on ')" -eq 2 ] || fail "not one line per rank: $out"
for log in "$tmp/s1.log" "$tmp/s2.log"; do
	grep -q 'session 1 from 127.0.0.1: push of .* done' "$log" || fail "a server served no session: $(cat "$log")"
done

# --json: each rank's share (its own and the batches it took from the
# pool), their sum the tree's bytes, the balance their ratio; each rank's
# own within a fifth of the other's (the pool's share depends on the
# ranks' speed).
total=$(find "$tmp/src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
rm -rf "$tmp/root/in/src"
capture mpi -r --json "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi --json: exit $rc: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["ranks"]
assert [x["rank"] for x in r] == [0, 1], r
assert [x["port"] for x in r] == ['"$port1, $port2"'], r
share = [x["share_bytes"] for x in r]
assert sum(share) == '"$total"' == j["bytes"], (share, j["bytes"])
assert abs(j["balance"] - max(share) / min(share)) < 1e-9, (j["balance"], share)
own = [x["static_bytes"] for x in r]
assert max(own) / min(own) < 1.2, own
assert all(x["share_bytes"] >= x["static_bytes"] for x in r), r
assert j["files"] == 305 and sum(x["files"] for x in r) == 305, j
s = j["series"]
assert sorted(s) == ["bytes", "interval_ms", "rails", "t_ms"], sorted(s)
assert s["rails"] == ["rank 0 lo:1", "rank 1 lo:1"], s["rails"]
assert len(s["t_ms"]) == len(s["bytes"]) >= 2 and s["t_ms"][0] == 0, s
assert s["t_ms"] == sorted(s["t_ms"]), s["t_ms"]
for a, b in zip(s["bytes"], s["bytes"][1:]):
    assert all(x <= y for x, y in zip(a, b)), (a, b)
assert sum(s["bytes"][-1]) == j["bytes"], (s["bytes"][-1], j["bytes"])
assert all(x > 0 for x in s["bytes"][-1]), s["bytes"][-1]
' || fail "railcp-mpi --json: the ranks' figures or the job's series are wrong: $out"
# tools/plot draws the job (tools/setup installs gnuplot).
printf '%s' "$out" >"$tmp/job.json"
capture tools/plot -o "$tmp/job.svg" "$tmp/job.json"
[ "$rc" -eq 0 ] && grep -q "rank 1 lo:1" "$tmp/job.svg" || fail "tools/plot did not draw the job's series: $out $err"
diff -r "$tmp/src" "$tmp/root/in/src" || fail "the tree railcp-mpi --json pushed differs"

# Files alone into a new destination: it is a directory, made by the
# sessions, and every rank's file lands in it (a share of one file must not
# be renamed to DST by each rank's session, the last one winning).
capture mpi "$tmp/src/big3" "$tmp/src/d2/sub/big2" "127.0.0.1:$port1,127.0.0.1:$port2:files"
[ "$rc" -eq 0 ] || fail "railcp-mpi push of two files into a new destination: exit $rc: $err"
cmp "$tmp/src/big3" "$tmp/root/files/big3" && cmp "$tmp/src/d2/sub/big2" "$tmp/root/files/big2" ||
	fail "two files pushed into a new destination did not both land in it: $(ls -la "$tmp/root/files" 2>&1)"
# The same with an option after DST: DST is still the one a directory is made of.
capture mpi "$tmp/src/big3" "$tmp/src/d2/sub/big2" "127.0.0.1:$port1,127.0.0.1:$port2:files2" -p
[ "$rc" -eq 0 ] || fail "railcp-mpi push with an option after DST: exit $rc: $err"
cmp "$tmp/src/big3" "$tmp/root/files2/big3" && cmp "$tmp/src/d2/sub/big2" "$tmp/root/files2/big2" ||
	fail "with an option after DST, two files did not both land in it: $(ls -la "$tmp/root/files2" 2>&1)"

# One file whole (-u: no pool) over two ranks: rank 1's share is empty and
# runs no session (it ran one of an empty list), yet takes part in the
# job: the summary and --json name it with nothing sent.
done2=$(grep -c 'push of .* done' "$tmp/s2.log")
capture mpi -u --json "$tmp/src/big3" "127.0.0.1:$port1,127.0.0.1:$port2:one"
[ "$rc" -eq 0 ] || fail "railcp-mpi -u of one file over two ranks: exit $rc: $err"
cmp "$tmp/src/big3" "$tmp/root/one/big3" || fail "one file over two ranks did not land"
[ "$(grep -c 'push of .* done' "$tmp/s2.log")" -eq "$done2" ] ||
	fail "rank 1's empty share ran a session: $(tail -3 "$tmp/s2.log")"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["ranks"]
assert [x["rank"] for x in r] == [0, 1], r
assert r[1]["files"] == 0 and r[1]["share_bytes"] == 0, r
assert j["files"] == 1 and r[0]["files"] == 1, j
' || fail "railcp-mpi -u --json of one file over two ranks: the ranks are wrong: $out"

# A tree of empty directories: no file to split, the job completes and the
# directories land (a sanitizer build's railcp-mpi exited 1 on it: the
# pool's empty list went to qsort as NULL).
mkdir -p "$tmp/dirs/a/b" "$tmp/dirs/c"
capture mpi -r "$tmp/dirs" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi push of a tree of empty directories: exit $rc: $err"
diff -r "$tmp/dirs" "$tmp/root/in/dirs" || fail "the tree of empty directories railcp-mpi pushed differs"

# Rank 1's server is not running: rank 1 moves to server 1, saying so in
# one line, and the job completes (host/mpi_failover kills one mid-copy).
capture mpi -r "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$dead:moved"
[ "$rc" -eq 0 ] || fail "railcp-mpi with a server not running did not move to the other: exit $rc: $err"
case "$err" in "railcp-mpi: rank 1 on $(hostname): server 127.0.0.1 port $dead is gone ("*"); its copy goes on with 127.0.0.1 port $port1") ;;
*) fail "not one line saying rank 1 moved from port $dead to $port1: $err" ;; esac
diff -r "$tmp/src" "$tmp/root/moved/src" || fail "the tree railcp-mpi pushed with a server not running differs"
# With --no-failover: one line naming rank 1, its host and the cause;
# nothing final-named is half-written, and no temporary is left.
capture mpi -r --no-failover "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$dead:out"
[ "$rc" -ne 0 ] || fail "railcp-mpi --no-failover to a server that is not running succeeded"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "not one line on stderr: $err"
case "$err" in "railcp-mpi: rank 1 on $(hostname) failed pushing to 127.0.0.1 port $dead: "*) ;;
*) fail "the failure does not name rank 1, its host and server: $err" ;; esac
wait_for_no_temp "$tmp/root" 20 || fail "temporaries left: $(find "$tmp/root" -name '.railcp-tmp-*')"
if [ -d "$tmp/root/out" ]; then
	(cd "$tmp/root/out" && find . -type f) | while read -r f; do
		cmp -s "$tmp/root/out/$f" "$tmp/src/${f#./src/}" || fail "a half-written file under its final name: $f"
	done || exit 1
fi

capture mpi -r "$tmp/nonexistent" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 1 ] || fail "a missing source: exit $rc, not 1"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "a missing source: not one line: $err"
case "$err" in "railcp-mpi: rank 0 on "*"failed before its session: "*nonexistent*) ;;
*) fail "a missing source is not said as it is: $err" ;; esac

# --progress: rank 0 draws the job's line, every rank's bytes summed and a
# rate per host, ending on the whole tree's bytes; without it, no line.
rm -rf "$tmp/root/in/src"
capture mpi -r --progress "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi --progress: exit $rc: $err"
size=$(printf '%s\n' "$out" | sed -n 's/.*railcp-mpi: pushed 305 files, \([0-9.]* [KMG]*i*B\) with.*/\1/p')
[ -n "$size" ] || fail "railcp-mpi --progress: no summary: $out"
printf '%s' "$out" | tr '\r' '\n' | grep -q "railcp-mpi: push: $size of $size .*\[$(hostname) [0-9.]* Gb/s\]" ||
	fail "railcp-mpi --progress: no line with every rank's bytes ($size) and the host: $(printf '%s' "$out" | tr '\r' '\n' | cat -v)"
diff -r "$tmp/src" "$tmp/root/in/src" || fail "the tree railcp-mpi --progress pushed differs"
capture mpi -r -u "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
case "$out" in *"railcp-mpi: push: "*) fail "a progress line without --progress: $out" ;; esac

# The copy's filter holds for the whole job: what it leaves out travels to no rank.
capture mpi -r --exclude 'f1*' --exclude big3 "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:filtered"
[ "$rc" -eq 0 ] || fail "railcp-mpi --exclude: exit $rc: $err"
diff -r -x 'f1*' -x big3 "$tmp/src" "$tmp/root/filtered/src" || fail "railcp-mpi --exclude: the trees differ"
[ -z "$(find "$tmp/root/filtered" -name 'f1*' -o -name big3)" ] ||
	fail "railcp-mpi --exclude pushed what it excludes: $(find "$tmp/root/filtered" -name 'f1*' -o -name big3 | head -3)"

# --delete: without -p it is refused before anything moves (the pass that
# deletes matches files by size and time); with -p, each rank's session
# deletes nothing (it knows only its share: it removed the others' files
# when it did), and rank 0 deletes once after them all, sending nothing.
echo extra >"$tmp/root/in/src/extra"
capture mpi -r --delete "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 2 ] || fail "railcp-mpi --delete without -p: exit $rc, not 2: $err"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "railcp-mpi --delete without -p: not one line: $err"
case "$err" in "railcp-mpi: --delete needs -p with railcp-mpi:"*) ;;
*) fail "railcp-mpi --delete without -p is not refused as it should be: $err" ;; esac
[ -f "$tmp/root/in/src/extra" ] || fail "a refused railcp-mpi --delete removed a file"
mkdir -p "$tmp/root/in/src/d1/gone"
echo extra >"$tmp/root/in/src/d1/gone/x"
capture mpi -r -p --delete --json "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi -p --delete: exit $rc: $err"
diff -r "$tmp/src" "$tmp/root/in/src" || fail "railcp-mpi -p --delete: the trees differ"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["deleted"] == 3, j["deleted"]
assert j["files"] == 305, j["files"]
assert j["delete_pass_files_sent"] == 0 and j["delete_pass_bytes_sent"] == 0, j
' || fail "railcp-mpi -p --delete --json: not 305 files sent and 3 entries deleted: $out"
echo extra >"$tmp/root/in/src/d2/extra"
capture mpi -r -p -u --delete "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 0 ] || fail "railcp-mpi -p -u --delete: exit $rc: $err"
case "$out" in "railcp-mpi: pushed 0 files, "*"railcp-mpi: then deleted 1 entries the sources do not hold (--delete)"*) ;;
*) fail "railcp-mpi -p -u --delete: not 0 files sent and 1 entry deleted: $out" ;; esac
diff -r "$tmp/src" "$tmp/root/in/src" || fail "railcp-mpi -p -u --delete: the trees differ"
capture mpi -r -n --delete "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 2 ] || fail "railcp-mpi -n --delete (a push): exit $rc, not 2: $err"
capture mpi -r -n -c "$tmp/src" "127.0.0.1:$port1,127.0.0.1:$port2:in"
[ "$rc" -eq 2 ] || fail "railcp-mpi -n -c: exit $rc, not 2: $err"
case "$err" in "railcp-mpi: -c with -n: railcp-mpi does not compare chunks"*) ;;
*) fail "railcp-mpi -n -c is not refused in one line: $err" ;; esac

capture mpi -r "$tmp/src"
[ "$rc" -eq 2 ] || fail "no HOSTS:DST: exit $rc, not 2"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "no HOSTS:DST: not one line: $err"
case "$err" in "railcp-mpi: "*) ;; *) fail "no HOSTS:DST: $err" ;; esac
kill "$pid1" "$pid2"
wait "$pid1" "$pid2"
