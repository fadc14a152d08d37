# The same command run again lands where the first run did (rsync's
# naming, doc/usage.md), over TCP on 127.0.0.1, no guest. A push of a tree
# to a destination that does not exist yet, `railcp -r -p --partial data
# 127.0.0.1:incoming`, killed mid-way, then the same command again with -u:
# it must land in incoming/data again (not incoming/data/data, as cp -r's
# rule had it), send only what had not landed (the small files skipped, the
# big file's landed part kept), leave no .railcp-tmp-* and end equal to the
# source. Run a third time, it sends nothing. A pull, killed and run again
# the same way, lands in back/data both times. A source with a trailing
# slash is its contents, pushed or pulled, the first time and the second.
. tests/integration/lib.sh
tmp=$(mktemp -d)
trap 'kill -9 "$server_pid" "$copy_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME="$tmp" LC_ALL=C
unset RAILCP_KEY
cd "$tmp" || fail "cannot enter $tmp"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# 4 KiB chunks on one stripe keep a 512 MiB file going for seconds (about
# 4 s here, as host/tcp_cut); the run again takes the same chunk size,
# which a --partial record holds for.
tcp="--transport tcp --rails lo --port $port --chunk 4K --qps-per-rail 1"

mkdir -p root data/a
for i in 0 1 2 3 4 5 6 7 8 9; do head -c $((i * 1000 + 1)) /dev/urandom >"data/a/f$i"; done
# Data all the way (railcp sends no holes), quick to make; after a/ in the walk.
yes "$(head -c 3000 /dev/urandom | base64 -w0)" | head -c $((512 * 1024 * 1024 + 5)) >data/zbig
total=$(find data -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

: >serve.log # start_server greps it at once
start_server serve.log --transport tcp --rails lo --port "$port" --root root

# cut DIR LABEL WAIT CMD...: run CMD in the background and SIGKILL it once
# more than 1 MiB of zbig landed beneath DIR and WAIT seconds passed: a
# little for a push, whose receiver (the server) records what landed when
# the copy fails; more than a second for a pull, whose receiver is the
# killed client and keeps what its last checkpoint (at most a second old)
# recorded.
cut() {
	_dir=$1 _label=$2 _wait=$3
	shift 3
	"$@" 2>"cut-$_label.err" &
	copy_pid=$!
	wait_until 30 sh -c "find '$_dir' -name '.railcp-tmp-*' -size +1M 2>/dev/null | grep -q ." ||
		fail "$_label: nothing of zbig arrived in 30 s: $(cat "cut-$_label.err")"
	sleep "$_wait"
	kill -9 "$copy_pid" || fail "$_label: the copy ended before the cut: the test needs a slower copy"
	wait "$copy_pid" 2>/dev/null
	[ -n "$(find "$_dir" -name '.railcp-tmp-*')" ] || fail "$_label: no partial file was left to resume"
}

# again LABEL JSON: the run again skipped the small files, kept part of
# zbig and sent no more than the rest of it.
again() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
total, label = int(sys.argv[2]), sys.argv[3]
sent, kept, skipped = d["bytes"], d["bytes_kept"], d["bytes_skipped"]
print("%s: the run again sent %.1f%%, kept %.1f%%, skipped %.1f%% in %d files"
      % (label, 100 * sent / total, 100 * kept / total, 100 * skipped / total, d["files_skipped"]))
assert d["files_skipped"] == 10, ("the small files were not all skipped", d["files_skipped"])
assert kept > 0, ("nothing of zbig was kept", d)
assert sent + kept + skipped == total, ("sent, kept and skipped are not the tree", sent, kept, skipped, total)
' "$2" "$total" "$1" || fail "$1: the run again did not resume: $(cat "$2")"
}

# landed LABEL DIR: DIR is the copy of data, nothing nested, no temporaries.
landed() {
	[ ! -e "$2/data" ] && [ ! -e "$2/incoming" ] || fail "$1: the run again nested a copy in $2: $(ls "$2")"
	_top=${2%/data}
	[ -z "$(find "$_top" -name '.railcp-tmp-*')" ] || fail "$1: temporaries left: $(find "$_top" -name '.railcp-tmp-*')"
	diff -r data "$2" || fail "$1: $2 differs from the source"
}

# A push to a new name, killed; the same command again with -u.
# shellcheck disable=SC2086 # $tcp is words
cut root/incoming push 0.5 "$RAILCP" $tcp -q -r -p --partial data 127.0.0.1:incoming
# The server keeps the partial file locked until its session has ended: a
# run again before that (CI under load) finds it held and starts anew.
wait_for_line "session 1 from 127.0.0.1 failed" 30 serve.log ||
	fail "the server did not end the cut push's session: $(cat serve.log)"
[ -d root/incoming/data ] || fail "the first push did not land in incoming/data: $(ls -R root | head)"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --json -r -p -u --partial data 127.0.0.1:incoming
[ "$rc" -eq 0 ] || fail "the push run again: $err"
printf '%s' "$out" >push.json
again push push.json
landed push root/incoming/data
[ "$(ls root/incoming)" = data ] || fail "incoming holds more than data: $(ls root/incoming)"

# A third time: nothing travels, still in the same place.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --json -r -p -u --partial data 127.0.0.1:incoming
[ "$rc" -eq 0 ] || fail "the push a third time: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["bytes"] == 0 and j["files_skipped"] == 11, j
' || fail "the push a third time sent something: $out"
landed "push, third" root/incoming/data

# A pull to a new name, killed; the same command again with -u.
# shellcheck disable=SC2086
cut back pull 1.2 "$RAILCP" $tcp -q -r -p --partial 127.0.0.1:incoming/data back
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --json -r -p -u --partial 127.0.0.1:incoming/data back
[ "$rc" -eq 0 ] || fail "the pull run again: $err"
printf '%s' "$out" >pull.json
again pull pull.json
landed pull back/data
[ "$(ls back)" = data ] || fail "back holds more than data: $(ls back)"

# A trailing slash is the contents, each time (as rsync reads it).
rm -f data/zbig
for run in first again; do
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp -q -r -u data/ 127.0.0.1:flat
	[ "$rc" -eq 0 ] || fail "the push of data/, $run: $err"
	[ -f root/flat/a/f9 ] && [ ! -e root/flat/data ] || fail "data/ did not land as flat's contents, $run: $(ls root/flat)"
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp -q -r -u 127.0.0.1:flat/ flatback
	[ "$rc" -eq 0 ] || fail "the pull of flat/, $run: $err"
	[ -f flatback/a/f9 ] && [ ! -e flatback/flat ] || fail "flat/ was not pulled as its contents, $run: $(ls flatback)"
done
stop_server
