# -c over TCP on 127.0.0.1, no guest: a 64 MiB file with 1% of its chunks
# changed in random places sends at most 2% of its bytes (the --json
# report's "bytes") and lands byte for byte as the source, with -p's mode
# and time; a file grown and one cut short land whole; a 200-file tree
# where 5 files changed content but kept size and mtime: -u sends none of
# them (its quick check is fooled), -c -n lists exactly those 5 (1 of 1
# chunk each) and writes nothing, -c sends exactly those 5 files' chunks
# and the trees end the same; a pull with -c likewise, -c -n first (one
# chunk named, nothing written); keyed, -c -n and -c alike; no temporary is
# left.
. tests/integration/lib.sh
server_tmp
tcp="--transport tcp --rails lo --port $port --chunk 256K"
cd "$tmp" || fail "no $tmp"
mkdir root src

: >serve.log
start_server serve.log --transport tcp --rails lo --port "$port" --root "$tmp/root"

# Flips every bit of the byte at offset $2 of file $1: a fixed byte written
# over random data would leave it as it was once in 256 runs.
flip_byte() {
	python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); off = int(sys.argv[2]); b = os.pread(fd, 1, off); os.pwrite(fd, bytes([b[0] ^ 0xff]), off); os.close(fd)" "$1" "$2"
}

# $1: a key of the --json report in $out.
json_of() { printf '%s\n' "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

# A 64 MiB file of 256 chunks, pushed whole once, then 1% of its chunks
# (3, in random places) changed, its mtime kept.
head -c $((64 << 20)) /dev/urandom >src/big
chmod 640 src/big
# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp -p src/big 127.0.0.1:
[ "$rc" -eq 0 ] || fail "the first push: $err"
python3 - src/big <<'PY' || fail "cannot change src/big"
import os, random, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
st = os.fstat(fd)
for k in random.sample(range(256), 3):
    os.pwrite(fd, os.urandom(100), k * 262144 + random.randrange(262144 - 100))
os.close(fd)
os.utime(sys.argv[1], ns=(st.st_atime_ns, st.st_mtime_ns))
PY
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c --json src/big 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -c: $err"
sent=$(json_of bytes) kept=$(json_of bytes_kept)
[ "$sent" -le $(((64 << 20) / 50)) ] || fail "push -c sent $sent bytes of 64 MiB"
[ "$sent" -eq $((3 * 262144)) ] || fail "push -c sent $sent bytes, not the 3 chunks changed"
[ "$kept" -eq $(((64 << 20) - 3 * 262144)) ] || fail "push -c kept $kept bytes"
[ "$(json_of chunks_compared)" -eq 256 ] || fail "push -c compared $(json_of chunks_compared) chunks"
[ "$(json_of chunks_sent)" -eq 3 ] || fail "push -c sent $(json_of chunks_sent) chunks"
# Each end reads each chunk compared once (the receiver: its CRC-64, its digest and its copy
# into the new file from one read).
[ "$(json_of hashed_bytes_sender)" -eq $((64 << 20)) ] || fail "the sender hashed $(json_of hashed_bytes_sender) bytes"
[ "$(json_of hashed_bytes_receiver)" -eq $((64 << 20)) ] || fail "the receiver hashed $(json_of hashed_bytes_receiver) bytes"
printf '%s\n' "$out" | python3 -c "import json, sys; o = json.load(sys.stdin); assert 0 < o['hash_seconds_sender'] < o['seconds'] and 0 < o['hash_seconds_receiver'] < o['seconds']" ||
	fail "push -c's hashing times: $out"
cmp src/big root/big || fail "push -c: root/big differs from src/big"
[ "$(stat -c '%a %Y' root/big)" = "$(stat -c '%a %Y' src/big)" ] || fail "push -c -p: mode or time differs"

# The same with nothing changed: nothing sent; then grown, then cut short.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c --json src/big 127.0.0.1:
[ "$rc" -eq 0 ] && [ "$(json_of bytes)" -eq 0 ] || fail "push -c of the same file: $rc, $out $err"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c src/big 127.0.0.1:
case "$out" in *"railcp: -c: 256 chunks compared"*", 0 sent; 64.0 MiB at the destination matched"*"railcp: -c: the sender read and hashed 64.0 MiB in "*) ;;
*) fail "push -c's summary: $out" ;; esac
head -c 300000 /dev/urandom >>src/big
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c --json src/big 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -c of a longer file: $err"
[ "$(json_of bytes)" -eq 300000 ] || fail "push -c of a longer file sent $(json_of bytes) bytes"
cmp src/big root/big || fail "push -c of a longer file: root/big differs"
truncate -s $(((10 << 20) + 5)) src/big
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c --json src/big 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -c of a shorter file: $err"
[ "$(json_of bytes)" -eq 0 ] || fail "push -c of a shorter file (its head unchanged) sent $(json_of bytes) bytes"
cmp src/big root/big || fail "push -c of a shorter file: root/big differs"

# A tree of 200 files; 5 change content, keeping size and mtime.
mkdir -p src/t/a src/t/b
for i in $(seq 1 200); do
	d=a; [ $((i % 2)) -eq 0 ] && d=b
	head -c $((1000 + i * 37)) /dev/urandom >src/t/$d/f$i
done
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p src/t 127.0.0.1:
[ "$rc" -eq 0 ] || fail "the tree's first push: $err"
changed="a/f3 b/f50 a/f101 b/f150 b/f200"
for f in $changed; do
	python3 -c "import os, sys; p = sys.argv[1]; st = os.stat(p); fd = os.open(p, os.O_WRONLY); os.pwrite(fd, b'X' * 10, 100); os.close(fd); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))" "src/t/$f"
done
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p -u --json src/t 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -u of the tree: $err"
[ "$(json_of bytes)" -eq 0 ] || fail "push -u sent $(json_of bytes) bytes: its quick check saw a change"
[ "$(json_of files_skipped)" -eq 200 ] || fail "push -u skipped $(json_of files_skipped) files"
cmp -s src/t/a/f3 root/t/a/f3 && fail "push -u copied a/f3 after all"
want=0
for f in $changed; do want=$((want + $(stat -c %s "src/t/$f"))); done
# -c -n lists exactly those 5, each 1 of its 1 chunk differing, and writes nothing.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p -c -n --json src/t 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -c -n of the tree: $err"
printf '%s\n' "$out" | python3 -c "
import json, sys
o = json.load(sys.stdin)
got = sorted((e['path'], e['chunks_differ'], e['chunks'], e['whole']) for e in o['entries'])
want = sorted(('t/' + f, 1, 1, False) for f in sys.argv[1].split())
assert got == want, got
assert o['bytes'] == int(sys.argv[2]) and o['chunks_differ'] == 5 and o['chunks'] == 200, o
" "$changed" "$want" || fail "push -c -n of the tree: $out"
cmp -s src/t/a/f3 root/t/a/f3 && fail "push -c -n copied a/f3"
expect_no_temps root
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p -c -n src/t 127.0.0.1:
case "$out" in *"t/b/f50: 1 of 1 chunks differ"*"railcp: dry run: 5 files and symlinks"*"railcp: dry run: 5 of 200 chunks differ (-c)"*) ;;
*) fail "push -c -n's list: $out" ;; esac
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p -c --json src/t 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -c of the tree: $err"
[ "$(json_of bytes)" -eq "$want" ] || fail "push -c of the tree sent $(json_of bytes) bytes, not $want (the 5 files)"
diff -r src/t root/t >/dev/null || fail "push -c: the trees differ"

# A pull with -c: one file changed at the server, one chunk of it travels.
flip_byte root/big 4096
mkdir back && cp -p src/big back/big
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c -n --json 127.0.0.1:big back/big
[ "$rc" -eq 0 ] || fail "pull -c -n: $err"
printf '%s\n' "$out" | python3 -c "
import json, sys
o = json.load(sys.stdin)
assert [(e['path'], e['chunks_differ'], e['chunks'], e['bytes_differ']) for e in o['entries']] == [('big', 1, 41, 262144)], o
" || fail "pull -c -n: $out"
cmp src/big back/big || fail "pull -c -n changed back/big"
expect_no_temps back
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -p -c --json 127.0.0.1:big back/big
[ "$rc" -eq 0 ] || fail "pull -c: $err"
[ "$(json_of bytes)" -eq 262144 ] || fail "pull -c sent $(json_of bytes) bytes, not one chunk"
[ "$(json_of chunks_sent)" -eq 1 ] && [ "$(json_of hashed_bytes_sender)" -gt 0 ] && [ "$(json_of hashed_bytes_receiver)" -gt 0 ] ||
	fail "pull -c's report: $out"
cmp root/big back/big || fail "pull -c: back/big differs"

# Keyed: the digests are Poly1305 under the session's one-time keys (keyless
# ones are HMAC-SHA256): one chunk changed at the source, that chunk alone travels.
stop_server
RAILCP_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RAILCP_KEY
: >serve.log
start_server serve.log --transport tcp --rails lo --port "$port" --root "$tmp/root"
cp -p root/big src/big # the pull's change at the server, taken back
flip_byte src/big $((3 * 262144 + 17))
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -c --json src/big 127.0.0.1:
[ "$rc" -eq 0 ] || fail "keyed push -c: $err"
[ "$(json_of chunks_sent)" -eq 1 ] && [ "$(json_of bytes)" -eq 262144 ] ||
	fail "keyed push -c sent $(json_of chunks_sent) chunks, $(json_of bytes) bytes, not the one changed"
cmp src/big root/big || fail "keyed push -c: root/big differs"
# A keyed -c -n names that chunk too, before the copy sends it.
flip_byte src/big $((5 * 262144))
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -c -n src/big 127.0.0.1:
[ "$rc" -eq 0 ] || fail "keyed push -c -n: $err"
case "$out" in "big: 1 of 41 chunks differ"*"railcp: dry run: 1 of 41 chunks differ (-c)"*) ;;
*) fail "keyed push -c -n's list: $out" ;; esac
cmp -s src/big root/big && fail "keyed push -c -n copied big"
unset RAILCP_KEY
expect_no_temps root
expect_no_temps back
echo "PASS"
