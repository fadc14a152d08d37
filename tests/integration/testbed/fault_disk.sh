# A receiver's disk that fails, over real verbs. Each copy must end with
# one line and exit status 1, leave no file under its final name that is
# not the whole source, and leave the server serving:
# (a) disk full: a push of 100 MiB into a 64 MiB root (a small tmpfs):
#     nothing is left in the root, and the server then takes a small push;
#     a tree larger than the root: every file that got its final name is
#     the source's, no temporary is left;
# (b) disk full on the client's side: a pull of 48 MiB into 32 MiB;
# (c) fsync failing: ext4 on a device-mapper device whose writes all fail
#     (dm-flakey, error_writes) once the data is in the page cache, so the
#     file's sync before its rename is what reports it; the server then
#     serves a pull from the same root (reads still work).
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root small back ext
log=serve.log
dm=railcp-fault-$$

cleanup() {
	[ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null
	umount -l "$dir/root" "$dir/small" "$dir/ext" 2>/dev/null
	dmsetup remove --noudevsync "$dm" 2>/dev/null && dmsetup mknodes
	rmmod brd 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM

mount -t tmpfs -o size=64m railcp-full "$dir/root" || fail "cannot mount a 64 MiB tmpfs"
head -c $((100 << 20)) /dev/urandom >big
head -c $((1 << 20)) /dev/urandom >one
mkdir tree
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do head -c $((8 << 20)) /dev/urandom >tree/f$i; done

start_server "$log" --root "$dir/root"

# (a) 100 MiB into 64 MiB.
capture "$RAILCP" big 127.0.0.1:big
expect_one_line_error "a push of 100 MiB into a 64 MiB root"
[ "$rc" -eq 1 ] || fail "a push into a full disk exited $rc, not 1: $err"
case "$err" in *"No space left on device"*) ;; *) fail "the error does not say the disk is full: $err" ;; esac
echo "disk full: $err"
[ -z "$(ls -A root)" ] || fail "the full root is not empty after the failed push: $(ls -lA root)"
capture "$RAILCP" one 127.0.0.1:one
[ "$rc" -eq 0 ] || fail "the server did not take a small push after a full disk: $err"
cmp one root/one || fail "the small push after a full disk differs"
rm root/one

# A tree of 96 MiB in files of 8 MiB: some may land, none is cut short.
capture "$RAILCP" -r tree 127.0.0.1:
expect_one_line_error "a push of a 96 MiB tree into a 64 MiB root"
expect_no_temps root
landed=0
for f in root/tree/*; do
	[ -e "$f" ] || continue
	cmp "$f" "tree/${f##*/}" || fail "$f is under its final name but is not the source's"
	landed=$((landed + 1))
done
echo "tree into a full disk: $landed of 12 files landed whole, no temporary left: $err"
rm -rf root/tree

# (b) The client's disk full: a pull of 48 MiB into 32 MiB.
mount -t tmpfs -o size=32m railcp-small "$dir/small" || fail "cannot mount a 32 MiB tmpfs"
head -c $((48 << 20)) big >root/mid
capture "$RAILCP" 127.0.0.1:mid small/
expect_one_line_error "a pull of 48 MiB into a 32 MiB directory"
[ "$rc" -eq 1 ] || fail "a pull into a full disk exited $rc, not 1: $err"
case "$err" in *"No space left on device"*) ;; *) fail "the error does not say the disk is full: $err" ;; esac
[ -z "$(ls -A small)" ] || fail "the full directory is not empty after the failed pull: $(ls -lA small)"
echo "pull into a full disk: $err"
stop_server
server_pid=

# (c) fsync failing: ext4 on dm-linear over a RAM disk, its table swapped
# for dm-flakey with every write failing (reads pass) once the file system
# is made; the data reaches the page cache, the sync before the rename fails.
modprobe dm-flakey 2>/dev/null
dm_ext4 "$dm" 128 "$dir/ext"
cp one ext/served && sync
start_server "$log.2" --root "$dir/ext"
dmsetup suspend --noudevsync "$dm" &&
	dmsetup load "$dm" --table "0 $dm_sectors flakey /dev/ram0 0 0 1 1 error_writes" &&
	dmsetup resume --noudevsync "$dm" || fail "cannot make the device's writes fail"
capture "$RAILCP" one 127.0.0.1:one
expect_one_line_error "a push whose sync fails"
[ "$rc" -eq 1 ] || fail "a push whose sync fails exited $rc, not 1: $err"
echo "fsync failing: $err"
[ ! -e ext/one ] || fail "a file whose sync failed is under its final name"
capture "$RAILCP" 127.0.0.1:served back/
[ "$rc" -eq 0 ] || fail "the server did not serve a pull after its disk failed: $err"
cmp one back/served || fail "the pull after the disk failed differs"
stop_server
server_pid=
exit 0
