# railcp -u (the quick check) over real verbs: a tree pushed with -p and
# pushed again with -u sends no byte and leaves every file alone (same
# inode); a file changed since (same size, new mtime) is sent again whole,
# and one whose size changed too; the same for a pull. The figures the
# tests hold to are --json's files_sent, files_skipped, bytes and
# bytes_skipped, so a quick check that sent everything again fails here.
# Then -c over verbs: one 256 KiB chunk of a file changed in place, its
# size and mtime kept, is missed by -u and is the only chunk -c sends, by
# push and by pull, and the files end equal.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir -p root back src/top/sub
/usr/bin/python3 -c '
import os
for i in range(20):
    with open("src/top/sub/f%02d" % i, "wb") as f:
        f.write(os.urandom(4096 * i + 17))
with open("src/top/big", "wb") as f:
    f.write(os.urandom(3 * 1048576 + 5))'
ln -s sub/f01 src/top/link
files=21
bytes=$(find src -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
start_server serve.log --root "$dir/root"

# json FILE EXPR: evaluate a Python expression over the summary in FILE (as d).
json() { /usr/bin/python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

# expect FILE SENT SKIPPED BYTES: the summary's counts, or fail.
expect() {
	got=$(json "$1" '"%d %d %d %d" % (d["files_sent"], d["files_skipped"], d["bytes"], d["bytes_skipped"])')
	want="$2 $3 $4 $(($bytes - $4))"
	[ "$got" = "$want" ] || fail "$1: sent, skipped, bytes, bytes skipped are $got, not $want"
}

t0=$(date +%s%N)
"$RAILCP" -r -p --json src/top 127.0.0.1: >first.json 2>first.err || fail "the first push failed: $(cat first.err)"
t1=$(date +%s%N)
expect first.json $files 0 "$bytes"
ino=$(stat -c %i root/top/big)
"$RAILCP" -r -p -u --json src/top 127.0.0.1: >again.json 2>again.err || fail "the push with -u failed: $(cat again.err)"
t2=$(date +%s%N)
expect again.json 0 $files 0
[ "$(stat -c %i root/top/big)" = "$ino" ] || fail "an unchanged file was put in place again"
echo "push of $files files, $bytes bytes: $(((t1 - t0) / 1000000)) ms; again with -u: $(((t2 - t1) / 1000000)) ms, nothing sent"

# The same size with new bytes and a new mtime: sent again, whole; a new size too.
head -c 3145733 /dev/urandom >src/top/big
touch -d '2001-01-01 00:00:00.5' src/top/big
echo more >>src/top/sub/f03
"$RAILCP" -r -p -u --json src/top 127.0.0.1: >changed.json 2>changed.err || fail "the push of changed files failed: $(cat changed.err)"
changed=$((3145733 + $(stat -c %s src/top/sub/f03)))
bytes=$(find src -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
expect changed.json 2 $((files - 2)) $changed
cmp src/top/big root/top/big && cmp src/top/sub/f03 root/top/sub/f03 || fail "a changed file arrived wrong"
"$RAILCP" -q -u -r -p src/top 127.0.0.1: || fail "the summary-less push with -u failed"

# Pull: the same, the local side deciding.
"$RAILCP" -r -p -u --json 127.0.0.1:top back >pull1.json 2>pull1.err || fail "the first pull failed: $(cat pull1.err)"
expect pull1.json $files 0 "$bytes"
"$RAILCP" -r -p -u --json 127.0.0.1:top back >pull2.json 2>pull2.err || fail "the pull with -u failed: $(cat pull2.err)"
expect pull2.json 0 $files 0
diff -r src/top back/top || fail "the pulled tree differs"
[ "$(readlink back/top/link)" = sub/f01 ] || fail "the link was not pulled"
[ -z "$(find root back -name '.railcp-tmp-*')" ] || fail "a temporary was left"
"$RAILCP" -r -p -u 127.0.0.1:top back >pull3.out 2>&1 || fail "the pull with -u and its summary failed: $(cat pull3.out)"
grep -q "^railcp: $files files, .*were at the destination already" pull3.out || fail "the summary does not count the skipped files: $(cat pull3.out)"

# -c: chunk 5 of big changed in place (size and mtime kept): -u misses it, -c sends that chunk alone.
/usr/bin/python3 - src/top/big <<'PY' || fail "cannot change src/top/big"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
st = os.fstat(fd)
os.pwrite(fd, os.urandom(64), 5 * 262144 + 1000)
os.close(fd)
os.utime(sys.argv[1], ns=(st.st_atime_ns, st.st_mtime_ns))
PY
"$RAILCP" -r -p -u --json src/top 127.0.0.1: >cu.json 2>cu.err || fail "the push with -u failed: $(cat cu.err)"
[ "$(json cu.json 'd["bytes"]')" = 0 ] || fail "-u sent bytes of a file whose size and mtime it knew"
cmp -s src/top/big root/top/big && fail "root/top/big already holds the change"
took=
for side in push pull; do
	if [ $side = push ]; then
		"$RAILCP" -r -p -c --chunk 256K --json src/top 127.0.0.1: >c.json 2>c.err || fail "push -c: $(cat c.err)"
		cmp src/top/big root/top/big || fail "push -c: root/top/big differs"
	else
		"$RAILCP" -r -p -c --chunk 256K --json 127.0.0.1:top back >c.json 2>c.err || fail "pull -c: $(cat c.err)"
		cmp src/top/big back/top/big || fail "pull -c: back/top/big differs"
	fi
	got=$(json c.json '"%d %d" % (d["chunks_sent"], d["bytes"])')
	[ "$got" = "1 262144" ] || fail "$side -c sent $got (chunks, bytes), not the one chunk changed"
	took="$took $side $(json c.json '"%.2f s (hashing %.2f s here, %.2f s there)" % (d["seconds"], d["hash_seconds_sender"], d["hash_seconds_receiver"])')"
done
diff -r src/top back/top || fail "the trees differ after -c"
echo "-c after a change -u cannot see: push and pull each sent the one chunk changed:$took"
stop_server
rm -rf "$dir"
exit 0
