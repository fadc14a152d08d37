# --delete over TCP on 127.0.0.1, no guest: a push and a pull remove what
# the copied directories hold at the destination and the source does not
# (files, directories with their contents, a symlink to a directory outside
# the root removed as a link, its target untouched); entries the filter
# excludes stay, and so does everything beside the copied directory; a dry
# run names what would go ("deleting" lines, --json) and removes nothing;
# a copy that fails, or is cut mid-way, removes nothing; what the server's
# user may not remove ends the copy in one line (exit 1), the rest removed;
# refused command lines exit 2.
. tests/integration/lib.sh
server_tmp
tcp="--transport tcp --rails lo --port $port"
cd "$tmp" || fail "no $tmp"

mkdir -p root src/a/b src/c outside
echo one >src/a/b/f.txt
echo two >src/c/g.txt
echo top >src/top.txt
echo precious >outside/precious

: >serve.log # start_server greps it at once
start_server serve.log --transport tcp --rails lo --port "$port" --root "$tmp/root"

# $1: every path beneath a directory, sorted.
paths_of() { (cd "$1" && find . -mindepth 1 | sed 's|^\./||' | sort); }
# The extras a destination gains between copies: files, a directory tree,
# a symlink to a directory outside, a file the filter excludes, a neighbour.
extras() {
	mkdir -p "$1/src/old/deeper" "$1/src/a/b/gone"
	echo x >"$1/src/old/deeper/x"
	echo y >"$1/src/a/stale.txt"
	echo z >"$1/src/keep.log"
	ln -s "$tmp/outside" "$1/src/a/escape"
	echo n >"$1/neighbour"
}
want_after=$(printf 'neighbour\nsrc\nsrc/a\nsrc/a/b\nsrc/a/b/f.txt\nsrc/c\nsrc/c/g.txt\nsrc/keep.log\nsrc/top.txt')

# The first push; then the extras.
# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp -r src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "first push: $err"
extras root
before=$(paths_of root)

# A dry run: each extra named, deepest first, nothing removed.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -n --delete --exclude '*.log' src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push --delete --dry-run: exit $rc: $err"
[ "$(paths_of root)" = "$before" ] || fail "push --delete --dry-run removed something: $(paths_of root)"
got=$(printf '%s\n' "$out" | grep '^deleting ' | sort)
[ "$got" = "$(printf 'deleting src/a/b/gone/\ndeleting src/a/escape\ndeleting src/a/stale.txt\ndeleting src/old/\ndeleting src/old/deeper/\ndeleting src/old/deeper/x')" ] ||
	fail "push --delete --dry-run named: $out"
case "$out" in *"railcp: dry run: 6 entries would be deleted (--delete); nothing was removed"*) ;;
*) fail "push --delete --dry-run's line: $out" ;; esac

# A push that fails (its destination cannot be made: a file is in the way) removes nothing.
echo in-the-way >root/blocked
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --delete src 127.0.0.1:blocked/deeper
expect_one_line_error "a push --delete that fails"
[ "$(paths_of root | grep -v '^blocked$')" = "$before" ] || fail "a failed push --delete removed something"
rm root/blocked

# A push cut mid-way (Ctrl-C: the copy is cancelled) removes nothing either.
mkdir -p big/src
yes "$(head -c 3000 /dev/urandom | base64 -w0)" | head -c $((512 << 20)) >big/src/big
# shellcheck disable=SC2086
"$RAILCP" $tcp --chunk 4K --qps-per-rail 1 -q -r --delete big/src 127.0.0.1: 2>cut.err &
cut_pid=$!
arrived() { [ -n "$(find root/src -name '.railcp-tmp-*' -size +1M 2>/dev/null)" ]; }
wait_until 20 arrived || fail "nothing of the push to cut arrived in 20 s: $(cat cut.err)"
kill -INT "$cut_pid" || fail "the push to cut ended before the cut"
wait "$cut_pid" && fail "the cut push succeeded"
wait_for_no_temp root 20 || fail "the server kept the cut push's temporaries"
[ "$(paths_of root)" = "$before" ] || fail "a cut push --delete removed something: $(paths_of root)"
rm -rf big

# The push for real: the extras go, the excluded file, the neighbour and the link's target stay.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -v --json --delete --exclude '*.log' src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push --delete: exit $rc: $err"
[ "$(paths_of root)" = "$want_after" ] || fail "push --delete left: $(paths_of root)"
[ "$(cat outside/precious)" = precious ] || fail "push --delete reached through the symlink"
grep -q 'push of 3 files into "." done, 0 MiB over [0-9]* stripes verified, 6 entries removed (--delete);' serve.log ||
	fail "the server's log of the push --delete: $(cat serve.log)"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["deleted"] == 6, j
assert sorted(j["deleting"]) == ["src/a/b/gone/", "src/a/escape", "src/a/stale.txt", "src/old/", "src/old/deeper/", "src/old/deeper/x"], j
' || fail "push --delete --json: $out"

# A pull: the same extras in a local copy; contents ("src/") cover the destination itself.
mkdir back
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r 127.0.0.1:src back
[ "$rc" -eq 0 ] || fail "first pull: $err"
extras back
rm root/src/keep.log
before=$(paths_of back)
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -n --delete --exclude '*.log' 127.0.0.1:src back
[ "$rc" -eq 0 ] || fail "pull --delete --dry-run: $err"
[ "$(paths_of back)" = "$before" ] || fail "pull --delete --dry-run removed something"
[ "$(printf '%s\n' "$out" | grep -c '^deleting ')" -eq 6 ] || fail "pull --delete --dry-run named: $out"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --delete --exclude '*.log' 127.0.0.1:src back
[ "$rc" -eq 0 ] || fail "pull --delete: $err"
[ "$(paths_of back)" = "$want_after" ] || fail "pull --delete left: $(paths_of back)"
[ "$(cat outside/precious)" = precious ] || fail "pull --delete reached through the symlink"
case "$out" in *"railcp: deleted 6 entries the sources do not hold (--delete)"*) ;;
*) fail "pull --delete's summary: $out" ;; esac
# Contents: what the destination holds beside them goes too, but for the
# excluded (and the directory holding one, as rsync leaves it).
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --delete --exclude '*.log' 127.0.0.1:src/ back
[ "$rc" -eq 0 ] || fail "pull --delete of contents: $err"
[ "$(paths_of back)" = "$(printf 'a\na/b\na/b/f.txt\nc\nc/g.txt\nsrc\nsrc/keep.log\ntop.txt')" ] ||
	fail "pull --delete of contents left: $(paths_of back)"

# What the server's user may not remove (a directory of another user's, or
# read-only): the copy ends in one line, exit 1, and the rest is removed.
# Root removes anything: then the server and its client run as nobody.
# Its files live where nobody can reach them: $TMPDIR's parent may be
# private (tools/dev/check-odd-machine's is 0700), so as root they go in a
# directory of their own under /dev/shm, with a HOME of their own (no key).
as_user="" nb=$tmp
if [ "$(id -u)" -eq 0 ]; then
	as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
	nb=$(mktemp -d /dev/shm/railcp-delete-XXXXXX) || fail "no directory under /dev/shm"
fi
port2=$(free_port)
cd "$nb" || fail "cannot enter $nb"
mkdir -p root2 src2/d home2
echo a >src2/d/a
chmod -R a+rwX "$nb" && chmod a+rx "$nb"
: >serve2.log
printf '#!/bin/sh\nexec env HOME=%s %s %s "$@"\n' "$nb/home2" "$as_user" "$RAILCP" >railcp_as
chmod a+rx railcp_as
server1_pid=$server_pid
trap 'kill "$server1_pid" "$server_pid" 2>/dev/null; rm -rf "$tmp"; [ "$nb" = "$tmp" ] || rm -rf "$nb"' EXIT
RAILCP=$nb/railcp_as start_server serve2.log --transport tcp --rails lo --port "$port2" --root "$nb/root2"
capture ./railcp_as --transport tcp --rails lo --port "$port2" -r src2/d 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push as the server's user: $err"
mkdir root2/d/theirs
echo t >root2/d/theirs/t
echo e >root2/d/extra
chmod 0755 root2/d/theirs
[ -n "$as_user" ] || chmod 0555 root2/d/theirs
capture ./railcp_as --transport tcp --rails lo --port "$port2" -r --delete src2/d 127.0.0.1:
expect_one_line_error "a push --delete that cannot remove everything"
[ "$rc" -eq 1 ] || fail "a push --delete that cannot remove everything: exit $rc"
case "$err" in *'could not remove "d/theirs/t" beneath the destination: Permission denied'*) ;;
*) fail "a push --delete that cannot remove everything said: $err" ;; esac
[ -e root2/d/theirs/t ] && [ ! -e root2/d/extra ] || fail "what could go did not: $(paths_of root2)"
stop_server
server_pid=$server1_pid
cd "$tmp" || fail "cannot enter $tmp"

# Refused before anything is sent: one line, exit 2.
before=$(paths_of root)
printf 'top.txt\n' >list
for args in "--delete src" "-r --delete --files-from list src" "-r --delete src/ src/a"; do
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp $args 127.0.0.1:
	expect_one_line_error "railcp $args"
	[ "$rc" -eq 2 ] || fail "railcp $args: exit $rc, not 2: $err"
done
[ "$(paths_of root)" = "$before" ] || fail "a refused command line changed the root"
stop_server
