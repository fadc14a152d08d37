# --dry-run, --exclude/--include/--exclude-from and --files-from over TCP
# on 127.0.0.1, no guest: dry runs of pushes and pulls (with -u: what
# differs and why) write nothing on either side (the listings of both
# trees, times included, are the same before and after); pushes and pulls
# through filters carry exactly what the rules keep (a pull's filter
# applied by the server's walk); hostile patterns and lists are refused in
# one line with exit status 2, before anything is sent.
. tests/integration/lib.sh
server_tmp
tcp="--transport tcp --rails lo --port $port"
cd "$tmp" || fail "no $tmp"

mkdir -p root src/a/b src/build src/c/build
echo one >src/a/b/f.txt
echo two >src/a/g.o
echo three >src/build/out
echo four >src/c/keep.txt
echo five >src/c/build/x.txt
echo six >src/top.txt
ln -s top.txt src/link

: >serve.log # start_server greps it at once
start_server serve.log --transport tcp --rails lo --port "$port" --root "$tmp/root"

# Every name, type, size and time (to the nanosecond) beneath a directory.
listing() { (cd "$1" && find . -printf '%p %y %s %T@ %l\n' | sort); }
# $1: the paths, one per line, a copy or a dry run listed (the trees as they landed).
paths_of() { (cd "$1" && find . -mindepth 1 | sed 's|^\./||' | sort); }

# A dry run of a push into an empty root: every entry listed, nothing written.
before=$(listing root)
# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp -r -p -n src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push --dry-run: exit $rc: $err"
[ "$(listing root)" = "$before" ] || fail "push --dry-run wrote beneath the root: $(listing root)"
[ -z "$(ls -A root)" ] || fail "push --dry-run left something in the root"
want=$(printf 'src/\nsrc/a/\nsrc/a/b/\nsrc/a/b/f.txt\nsrc/a/g.o\nsrc/build/\nsrc/build/out\nsrc/c/\nsrc/c/build/\nsrc/c/build/x.txt\nsrc/c/keep.txt\nsrc/link\nsrc/top.txt')
[ "$(printf '%s\n' "$out" | grep -v '^railcp: ')" = "$want" ] || fail "push --dry-run listed: $out"
case "$out" in *"railcp: dry run: 7 files and symlinks"*"6 directories would go to 127.0.0.1; nothing was written"*) ;;
*) fail "push --dry-run's last line: $out" ;; esac
grep -q 'dry run of a push of 6 files into ".", nothing written' serve.log || fail "the server's log: $(cat serve.log)"
# Into a destination that does not exist yet, the names a real push would
# give (rsync's rule: new/src, never src renamed to new), nothing made.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -n src 127.0.0.1:new
[ "$rc" -eq 0 ] || fail "push --dry-run to a new destination: exit $rc: $err"
[ "$(printf '%s\n' "$out" | grep -v '^railcp: ')" = "$want" ] || fail "push --dry-run to a new destination listed: $out"
[ -z "$(ls -A root)" ] || fail "push --dry-run to a new destination made something in the root"

# A push through rules: *.o out, build/ out (directories only), /c/build in again
# (first match wins), and --exclude-from with an include and a comment.
printf '# a comment\n+ /c/build/\n- build/\n' >rules
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p --exclude '*.o' --exclude-from rules src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push with filters: $err"
[ "$(paths_of root/src)" = "$(printf 'a\na/b\na/b/f.txt\nc\nc/build\nc/build/x.txt\nc/keep.txt\nlink\ntop.txt')" ] ||
	fail "push with filters landed: $(paths_of root/src)"

# -u --dry-run: what differs, and why; nothing written on either side.
echo more >>src/top.txt
touch -d '2001-01-01' src/c/keep.txt
before=$(listing root) before_src=$(listing src)
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p -u -n --exclude '*.o' --exclude-from rules src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -u --dry-run: $err"
[ "$(listing root)" = "$before" ] && [ "$(listing src)" = "$before_src" ] ||
	fail "push -u --dry-run wrote something"
[ "$(printf '%s\n' "$out" | grep -v '^railcp: ')" = "$(printf 'src/c/keep.txt: modification time differs\nsrc/top.txt: size differs')" ] ||
	fail "push -u --dry-run listed: $out"

# A pull through a filter the server applies, dry first (--json: one object), then for real.
before_root=$(listing root)
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -n --json --exclude '*.txt' --include 'build/' 127.0.0.1:src/ back
[ "$rc" -eq 0 ] || fail "pull --dry-run: $err"
[ ! -e back ] || fail "pull --dry-run made the destination"
[ "$(listing root)" = "$before_root" ] || fail "pull --dry-run changed the server's root"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["dry_run"] and j["direction"] == "pull", j
assert [e["path"] for e in j["entries"]] == ["a", "a/b", "c", "c/build", "link"], j
assert j["files"] == 1 and j["directories"] == 4, j
' || fail "pull --dry-run --json: $out"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --exclude '*.txt' 127.0.0.1:src/ back
[ "$rc" -eq 0 ] || fail "pull with a filter: $err"
[ "$(paths_of back)" = "$(printf 'a\na/b\nc\nc/build\nlink')" ] || fail "pull with a filter landed: $(paths_of back)"

# --files-from (NUL-separated with --from0), a push and a pull.
printf 'top.txt\n./c/build/x.txt\n' >list
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --files-from list 127.0.0.1:src/ back2
[ "$rc" -eq 0 ] || fail "pull --files-from: $err"
[ "$(paths_of back2)" = "$(printf 'c\nc/build\nc/build/x.txt\ntop.txt')" ] || fail "pull --files-from landed: $(paths_of back2)"
printf 'c/keep.txt\0a/\0' >list0
rm -rf root/src
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --files-from list0 --from0 src 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push --files-from: $err"
[ "$(paths_of root/src)" = "$(printf 'a\na/b\na/b/f.txt\na/g.o\nc\nc/keep.txt')" ] ||
	fail "push --files-from landed: $(paths_of root/src)"
printf 'nothere\n' >missing
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --files-from missing src 127.0.0.1:
expect_one_line_error "--files-from naming what is not there"
case "$err" in *'"nothere", which is not in src'*) ;; *) fail "a missing listed path: $err" ;; esac

# Hostile patterns and lists: one line, exit 2, nothing sent.
before=$(listing root)
printf 'a\377b\n' >bad_utf8
head -c 5000 /dev/zero | tr '\0' a >long_line
printf 'a\0b\n' >nul_line
for args in "--exclude /" "--exclude-from bad_utf8" "--files-from long_line" \
	"--files-from nul_line" "--exclude-from nowhere" "--files-from list --files-from list"; do
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp -r $args src 127.0.0.1:
	expect_one_line_error "railcp $args"
	[ "$rc" -eq 2 ] || fail "railcp $args: exit $rc, not 2: $err"
done
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --files-from list src src 127.0.0.1:
[ "$rc" -eq 2 ] || fail "--files-from with two sources: exit $rc: $err"
yes x | head -n 1025 >many
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r --exclude-from many src 127.0.0.1:
expect_one_line_error "1,025 patterns"
[ "$rc" -eq 2 ] || fail "1,025 patterns: exit $rc"
[ "$(listing root)" = "$before" ] || fail "a refused command line wrote beneath the root"
stop_server
