# railcp --partial over real verbs: a push whose client (the sender) is
# killed with SIGKILL mid-copy, one whose server (the receiver) is, and a
# pull whose server (the sender) is: each time the receiver keeps what it
# got (a partial file and its record, written as the copy runs), and the
# next copy with --partial sends only the rest. The figures held to are
# --json's bytes and bytes_kept: what was kept must not travel again, and
# kept and sent add up to the file. Then the two changes a resume must see:
# a partial file whose bytes changed on disk since (its bad chunks travel
# again) and a source changed since, to the same size (all of it travels
# again). The result is compared byte for byte, and no partial file or
# record is left once a copy succeeds.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root back
size=$((128 << 20))
head -c $size /dev/urandom >big
cp big root/pullme
log=serve.log
# One QP on one rail, small chunks: slow enough to be caught mid-copy, and
# the same for the copy that resumes (a record holds for its chunk size only).
slow="--qps-per-rail 1 --rails rxe0:1 --chunk 64K"

# landed DIR MIB: wait (at most 60 s) until a partial file beneath DIR holds
# MIB MiB (tmpfs: its blocks are the bytes written), then until the
# receiver has written its record since (it does twice a second as it copies).
landed() {
	wait_until 60 sh -c "find '$1' -name '.railcp-tmp-p*' -printf '%b\n' |
		awk '\$1 * 512 >= $2 * 1048576 { f = 1 } END { exit !f }'" ||
		fail "no partial file beneath $1 reached $2 MiB"
	touch mark
	wait_until 10 sh -c "find '$1' -name '.railcp-tmp-r*' -newer mark | grep -q ." ||
		fail "the receiver wrote no record beneath $1 in the 10 s after $2 MiB landed"
}

# resumed LABEL JSON: the copy's summary kept some and sent the rest.
resumed() {
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
size = int(sys.argv[2])
assert d["bytes_kept"] > 0, d
assert d["bytes"] + d["bytes_kept"] == size, (d["bytes"], d["bytes_kept"], size)
print("%s: %d MiB kept from the cut copy, %d MiB sent" % (sys.argv[3], d["bytes_kept"] >> 20, d["bytes"] >> 20))
' "$2" $size "$1" || fail "$1: the copy did not resume: $(cat "$2")"
}

no_partials() {
	[ -z "$(find "$@" -name '.railcp-tmp-*')" ] || fail "left behind: $(find "$@" -name '.railcp-tmp-*')"
}

start_server "$log" --root "$dir/root"

# 1. The sender killed: the server's session fails and keeps the file.
"$RAILCP" -q --partial $slow big 127.0.0.1:big &
client=$!
landed root 24
kill -KILL $client
wait $client 2>/dev/null
wait_for_line "failed" 60 "$log" || fail "the server's session did not end: $(cat "$log")"
[ ! -e root/big ] || fail "a partial file is under its final name"
"$RAILCP" --partial --json $slow big 127.0.0.1:big >push1.json 2>push1.err || fail "the resumed push failed: $(cat push1.err)"
resumed "sender killed" push1.json
cmp big root/big || fail "the resumed push differs from the source"
no_partials root

# 2. The receiver killed: what it had on record when it died is kept.
rm root/big
"$RAILCP" -q --partial $slow big 127.0.0.1:big &
client=$!
landed root 24
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null
wait $client 2>/dev/null
start_server "$log.2" --root "$dir/root"
"$RAILCP" --partial --json $slow big 127.0.0.1:big >push2.json 2>push2.err || fail "the push after the server died failed: $(cat push2.err)"
resumed "receiver killed" push2.json
cmp big root/big || fail "the push resumed after the server died differs from the source"
no_partials root

# 3. A pull whose server (the sender) is killed: the local side keeps it.
"$RAILCP" -q --partial $slow 127.0.0.1:pullme back/ &
client=$!
landed back 24
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null
wait $client 2>/dev/null
[ ! -e back/pullme ] || fail "a partial file is under its final name locally"
start_server "$log.3" --root "$dir/root"
"$RAILCP" --partial --json $slow 127.0.0.1:pullme back/ >pull.json 2>pull.err || fail "the resumed pull failed: $(cat pull.err)"
resumed "pull, sender killed" pull.json
cmp root/pullme back/pullme || fail "the resumed pull differs from the source"
no_partials root back

# cut: a push of big with --partial, its client killed once 24 MiB landed,
# until the server's session has ended.
cut() {
	ended=$(grep -c failed "$log.3")
	rm -f root/big
	"$RAILCP" -q --partial $slow big 127.0.0.1:big &
	client=$!
	landed root 24
	kill -KILL $client
	wait $client 2>/dev/null
	wait_until 60 sh -c "[ \$(grep -c failed '$log.3') -gt $ended ]" ||
		fail "the server's session did not end: $(cat "$log.3")"
}

# 4. Kept bytes changed on disk: the resume hashes what the record claims,
# finds the first chunk wrong and sends it again (else cmp fails).
cut
part=$(find root -name '.railcp-tmp-p*')
printf 'changed on disk' | dd of="$part" conv=notrunc status=none ||
	fail "cannot change $part"
"$RAILCP" --partial --json $slow big 127.0.0.1:big >changed.json 2>changed.err ||
	fail "the push over a changed partial file failed: $(cat changed.err)"
resumed "partial file changed on disk" changed.json
cmp big root/big || fail "a chunk changed on disk since the cut was trusted"
no_partials root

# 5. The source changed since, to the same size and a new mtime: the record
# is not trusted and all of it travels (bytes_kept 0), with one notice.
cut
printf 'changed at the source' | dd of=big conv=notrunc status=none
touch -d '+1 min' big
"$RAILCP" --partial --json $slow big 127.0.0.1:big >source.json 2>source.err ||
	fail "the push of a changed source failed: $(cat source.err)"
grep -q 'the partial record of "big" is ignored: the source has changed' "$log.3" ||
	fail "the server gave no notice that it set the record aside: $(cat "$log.3")"
/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bytes_kept"] == 0 and d["bytes"] == int(sys.argv[2]), d
' source.json $size || fail "a changed source was resumed: $(cat source.json)"
cmp big root/big || fail "the copy of the changed source differs from it"
no_partials root
stop_server
rm -rf "$dir"
exit 0
