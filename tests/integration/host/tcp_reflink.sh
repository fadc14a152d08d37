# -c's clones (io/checksum.c clone_chunk: FICLONERANGE) over TCP on
# 127.0.0.1, on an XFS and a btrfs image, each a sparse file in the test's
# tmp on a loop device: a 32 MiB file pushed whole, 3 of its 128 chunks
# changed at the source, pushed again with -c. A hard link kept to the old
# destination file (root's own: old_open takes it) shows by FIEMAP that
# each of the 125 chunks kept lies on the old file's blocks, flagged
# shared, and that the 3 changed ones do not; the new file is the source's
# bytes and only the 3 chunks travelled. The same for a pull with -c, whose
# receiver is the client. Needs root, loop devices, the file systems in the
# kernel and their mkfs (xfsprogs, btrfs-progs: tools/setup); it skips where
# no loop device can be attached (a container may have /dev/loop-control
# and no loop nodes), and where one file system cannot run, the other still
# does and the test then skips, naming what was missing and where it passed.
# Every mount and loop device is undone on every way out, a second signal
# meanwhile ignored.
. tests/integration/lib.sh

loop_setup
mkdir src
truncate -s 1M probe.img || fail "cannot make $tmp/probe.img"
dev=$(losetup -f --show probe.img 2>"probe.err") ||
	skip "cannot attach a loop device here: $(cat probe.err)"
losetup -d "$dev" || fail "cannot detach $dev"
dev=""
tcp="--transport tcp --rails lo --port $port --chunk 256K"
chunk=262144 nchunks=128
changed="3 64 127"

# Flips every bit of the byte at offset $2 of file $1.
flip_byte() {
	python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); off = int(sys.argv[2]); b = os.pread(fd, 1, off); os.pwrite(fd, bytes([b[0] ^ 0xff]), off); os.close(fd)" "$1" "$2"
}

# $1: a key of the --json report in $out.
json_of() { printf '%s\n' "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

# shares NEW OLD: by FIEMAP (synced first), every chunk of NEW but those of
# $changed lies on the same blocks as in OLD, each of its extents flagged
# shared; each chunk of $changed lies on none of OLD's blocks of it.
shares() {
	python3 - "$1" "$2" "$chunk" "$changed" <<'PY'
import fcntl, os, struct, sys

FS_IOC_FIEMAP, SYNC, LAST, SHARED = 0xC020660B, 1, 0x1, 0x2000

def extents(path):
    """(logical, physical, length, flags) of each extent of path."""
    out, start = [], 0
    with open(path, "rb") as f:
        while True:
            buf = bytearray(struct.pack("=QQIIII", start, (1 << 64) - 1 - start, SYNC, 0, 256, 0) + bytes(56 * 256))
            fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf)
            n = struct.unpack_from("=I", buf, 20)[0]
            for i in range(n):
                lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQI", buf, 32 + 56 * i)
                out.append((lo, ph, ln, fl))
            if n == 0 or out[-1][3] & LAST:
                return out
            start = out[-1][0] + out[-1][2]

def blocks(ext, off, n):
    """The physical ranges holding [off, off + n), and whether all are flagged shared."""
    got, shared = [], True
    for lo, ph, ln, fl in ext:
        a, b = max(lo, off), min(lo + ln, off + n)
        if a < b:
            got.append((ph + a - lo, b - a))
            shared &= bool(fl & SHARED)
    return got, shared

new, old = extents(sys.argv[1]), extents(sys.argv[2])
chunk, changed = int(sys.argv[3]), {int(k) for k in sys.argv[4].split()}
size = os.path.getsize(sys.argv[1])
bad = []
for k in range(size // chunk):
    (nb, shared), (ob, _) = blocks(new, k * chunk, chunk), blocks(old, k * chunk, chunk)
    if k in changed:
        if any(a < c + m and c < a + l for a, l in nb for c, m in ob):
            bad.append("chunk %d (changed) shares the old file's blocks" % k)
    elif nb != ob or not nb or not shared:
        bad.append("chunk %d is not the old file's blocks, shared: %s vs %s" % (k, nb, ob))
if bad:
    sys.exit("%d of %d chunks wrong; %s" % (len(bad), size // chunk, "; ".join(bad[:4])))
print("%d chunks on the old file's blocks, %d on new ones" % (size // chunk - len(changed), len(changed)))
PY
}

# change FILE: flips a byte in each chunk of $changed, at a different place in each.
change() {
	for k in $changed; do flip_byte "$1" $((k * chunk + k * 997 % chunk)) || fail "cannot change $1"; done
}

# fs_up FS MIB MKFS...: a sparse image of MIB MiB made FS by MKFS..., on a
# loop device, mounted on $tmp/FS ($mnt, $dev).
fs_up() {
	_fs=$1 _mib=$2
	shift 2
	truncate -s "${_mib}M" "$_fs.img" || fail "cannot make $_fs.img"
	"$@" "$_fs.img" >"$_fs.mkfs.log" 2>&1 || fail "$* failed: $(tail -n 3 "$_fs.mkfs.log")"
	dev=$(losetup -f --show "$_fs.img") || fail "no free loop device for $_fs.img"
	mkdir -p "$_fs" && mount -t "$_fs" "$dev" "$_fs" || fail "cannot mount $_fs on $dev"
	mnt=$tmp/$_fs
}

# on FS: the push and the pull with -c on a fresh FS image, then undone.
on() {
	mkdir -p "$1/root" "$1/back"
	: >"$1.serve.log"
	start_server "$1.serve.log" --transport tcp --rails lo --port "$port" --root "$mnt/root"
	head -c $((nchunks * chunk)) /dev/urandom >src/big
	# shellcheck disable=SC2086 # $tcp is words
	capture "$RAILCP" $tcp src/big 127.0.0.1:
	[ "$rc" -eq 0 ] || fail "$1: the first push: $err"
	ln "$1/root/big" "$1/old" || fail "$1: cannot link the old file"
	change src/big
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp -c --json src/big 127.0.0.1:
	[ "$rc" -eq 0 ] || fail "$1: push -c: $err"
	[ "$(json_of chunks_sent)" -eq 3 ] && [ "$(json_of bytes)" -eq $((3 * chunk)) ] ||
		fail "$1: push -c sent $(json_of chunks_sent) chunks, $(json_of bytes) bytes, not the 3 changed"
	cmp src/big "$1/root/big" || fail "$1: push -c: root/big differs from src/big"
	why=$(shares "$1/root/big" "$1/old" 2>&1) || fail "$1: push -c did not clone the kept chunks: $why"
	echo "$1: push -c: $why"

	# A pull: the old copy at the client (on the file system too), the
	# server's file changed; the client builds the new one.
	rm "$1/old"
	cp src/big "$1/back/big" && ln "$1/back/big" "$1/old" || fail "$1: cannot set up the pull"
	change "$1/root/big"
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp -c --json 127.0.0.1:big "$1/back/big"
	[ "$rc" -eq 0 ] || fail "$1: pull -c: $err"
	[ "$(json_of chunks_sent)" -eq 3 ] && [ "$(json_of bytes)" -eq $((3 * chunk)) ] ||
		fail "$1: pull -c sent $(json_of chunks_sent) chunks, $(json_of bytes) bytes, not the 3 changed"
	cmp "$1/root/big" "$1/back/big" || fail "$1: pull -c: back/big differs from the server's"
	why=$(shares "$1/back/big" "$1/old" 2>&1) || fail "$1: pull -c did not clone the kept chunks: $why"
	echo "$1: pull -c: $why"
	expect_no_temps "$1/root" "$1/back"
	stop_server
	server_pid=""
}

# What keeps file system $1 (made by $2) from running here, if anything.
cannot() {
	grep -qw "$1" /proc/filesystems || modprobe "$1" 2>/dev/null
	grep -qw "$1" /proc/filesystems || { echo "no $1 in this kernel"; return; }
	command -v "$2" >/dev/null || echo "no $2 (run tools/setup)"
}

ran="" missing=""
for fs in xfs btrfs; do
	case $fs in
	xfs) mkfs="mkfs.xfs -q -m reflink=1" mib=320 ;;
	btrfs) mkfs="mkfs.btrfs -q" mib=256 ;;
	esac
	why=$(cannot $fs "${mkfs%% *}")
	if [ -n "$why" ]; then
		missing="$missing; $why"
		continue
	fi
	# shellcheck disable=SC2086 # $mkfs is words
	fs_up $fs $mib $mkfs
	on $fs
	fs_down
	ran="$ran $fs"
done
[ -z "$missing" ] || skip "${missing#; }${ran:+ (passed on:$ran)}"
echo "PASS"
