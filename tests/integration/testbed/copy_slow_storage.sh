# Copies to and from slow storage: ext4 on a block device that answers
# every I/O after 2 ms (tools/testbed/slow-storage: null_blk, or dm-delay over
# a RAM disk), next to tmpfs. A tree with a 5 MiB file (ending mid-chunk),
# small, one-byte and empty files and an empty directory is pushed and
# pulled from slow storage to tmpfs and from tmpfs to slow storage, each
# with --no-direct and with --direct. The page cache is dropped before every copy and
# before the comparison, so reads come from the device, and what was written is
# read back from it. Every copy equals its source and no temporary file is
# left. Needs root (a block device and a mount), as the testbed gives.
. tests/integration/lib.sh
need_rdma
if [ "$(id -u)" -ne 0 ]; then
	[ -z "${TESTBED:-}" ] || fail "not root inside the testbed"
	skip "needs root to make a slow block device; run this test inside tools/testbed/boot"
fi
top=$(pwd)
dir=$(mktemp -d)
slow=$dir/slow
pid_tmp="" pid_slow=""
cleanup() {
	for p in $pid_tmp $pid_slow; do kill "$p" 2>/dev/null && wait "$p"; done
	cd / && "$top/tools/testbed/slow-storage" down "$slow" && rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir" || fail "cannot enter $dir"

"$top/tools/testbed/slow-storage" up --latency-ms 2 --size-mib 96 "$slow" >slow.env || fail "cannot make slow storage"
val() { sed -n "s/^$1=//p" slow.env; }
echo "slow storage: $(val device) ($(val kind)), 2 ms per I/O asked, measured $(val read_ms_per_io) ms" \
	"per read and $(val write_ms_per_io) ms per write (direct 4 KiB)"
[ "$(stat -f -c %T "$slow")" = "ext2/ext3" ] || fail "$slow is not the ext4 mount: $(stat -f -c %T "$slow")"

# The source tree, on tmpfs (troot, served on port 7471) and on the slow
# file system (slow/root, served on port 7472).
mkdir -p troot/data/d1/d2 troot/data/emptydir "$slow/root"
/usr/bin/python3 -c '
import os
for p, n in (("big.bin", 5 * 1048576 + 12345), ("one", 1), ("d1/a.bin", 1048576 + 1),
             ("d1/d2/b.bin", 300000), ("d1/d2/c.bin", 65536)):
    with open("troot/data/" + p, "wb") as f:
        f.write(os.urandom(n))'
: >troot/data/empty
cp -a troot/data "$slow/root/data" || fail "cannot copy the tree to slow storage"
fresh() {
	sync && echo 3 >/proc/sys/vm/drop_caches || fail "cannot drop the page cache"
}
fresh

# same COPY...: fail unless each COPY has the directories and files of the
# source tree, byte for byte, read back after the page cache is dropped.
cat >same.py <<'PY'
import os, sys

def tree(top):
    dirs, files = set(), set()
    for d, ds, fs in os.walk(top):
        rel = os.path.relpath(d, top)
        dirs.add(rel)
        files.update(os.path.normpath(os.path.join(rel, f)) for f in fs)
    return dirs, files

def same(src, copy):
    (sd, sf), (cd, cf) = tree(src), tree(copy)
    if sd != cd:
        return "directories only in the source %r, only in the copy %r" % (sorted(sd - cd), sorted(cd - sd))
    if sf != cf:
        return "files only in the source %r, only in the copy %r" % (sorted(sf - cf), sorted(cf - sf))
    for rel in sorted(sf):
        with open(os.path.join(src, rel), "rb") as a, open(os.path.join(copy, rel), "rb") as b:
            while True:
                x, y = a.read(1 << 20), b.read(1 << 20)
                if x != y:
                    return "%s differs from its source" % rel
                if not x:
                    break
    return None

src, copies = sys.argv[1], sys.argv[2:]
assert sorted(tree(src)[1]) == ["big.bin", "d1/a.bin", "d1/d2/b.bin", "d1/d2/c.bin", "empty", "one"], \
    "the source tree is not the one planned"
os.sync()
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("3")
bad = [(c, same(src, c)) for c in copies]
for c, why in bad:
    if why:
        print("%s: %s" % (c, why))
sys.exit(1 if any(why for _, why in bad) else 0)
PY

# Both servers start at once (each takes a while in the guest).
"$RAILCP" serve --root "$dir/troot" --port 7471 2>serve-tmp.log &
pid_tmp=$!
"$RAILCP" serve --root "$slow/root" --port 7472 2>serve-slow.log &
pid_slow=$!
for log in serve-tmp.log serve-slow.log; do
	wait_for_line "serving on " 20 $log || fail "railcp serve is not ready after 20 s: $(cat $log)"
done

# copy WHAT ARGS...: one quiet railcp copy that must succeed in silence.
copy() {
	what=$1
	shift
	fresh
	start=$(date +%s.%N)
	capture "$RAILCP" -q -r --chunk 256K "$@"
	[ "$rc" -eq 0 ] || fail "$what: railcp $* exited $rc: $err"
	[ -z "$out$err" ] || fail "$what: railcp $* printed: $out $err"
	echo "$what: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
}

for mode in buffered direct; do
	opt=--no-direct # the default: the same for files under 8 MiB
	[ $mode = direct ] && opt=--direct
	# data/ is its contents: each copy is the tree itself, as same.py expects
	copy "push tmpfs -> slow, $mode" $opt --port 7472 troot/data/ 127.0.0.1:push-$mode
	copy "push slow -> tmpfs, $mode" $opt --port 7471 "$slow/root/data/" 127.0.0.1:push-$mode
	copy "pull slow -> tmpfs, $mode" $opt --port 7472 127.0.0.1:data/ "pull-$mode"
	copy "pull tmpfs -> slow, $mode" $opt --port 7471 127.0.0.1:data/ "$slow/pull-$mode"
	copies="${copies:-} $slow/root/push-$mode troot/push-$mode pull-$mode $slow/pull-$mode"
done
# One comparison for all (python starts slowly in the guest), once the page cache is dropped.
/usr/bin/python3 same.py troot/data $copies || fail "a copy differs from its source (above)"

expect_no_temps "$dir"
kill "$pid_slow" && wait "$pid_slow" || fail "railcp serve (slow root) exited with status $? on SIGTERM"
pid_slow=""
kill "$pid_tmp" && wait "$pid_tmp" || fail "railcp serve (tmpfs root) exited with status $? on SIGTERM"
pid_tmp=""
cd / && "$top/tools/testbed/slow-storage" down "$slow" || fail "cannot unmount and remove the slow storage"
