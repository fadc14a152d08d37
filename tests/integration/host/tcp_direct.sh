# --direct's default over TCP on 127.0.0.1 (io_direct_pays: files of
# IO_DIRECT_MIN, 8 MiB, or more, not on tmpfs or ramfs), on an ext4 image
# (a sparse file in the test's tmp on a loop device, mounted, undone on every
# way out, a TERM included). Source and server root both on it: a 24 MiB
# file of an unaligned size and a 9 MiB one land identical, read and written
# with O_DIRECT by default, a 1 MiB one beside them through the page cache
# (--json's files_direct_read and files_direct_written, which the summary
# says too); --no-direct reads and writes none so, --direct every one; a
# source in the page cache is read through it (asked with cachestat where
# the kernel has it, Linux 6.5, else with RWF_NOWAIT reads: the output
# says which); a pull counts the server's reads; a server started with
# --no-direct reads and writes every file through the page cache whatever
# the client asks. Then the server's root on tmpfs: the push lands
# identical, written through the page cache, read direct from ext4; a source
# on tmpfs is read through it. Needs root and a loop device: skips, saying
# which, where there is none.
. tests/integration/lib.sh
command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4 (e2fsprogs)"

loop_setup
truncate -s 256M ext4.img || fail "cannot make $tmp/ext4.img"
mkfs.ext4 -q -F ext4.img >mkfs.log 2>&1 || fail "mkfs.ext4 failed: $(tail -n 3 mkfs.log)"
dev=$(losetup -f --show ext4.img 2>probe.err) || {
	dev=""
	skip "cannot attach a loop device here: $(cat probe.err)"
}
mkdir ext4 && mount -t ext4 "$dev" ext4 || fail "cannot mount ext4 on $dev"
mnt=$tmp/ext4
mkdir -p "$mnt/root" "$mnt/src/t" "$mnt/back"
head -c $((24 * 1048576 + 1234)) /dev/urandom >"$mnt/src/t/big"
head -c $((9 * 1048576 + 7)) /dev/urandom >"$mnt/src/t/nine"
head -c 1048576 /dev/urandom >"$mnt/src/t/small"
tcp="--transport tcp --rails lo --port $port"

# uncache FILE...: each file written back and its pages dropped from the
# page cache, so the default's rule reads it with O_DIRECT (a file mostly
# in the cache is read through it).
uncache() {
	python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@" ||
		fail "cannot drop $* from the page cache"
}

# $1: a key of the --json report in $out.
json_of() { printf '%s\n' "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

# push WHAT READ WRITTEN [FLAGS...]: a push of $src's tree t (out of the page
# cache first unless $cached) to the server with FLAGS; the tree lands
# identical, READ files read and WRITTEN written with O_DIRECT.
push() {
	_what=$1 _read=$2 _written=$3
	shift 3
	rm -rf "${root:?}/t"
	[ -n "${cached:-}" ] || uncache "$src"/t/*
	# shellcheck disable=SC2086 # $tcp is words
	capture "$RAILCP" $tcp --json -r "$@" "$src/t" 127.0.0.1:
	[ "$rc" -eq 0 ] || fail "$_what: $err"
	for f in big nine small; do
		cmp "$src/t/$f" "$root/t/$f" || fail "$_what: $f differs from its source"
	done
	[ "$(json_of files_direct_read)/$(json_of files_direct_written)" = "$_read/$_written" ] ||
		fail "$_what: O_DIRECT files read/written $(json_of files_direct_read)/$(json_of files_direct_written), expected $_read/$_written"
	expect_no_temps "$root"
}

start_server serve.log --transport tcp --rails lo --port "$port" --root "$mnt/root"
src=$mnt/src root=$mnt/root
push "default, ext4 to ext4" 2 2
push "--no-direct" 0 0 --no-direct
push "--direct" 3 3 --direct
cat "$src"/t/* >/dev/null
# Whether this kernel has cachestat (syscall 451): the cache is asked with it, else with RWF_NOWAIT.
probe=$(python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
r = libc.syscall(451, fd, (ctypes.c_uint64 * 2)(0, 0), (ctypes.c_uint64 * 5)(), 0)
print("cachestat" if r == 0 else "RWF_NOWAIT reads (cachestat: %s)" % os.strerror(ctypes.get_errno()))' "$src/t/big") ||
	fail "cannot probe for cachestat"
echo "the page cache is asked with $probe"
cached=1 push "default, the source in the page cache, asked with $probe" 0 2
uncache "$src/t/big"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp "$src/t/big" 127.0.0.1:
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "O_DIRECT (files of 8 MiB or more): files read 1, written 1" ||
	fail "the summary does not count the files read and written with O_DIRECT: $rc $out $err"
uncache "$mnt"/root/t/*
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --json -r 127.0.0.1:t "$mnt/back"
[ "$rc" -eq 0 ] || fail "pull: $err"
cmp "$mnt/root/t/big" "$mnt/back/t/big" || fail "pull: big differs"
[ "$(json_of files_direct_read)/$(json_of files_direct_written)" = 2/2 ] ||
	fail "pull: O_DIRECT files read/written $(json_of files_direct_read)/$(json_of files_direct_written), expected 2/2"
stop_server
server_pid=""

# serve --no-direct: the server reads and writes through the page cache, whatever the client asks.
start_server serve-nodirect.log --transport tcp --rails lo --port "$port" --root "$mnt/root" --no-direct
push "default, to a server started with --no-direct" 2 0
push "--direct, to a server started with --no-direct" 3 0 --direct
uncache "$mnt"/root/t/*
rm -rf "$mnt/back/t"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --json -r --direct 127.0.0.1:t "$mnt/back"
[ "$rc" -eq 0 ] || fail "pull from a server started with --no-direct: $err"
cmp "$mnt/root/t/big" "$mnt/back/t/big" || fail "pull from --no-direct: big differs"
[ "$(json_of files_direct_read)/$(json_of files_direct_written)" = 0/3 ] ||
	fail "pull from --no-direct: O_DIRECT files read/written $(json_of files_direct_read)/$(json_of files_direct_written), expected 0/3"
stop_server
server_pid=""

# The server's root on tmpfs: written through the page cache, silently.
shm=$(mktemp -d /dev/shm/railcp-direct-XXXXXX) || fail "no directory in /dev/shm"
loop_also=$shm
[ "$(stat -f -c %T "$shm")" = tmpfs ] || fail "/dev/shm is not tmpfs here"
mkdir "$shm/root" "$shm/src"
start_server serve-shm.log --transport tcp --rails lo --port "$port" --root "$shm/root"
root=$shm/root
push "ext4 to tmpfs" 2 0
cp -r "$mnt/src/t" "$shm/src/t" || fail "cannot copy the tree to tmpfs"
src=$shm/src
push "tmpfs to tmpfs" 0 0
stop_server
server_pid=""
echo "ok: default O_DIRECT for the 24 and 9 MiB files, not the 1 MiB one; --no-direct, --direct, a pull, serve --no-direct, tmpfs"
