# A tree pushed from host a to a server on host b, and pulled back: regular
# files (one of 4 MiB, one empty), a subdirectory, an empty directory and a
# symlink arrive as they left, with no temporary file left on either side.
. tests/integration/lib.sh
need_two_hosts
port=7512
dir=$(shared_dir copy_tree)
cd "$dir" || fail "cannot enter $dir"
mkdir -p src/sub/deeper src/emptydir root
echo "hello from a" >src/a.txt
: >src/empty
head -c $((4 << 20)) /dev/urandom >src/big
head -c 100000 /dev/urandom >src/sub/b.bin
echo deeper >src/sub/deeper/c.txt
ln -s a.txt src/link

# Everything but the regular files, which tree_sums covers.
check_tree() {
	[ -d "$1/emptydir" ] && [ -z "$(ls -A "$1/emptydir")" ] || fail "$1: the empty directory did not arrive"
	[ -L "$1/link" ] && [ "$(readlink "$1/link")" = a.txt ] || fail "$1: the symlink did not arrive: $(ls -la "$1")"
	[ -f "$1/empty" ] && [ ! -s "$1/empty" ] || fail "$1: the empty file did not arrive"
	[ "$(tree_sums src)" = "$(tree_sums "$1")" ] || fail "$1 differs from src: $(tree_sums "$1")"
}

start_server_on b srv --port $port --root "$dir/root"
capture tb on a "$RAILCP" -q -r --port $port src/ b:tree
[ "$rc" -eq 0 ] || fail "push of the tree from a to b exited $rc: $err"
check_tree root/tree
capture tb on a "$RAILCP" -q -r --port $port b:tree/ back
[ "$rc" -eq 0 ] || fail "pull of the tree from b to a exited $rc: $err"
check_tree back
expect_no_temps root back
echo "tree of $(find src | wc -l) entries pushed to b and pulled back intact"
stop_server_on b srv
cd / && rm -rf "$dir"
