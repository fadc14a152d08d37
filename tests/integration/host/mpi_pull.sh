# railcp-mpi pulls over Open MPI on this host, over TCP on 127.0.0.1 (the
# rail lo): two ranks pull a tree (small files, larger ones, an empty
# directory, a symlink, a name that is not UTF-8) from two railcp serve
# processes on two ports serving one root. The tree lands whole and the
# same, with -p its directories' times too, into an existing directory and
# as a new one; rank 0 listed it once (a dry run on the first server) and
# each server sent one rank's share, the two shares the whole tree; a -u
# re-run pulls nothing; --delete deletes once, after every rank. A server
# that is not running: its rank pulls from the other. A missing source,
# and with --no-failover a server that is not running, end the job with
# one line naming the rank and a non-zero status, with no temporary and no
# half-written file left under a final name.
# Skipped, saying so, only where no MPI is installed, or where mpirun itself
# cannot run (a host name of about 60 characters: need_mpi in lib.sh).
. tests/integration/lib.sh
mpi_setup # $dead: nothing listens there
hosts="127.0.0.1:$port1,127.0.0.1:$port2"

src="$tmp/root/data/tree"
for d in 1 2 3 4; do
	mkdir -p "$src/d$d/sub"
	for i in $(seq 1 40); do echo "file $d $i" >"$src/d$d/f$i"; done
done
odd=$(printf 'odd\377')
mkdir -p "$src/d1/empty" "$src/d2/$odd"
echo odd >"$src/d2/$odd/inside"
ln -s d1/f1 "$src/link"
head -c $((3 * 1024 * 1024)) /dev/urandom >"$src/big3"
head -c $((2 * 1024 * 1024 + 7)) /dev/urandom >"$src/d2/sub/big2"
head -c $((1536 * 1024)) /dev/urandom >"$src/d3/big15"
chmod 0750 "$src/d3"
chmod 2755 "$src/d4" # setgid: never set by a pull (the server does not choose it)
touch -d '2001-02-03 04:05:06' "$src/d1" "$src/d1/empty" "$src/d3" "$src"
files=$(find "$src" -type f | wc -l)

mpi_serve_two

# Into an existing directory, -p: the tree whole, its directories' modes and times too.
mkdir "$tmp/out"
capture mpi -r -p "$hosts:data/tree" "$tmp/out"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull: exit $rc: $err"
diff -r "$src" "$tmp/out/tree" || fail "the tree railcp-mpi pulled differs"
for d in . d1 d1/empty d3; do
	[ "$(stat -c '%a %Y' "$src/$d")" = "$(stat -c '%a %Y' "$tmp/out/tree/$d")" ] ||
		fail "-p: $d has $(stat -c '%a %Y' "$tmp/out/tree/$d"), not $(stat -c '%a %Y' "$src/$d")"
done
[ "$(stat -c '%a' "$tmp/out/tree/d4")" = 755 ] || fail "-p: d4 (2755 at the source) has $(stat -c '%a' "$tmp/out/tree/d4"), not 755"
case "$out" in
"railcp-mpi: pulled $files files, "*" with 2 ranks from 2 servers in "*"balance 1."*) ;;
*) fail "the summary does not say $files files, 2 ranks, 2 servers and the balance: $out" ;;
esac
[ "$(printf '%s\n' "$out" | grep -c '^  rank [01] on .* from 127.0.0.1 in ')" -eq 2 ] || fail "not one line per rank: $out"
# Rank 0 listed the tree once on the first server; each server sent one share, together the tree.
[ "$(grep -c 'dry run of a pull of' "$tmp/s1.log")" -eq 1 ] || fail "rank 0 did not list the tree once: $(cat "$tmp/s1.log")"
! grep -q 'dry run' "$tmp/s2.log" || fail "the second server was asked for a listing: $(cat "$tmp/s2.log")"
n1=$(sed -n 's/.*: pull of \([0-9]*\) files from "data\/tree" done.*/\1/p' "$tmp/s1.log")
n2=$(sed -n 's/.*: pull of \([0-9]*\) files from "data\/tree" done.*/\1/p' "$tmp/s2.log")
[ -n "$n1" ] && [ -n "$n2" ] && [ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] && [ $((n1 + n2)) -eq "$files" ] ||
	fail "the servers did not each send a share of the $files files ($n1 and $n2): $(cat "$tmp/s1.log" "$tmp/s2.log")"

# A -u re-run pulls nothing; --json gives each rank's share, their sum the
# tree's bytes, and its server's port (the second server's from --port).
capture mpi --port "$port2" -r -u --json "127.0.0.1:$port1,127.0.0.1:data/tree" "$tmp/out"
[ "$rc" -eq 0 ] || fail "railcp-mpi -u: exit $rc: $err"
total=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["ranks"]
assert j["direction"] == "pull", j
assert [x["rank"] for x in r] == [0, 1], r
assert [x["port"] for x in r] == ['"$port1, $port2"'], r
assert sum(x["share_bytes"] for x in r) == '"$total"', r
assert all(x["share_bytes"] > 0 for x in r), r
assert j["files"] == 0 and j["bytes"] == 0, j
assert sum(x["files_skipped"] for x in r) == '"$files"', r
' || fail "railcp-mpi -u --json: the ranks' figures are wrong: $out"

# Into a new directory, -p: made by rank 0 (every rank pulling into it),
# it receives the tree under its name, as one railcp names it (rsync's
# rule), the tree's directories with their modes and times once every rank
# is done; the same command again lands in the same place and pulls nothing.
capture mpi -r -p "$hosts:data/tree" "$tmp/new"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull into a new directory: exit $rc: $err"
diff -r "$src" "$tmp/new/tree" || fail "the tree railcp-mpi pulled into a new directory differs"
for d in . d1 d3; do
	[ "$(stat -c '%a %Y' "$src/$d")" = "$(stat -c '%a %Y' "$tmp/new/tree/$d")" ] ||
		fail "-p into a new directory: $d has $(stat -c '%a %Y' "$tmp/new/tree/$d"), not $(stat -c '%a %Y' "$src/$d")"
done
[ "$(ls -A "$tmp/new")" = tree ] || fail "the new directory holds more than the tree: $(ls -A "$tmp/new")"
capture mpi -r -p -u "$hosts:data/tree" "$tmp/new"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull into a new directory, again: exit $rc: $err"
[ "$(ls -A "$tmp/new")" = tree ] || fail "the same pull again landed elsewhere: $(ls -A "$tmp/new")"
case "$out" in "railcp-mpi: pulled 0 files, "*) ;; *) fail "the same pull again pulled files: $out" ;; esac

# --progress: rank 0's line sums both ranks' bytes, one source per session.
capture mpi -r --progress "$hosts:data/tree" "$tmp/prog"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull --progress: exit $rc: $err"
size=$(printf '%s\n' "$out" | sed -n 's/.*railcp-mpi: pulled [0-9]* files, \([0-9.]* [KMG]*i*B\) with.*/\1/p')
printf '%s' "$out" | tr '\r' '\n' | grep -q "railcp-mpi: pull: $size of $size .*\[$(hostname) [0-9.]* Gb/s\]" ||
	fail "railcp-mpi pull --progress: no line with every rank's bytes ($size): $(printf '%s' "$out" | tr '\r' '\n' | cat -v)"
diff -r "$src" "$tmp/prog/tree" || fail "the tree railcp-mpi pull --progress pulled differs"

# Two sources, a session each per rank: the job's series carries each
# rank's first session's bytes into its second, never going back.
capture mpi -r --json "$hosts:data/tree/d1" "$hosts:data/tree/d2" "$tmp/two"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull of two sources --json: exit $rc: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
s = j["series"]
assert len(s["rails"]) == 2 and s["rails"][1].startswith("rank 1 "), s["rails"]
for a, b in zip(s["bytes"], s["bytes"][1:]):
    assert all(x <= y for x, y in zip(a, b)), (a, b)
assert sum(s["bytes"][-1]) == j["bytes"] > 0, (s["bytes"][-1], j["bytes"])
' || fail "railcp-mpi pull of two sources: the series is wrong: $out"
diff -r "$src/d1" "$tmp/two/d1" && diff -r "$src/d2" "$tmp/two/d2" || fail "the two sources pulled differ"

# --delete -p: the ranks' sessions delete nothing (each knows only its
# share), rank 0 deletes once after them; -n --delete lists the same.
echo extra >"$tmp/new/tree/d1/extra"
mkdir "$tmp/new/tree/d4/gone"
capture mpi -r -p -n --delete "$hosts:data/tree" "$tmp/new"
[ "$rc" -eq 0 ] || fail "railcp-mpi -n --delete: exit $rc: $err"
case "$out" in *"deleting tree/d1/extra"*"would be deleted"*) ;; *) fail "railcp-mpi -n --delete: $out" ;; esac
[ -f "$tmp/new/tree/d1/extra" ] || fail "railcp-mpi -n --delete removed a file"
capture mpi -r -p --delete "$hosts:data/tree" "$tmp/new"
[ "$rc" -eq 0 ] || fail "railcp-mpi -p --delete: exit $rc: $err"
diff -r "$src" "$tmp/new/tree" || fail "railcp-mpi -p --delete: the trees differ"
case "$out" in "railcp-mpi: pulled $files files, "*"railcp-mpi: then deleted 2 entries the sources do not hold (--delete)"*) ;;
*) fail "railcp-mpi -p --delete: not $files files pulled and 2 entries deleted: $out" ;; esac

# A missing source: rank 0's listing says so in one line; nothing is made.
capture mpi -r "$hosts:data/nonexistent" "$tmp/none"
[ "$rc" -eq 1 ] || fail "a missing source: exit $rc, not 1"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "a missing source: not one line: $err"
case "$err" in "railcp-mpi: rank 0 on $(hostname) failed listing the sources on 127.0.0.1 port $port1: "*nonexistent*) ;;
*) fail "a missing source is not said as it is: $err" ;; esac
[ ! -e "$tmp/none" ] || fail "a missing source made the destination"

# Rank 1's server is not running: rank 1 pulls from server 1 instead,
# saying so in one line; with --no-failover, one line naming rank 1, its
# host and the server; no temporary left, and every file under its final
# name whole.
capture mpi -r "127.0.0.1:$port1,127.0.0.1:$dead:data/tree" "$tmp/moved"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull with a server not running did not move to the other: exit $rc: $err"
case "$err" in "railcp-mpi: rank 1 on $(hostname): server 127.0.0.1 port $dead is gone ("*"); its copy goes on with 127.0.0.1 port $port1") ;;
*) fail "not one line saying rank 1 moved from port $dead to $port1: $err" ;; esac
diff -r "$src" "$tmp/moved/tree" || fail "the tree railcp-mpi pulled with a server not running differs"
# The first server not running: rank 0 lists the tree on the second, and
# pulls its share from there too.
capture mpi -r "127.0.0.1:$dead,127.0.0.1:$port2:data/tree" "$tmp/moved0"
[ "$rc" -eq 0 ] || fail "railcp-mpi pull with the first server not running: exit $rc: $err"
case "$err" in "railcp-mpi: rank 0 on $(hostname): server 127.0.0.1 port $dead is gone ("*"); its copy goes on with 127.0.0.1 port $port2") ;;
*) fail "not one line saying rank 0 moved from port $dead to $port2: $err" ;; esac
diff -r "$src" "$tmp/moved0/tree" || fail "the tree railcp-mpi pulled with the first server not running differs"
mkdir "$tmp/part"
capture mpi -r --no-failover "127.0.0.1:$port1,127.0.0.1:$dead:data/tree" "$tmp/part"
[ "$rc" -ne 0 ] || fail "railcp-mpi --no-failover from a server that is not running succeeded"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "not one line on stderr: $err"
case "$err" in "railcp-mpi: rank 1 on $(hostname) failed pulling from 127.0.0.1 port $dead: "*) ;;
*) fail "the failure does not name rank 1, its host and server: $err" ;; esac
wait_for_no_temp "$tmp/part" 20 || fail "temporaries left: $(find "$tmp/part" -name '.railcp-tmp-*')"
(cd "$tmp/part" && find . -type f) | while read -r f; do
	cmp -s "$tmp/part/$f" "$tmp/root/data/$f" || fail "a half-written file under its final name: $f"
done || exit 1

# Sources naming different servers are a usage error.
capture mpi -r "$hosts:data/tree" "127.0.0.1:$port1:data/tree/d1" "$tmp/out"
[ "$rc" -eq 2 ] || fail "sources on different servers: exit $rc, not 2"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "sources on different servers: not one line: $err"
kill "$pid1" "$pid2"
wait "$pid1" "$pid2"
