# --partial -n (no -c) over TCP on 127.0.0.1, no guest: after a --partial
# push of a small tree is killed mid-way, a dry run with --partial lists
# each file by the chunks a resume would send (the big file's landed part
# kept, the rest and the small files whole), and its --json bytes and
# chunks are exactly what the resume then sends (its --json); the partial
# files are left as they were. A data file, or a record and log, handed to
# another user (nobody) count for nothing and are not removed (as root
# only: it says so otherwise). The same for a pull, whose client looks at
# what its own cut copy kept.
. tests/integration/lib.sh
tmp=$(mktemp -d)
trap 'kill -9 "$server_pid" "$copy_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME="$tmp" LC_ALL=C
unset RAILCP_KEY
cd "$tmp" || fail "cannot enter $tmp"
port=$(free_port)
# 4 KiB chunks on one stripe keep a 512 MiB file going for seconds (as
# host/rerun); the dry run and the resume take the same chunk size, which a
# --partial record holds for.
tcp="--transport tcp --rails lo --port $port --chunk 4K --qps-per-rail 1"

mkdir -p root data/a
for i in 0 1 2 3; do head -c $((i * 5000 + 1)) /dev/urandom >"data/a/f$i"; done
# Data all the way (railcp sends no holes), quick to make; after a/ in the walk.
yes "$(head -c 3000 /dev/urandom | base64 -w0)" | head -c $((512 * 1024 * 1024 + 5)) >data/zbig
big=$((512 * 1024 * 1024 + 5))

: >serve.log # start_server greps it at once
start_server serve.log --transport tcp --rails lo --port "$port" --root root

# cut DIR LABEL WAIT CMD...: run CMD in the background and SIGKILL it once
# more than 1 MiB of zbig landed beneath DIR and WAIT seconds passed (a
# pull's receiver, the killed client, keeps what its last checkpoint, at
# most a second old, recorded).
cut() {
	_dir=$1 _label=$2 _wait=$3
	shift 3
	"$@" 2>"cut-$_label.err" &
	copy_pid=$!
	wait_until 30 sh -c "find '$_dir' -name '.railcp-tmp-p*' -size +1M 2>/dev/null | grep -q ." ||
		fail "$_label: nothing of zbig arrived in 30 s: $(cat "cut-$_label.err")"
	sleep "$_wait"
	kill -9 "$copy_pid" || fail "$_label: the copy ended before the cut: the test needs a slower copy"
	wait "$copy_pid" 2>/dev/null
}

# dry LABEL OUT.json ARGS...: a --partial -n --json run, checked as a
# listing of the tree; its bytes and chunks to send printed ("B C"). WHOLE
# (set or not) says whether zbig must be listed whole.
dry() {
	_label=$1 _json=$2
	shift 2
	# shellcheck disable=SC2086 # $tcp is words
	capture "$RAILCP" $tcp --partial -n --json "$@"
	[ "$rc" -eq 0 ] || fail "$_label: the dry run: $err"
	printf '%s' "$out" >"$_json"
	python3 - "$_json" "$big" "${WHOLE:-}" <<'EOF' || fail "$_label: the dry run's list: $(cat "$_json")"
import json, sys
d = json.load(open(sys.argv[1]))
big, whole = int(sys.argv[2]), sys.argv[3] == "1"
files = {e["path"].rsplit("/", 1)[-1]: e for e in d["entries"] if e["type"] == "file"}
assert sorted(files) == ["f0", "f1", "f2", "f3", "zbig"], sorted(files)
z = files["zbig"]
assert z["chunks"] == (big + 4095) // 4096, z
if whole:
    assert z["whole"] and z["chunks_differ"] == z["chunks"] and z["bytes_differ"] == big, z
else:
    assert not z["whole"] and 0 < z["chunks_differ"] < z["chunks"], z
    assert 0 < z["bytes_differ"] < big, z
for n in ("f0", "f1", "f2", "f3"):  # whole: a small file has no partial file
    assert files[n]["whole"] and files[n]["bytes_differ"] == files[n]["size"], files[n]
assert d["bytes"] == sum(e["bytes_differ"] for e in files.values()), d
assert d["chunks_differ"] == sum(e["chunks_differ"] for e in files.values()), d
print(d["bytes"], d["chunks_differ"])
EOF
}

# resumed LABEL DRY.json ARGS...: the copy with --partial --json sends
# exactly the bytes and chunks the dry run counted, and keeps the rest.
resumed() {
	_label=$1 _dry=$2
	shift 2
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp --partial --json "$@"
	[ "$rc" -eq 0 ] || fail "$_label: the resume: $err"
	printf '%s' "$out" | python3 -c '
import json, sys
j, d = json.load(sys.stdin), json.load(open(sys.argv[1]))
print("%s: the dry run counted %d bytes in %d chunks; the resume sent %d in %d, kept %d"
      % (sys.argv[2], d["bytes"], d["chunks_differ"], j["bytes"], j["chunks_sent"], j["bytes_kept"]))
assert j["bytes_kept"] > 0, j
assert j["bytes"] == d["bytes"] and j["chunks_sent"] == d["chunks_differ"], (j, d)
' "$_dry" "$_label" || fail "$_label: the resume did not send what the dry run counted: $out"
}

# The partial files of zbig beneath DIR, named and summed (contents, owner,
# inode, times): what a dry run must leave as it was.
partial_state() { find "$1" -name '.railcp-tmp-*' -printf '%f %U %i %T@ %C@\n' -exec sha256sum {} + | sort; }

# settled DIR: zbig's record is beneath DIR and its data file's lock is free.
settled() {
	_data=$(find "$1" -name '.railcp-tmp-p*' | head -n 1)
	[ -n "$(find "$1" -name '.railcp-tmp-r*')" ] && [ -n "$_data" ] && flock -n -s "$_data" true
}

# own DIR UID: the data file (p), or the record and log (rl), made UID's.
own() { find "$1" -name ".railcp-tmp-[$2]*" -exec chown "$3" {} +; }

# hostile LABEL DIR ARGS...: as root, zbig's data file, then its record and
# log, made nobody's: each time the dry run lists zbig whole and leaves the
# files where they were, still nobody's; then they are made ours again.
hostile() {
	_label=$1 _dir=$2
	shift 2
	if [ "$(id -u)" -ne 0 ]; then
		echo "note: $_label: the files of another user are not tried: only root can chown them"
		return
	fi
	for _which in p rl; do
		own "$_dir" "$_which" 65534
		_before=$(partial_state "$_dir")
		WHOLE=1 dry "$_label, another user's $_which" hostile.json "$@" >/dev/null
		[ "$(partial_state "$_dir")" = "$_before" ] ||
			fail "$_label: the dry run changed another user's partial files: $(partial_state "$_dir")"
		[ -n "$(find "$_dir" -name ".railcp-tmp-[$_which]*" -uid 65534)" ] ||
			fail "$_label: another user's partial files are gone"
		own "$_dir" "$_which" "$(id -u)"
	done
}

# A push of the tree, killed once zbig is landing; the server's session
# must end before a dry run looks (it holds the data file's lock till then).
cut root/incoming push 0.5 "$RAILCP" $tcp -q -r --partial data 127.0.0.1:incoming
wait_for_line "session 1 from 127.0.0.1 failed" 30 serve.log ||
	fail "the server did not end the cut push's session: $(cat serve.log)"
# The session writes its record and lets the lock go after its line.
wait_until 20 settled root || fail "push: the cut left no partial record, or holds its lock"
before=$(partial_state root)
dry push push-dry.json -r data 127.0.0.1:incoming >/dev/null
[ "$(partial_state root)" = "$before" ] || fail "push: the dry run changed the partial files"
capture "$RAILCP" $tcp --partial -n -r data 127.0.0.1:incoming
printf '%s\n' "$out" | grep -Eq '^data/zbig: [0-9]+ of 131073 chunks to send, [0-9]+ kept$' &&
	printf '%s\n' "$out" | grep -Eq '^railcp: dry run: [0-9]+ of [0-9]+ chunks would be sent, the rest kept from a cut copy \(--partial\)$' ||
	fail "push: the dry run's lines: $out"
hostile push root -r data 127.0.0.1:incoming
dry "push, again" push-dry2.json -r data 127.0.0.1:incoming >/dev/null
cmp -s push-dry.json push-dry2.json || fail "push: the dry run counts otherwise after the hostile ones"
resumed push push-dry.json -r data 127.0.0.1:incoming
diff -r data root/incoming/data || fail "push: the resumed tree differs"
[ -z "$(find root -name '.railcp-tmp-*')" ] || fail "push: temporaries left"

# A pull of it, killed the same way; its client is the receiver.
cut back pull 1.2 "$RAILCP" $tcp -q -r --partial 127.0.0.1:incoming/data back
settled back || fail "pull: the cut left no partial record, or holds its lock"
before=$(partial_state back)
dry pull pull-dry.json -r 127.0.0.1:incoming/data back >/dev/null
[ "$(partial_state back)" = "$before" ] || fail "pull: the dry run changed the partial files"
hostile pull back -r 127.0.0.1:incoming/data back
resumed pull pull-dry.json -r 127.0.0.1:incoming/data back
diff -r data back/data || fail "pull: the resumed tree differs"
[ -z "$(find back -name '.railcp-tmp-*')" ] || fail "pull: temporaries left"
stop_server
