# --direct's default where O_DIRECT needs more than 4 KiB alignment: an XFS
# image with 8 KiB blocks and 8 KiB sectors on a loop device of 8 KiB
# logical blocks (losetup -b 8192), in the test's tmp, as the server's root
# and as a source, over TCP on 127.0.0.1. A default push of a 9 MiB file
# whose first extent is 4 KiB then a hole (from the test's tmp), and of a
# 9 MiB file from the XFS image with --chunk 4K (each chunk offset only
# 4 KiB aligned), land identical: a chunk the device cannot take direct goes
# through the page cache (statx's STATX_DIOALIGN, and a refused direct I/O
# redone buffered), never failing the copy; a pull back of both too. Needs
# root, a loop device, XFS with blocks larger than a page in the kernel
# (Linux 6.12) and mkfs.xfs (xfsprogs): skips, saying which, where one is
# missing. Every mount and loop device is undone on every way out.
. tests/integration/lib.sh
command -v mkfs.xfs >/dev/null || skip "no mkfs.xfs (xfsprogs)"

loop_setup
truncate -s 512M xfs.img || fail "cannot make $tmp/xfs.img"
mkfs.xfs -q -f -b size=8192 -s size=8192 xfs.img >mkfs.log 2>&1 ||
	fail "mkfs.xfs failed: $(tail -n 3 mkfs.log)"
dev=$(losetup -f --show -b 8192 xfs.img 2>probe.err) || {
	dev=""
	skip "cannot attach a loop device of 8 KiB blocks here: $(cat probe.err)"
}
mkdir xfs
mount -t xfs "$dev" xfs 2>mount.err || {
	skip "this kernel ($(uname -r)) cannot mount XFS with 8 KiB blocks: $(cat mount.err)"
}
mnt=$tmp/xfs
mkdir -p "$mnt/root" "$mnt/src" src back
# holey: 4 KiB of data, a hole, then data to 9 MiB (its first extent 4 KiB, from ext4 or tmpfs)
head -c 4096 /dev/urandom >src/holey
head -c $((1048576 + 5)) /dev/urandom | dd of=src/holey bs=1M seek=8 conv=notrunc 2>/dev/null ||
	fail "cannot write src/holey"
head -c $((9 * 1048576 + 4096)) /dev/urandom >"$mnt/src/chunky"
sync
tcp="--transport tcp --rails lo --port $port"

start_server serve.log --transport tcp --rails lo --port "$port" --root "$mnt/root"
# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp src/holey 127.0.0.1:
[ "$rc" -eq 0 ] || fail "a default push of a holey 9 MiB file to 8 KiB sectors failed: $err"
cmp src/holey "$mnt/root/holey" || fail "holey differs from its source"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --chunk 4K "$mnt/src/chunky" 127.0.0.1:
[ "$rc" -eq 0 ] || fail "a default push with --chunk 4K from and to 8 KiB sectors failed: $err"
cmp "$mnt/src/chunky" "$mnt/root/chunky" || fail "chunky differs from its source"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --chunk 4K 127.0.0.1:chunky 127.0.0.1:holey back
[ "$rc" -eq 0 ] || fail "a default pull with --chunk 4K from 8 KiB sectors failed: $err"
cmp "$mnt/src/chunky" back/chunky || fail "the pulled chunky differs"
cmp src/holey back/holey || fail "the pulled holey differs"
expect_no_temps "$mnt/root" back
stop_server
server_pid=""
echo "ok: default pushes and a pull with O_DIRECT on 8 KiB sectors: a holey 9 MiB file, --chunk 4K"
