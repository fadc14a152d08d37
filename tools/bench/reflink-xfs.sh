# tools/bench/reflink-xfs.sh - what -c's clones save its receiver: a -c push
# over TCP on 127.0.0.1 of a MIB MiB file with 1% of its 1 MiB chunks
# changed onto XFS with reflink (the kept chunks cloned: FICLONERANGE) and
# onto XFS made with -m reflink=0 (FICLONERANGE refused: each kept chunk read
# and written), both sparse images on loop devices in DIR, the source in DIR
# too. Each run resets the destination to the old file (copied, synced);
# the two file systems alternate, the order swapped each round, after a
# first run on each that is not counted. Per run:
# wall seconds of the push, of the push and a sync after it (the writeback
# of what it wrote), the CPU seconds of the server (the receiver) from
# /proc, the MiB the loop device read and wrote meanwhile, and the load
# average (1 min) at its start and end; then per file system the medians
# with their min-max, and the lowest and highest load seen. Then, once per
# file system with a hard link holding the old file, the space both files
# take: du of each (which counts a shared block in each file) and the file
# system's used space beyond the old file alone (which counts it once).
# DIR needs about 5 MIB MiB free (the two files, and on the images the old
# file, the new one beside it, and XFS's own), checked first; the default,
# 1 GiB in /dev/shm, needs 5.5 GiB of tmpfs. Run as root from the top of
# the tree:
#   env RAILCP=build/release/railcp DIR=/dev/shm MIB=1024 ROUNDS=3 sh tools/bench/reflink-xfs.sh
. tests/integration/lib.sh
[ "$(id -u)" -eq 0 ] || fail "run as root (loop devices and mounts)"
command -v mkfs.xfs >/dev/null || fail "no mkfs.xfs: run tools/setup"
mib=${MIB:-1024} rounds=${ROUNDS:-3}
dir=${DIR:-/dev/shm}
need=$((5 * mib + 512))
free=$(($(df -k --output=avail "$dir" | tail -n 1) / 1024)) || fail "cannot read the free space of $dir"
[ "$free" -ge "$need" ] || fail "$dir has $free MiB free, and a run of $mib MiB needs about $need MiB"
top=$(mktemp -d "$dir/railcp-reflink-XXXXXX") || fail "cannot make a directory in $dir"
pids="" mnts="" devs="" server_pid=""
# Undoes what is set up, a second signal meanwhile ignored: the servers (a
# server that started but never said it serves too: start_server's
# $server_pid), the mounts (lazily if busy), the loop devices; then the files.
down() {
	trap '' TERM INT HUP PIPE
	for p in $pids $server_pid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	for m in $mnts; do umount "$m" || umount -l "$m"; done
	for d in $devs; do losetup -d "$d"; done
	rm -rf "$top"
}
trap down EXIT
trap 'exit 143' TERM INT HUP PIPE
export HOME="$top" LC_ALL=C
unset RAILCP_KEY
cd "$top" || fail "no $top"

# The old file and the new one: 1% of its 1 MiB chunks changed in random places.
head -c $((mib << 20)) /dev/urandom >old || fail "cannot write $top/old"
cp old new
python3 - new "$mib" <<'PY' || fail "cannot change new"
import os, random, sys
fd, n = os.open(sys.argv[1], os.O_WRONLY), int(sys.argv[2])
for k in random.sample(range(n), max(1, n // 100)):
    os.pwrite(fd, os.urandom(64), (k << 20) + random.randrange((1 << 20) - 64))
os.close(fd)
PY

# up NAME REFLINK: an XFS image mounted on $top/NAME, a server of it on a port of its own.
up() {
	truncate -s $((3 * mib + 512))M "$1.img"
	mkfs.xfs -q -m reflink="$2" "$1.img" || fail "mkfs.xfs -m reflink=$2 failed"
	d=$(losetup -f --show "$1.img") || fail "no free loop device"
	devs="$d $devs"
	mkdir "$1" && mount -t xfs "$d" "$1" || fail "cannot mount $d"
	mnts="$top/$1 $mnts"
	eval "port_$1=$(free_port) dev_$1=${d#/dev/}"
	: >"$1.log"
	start_server "$1.log" --transport tcp --rails lo --port "$(eval echo "\$port_$1")" --root "$top/$1"
	pids="$server_pid $pids"
	eval "pid_$1=$server_pid"
	server_pid=""
}
up clone 1
up copy 0

cpu() { awk '{ print ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
# MiB read and written so far by the loop device of file system $1.
io() { awk '{ print $3 / 2048, $7 / 2048 }' "/sys/block/$(eval echo "\$dev_$1")/stat"; }
now() { date +%s.%N; }
load() { cut -d' ' -f1 /proc/loadavg; }

# run NAME [LINK]: the old file put back at NAME, then the -c push of new; one line of figures.
run() {
	rm -f "$1/big" "$1/old"
	cp --reflink=never old "$1/big" && touch -d @1 "$1/big" && sync || fail "cannot reset $1"
	[ -z "${2:-}" ] || ln "$1/big" "$1/old"
	used0=$(df -k --output=used "$1" | tail -n 1)
	pid=$(eval echo "\$pid_$1")
	l0=$(load) io0=$(io "$1") c0=$(cpu "$pid") t0=$(now)
	capture "$RAILCP" --transport tcp --rails lo --port "$(eval echo "\$port_$1")" -c --json new 127.0.0.1:big
	t1=$(now)
	sync
	t2=$(now) c1=$(cpu "$pid") io1=$(io "$1") l1=$(load)
	[ "$rc" -eq 0 ] || fail "push -c to $1: $err"
	cmp -s new "$1/big" || fail "push -c to $1: the copy differs"
	sent=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["bytes"])')
	if [ -n "${2:-}" ]; then
		used1=$(df -k --output=used "$1" | tail -n 1)
		echo "space $1: du $(du -k "$1/old" | cut -f1) KiB old + $(du -k "$1/big" | cut -f1) KiB new;" \
			"the file system's used space grew by $((used1 - used0)) KiB"
	else
		echo "$1 $(awk "BEGIN { print $t1 - $t0, $t2 - $t0, $c1 - $c0 }") $sent" \
			"$(echo "$io0 $io1" | awk '{ print $3 - $1, $4 - $2 }') $l0 $l1"
	fi
}

# A first run on each, not counted: a new image's blocks are first written then.
for fs in clone copy; do
	line=$(run "$fs") || fail "$line"
done
r=1
: >runs
while [ $r -le "$rounds" ]; do
	order="clone copy"
	[ $((r % 2)) -eq 1 ] || order="copy clone"
	for fs in $order; do
		line=$(run "$fs") || fail "$line"
		echo "round $r: $line" | awk '{ printf "%s %s %s: push %.3f s, push+sync %.3f s, receiver CPU %.2f s, %d bytes sent; device read %.0f MiB, written %.0f MiB; load %s-%s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }'
		echo "$line" >>runs
	done
	r=$((r + 1))
done
for fs in clone copy; do
	grep "^$fs " runs | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin]
def m(i, f):
    v = [float(r[i]) for r in rows]
    return (f + " (" + f + "-" + f + ")") % (statistics.median(v), min(v), max(v))
loads = [float(r[i]) for r in rows for i in (7, 8)]
print("%s: medians of %d (min-max): push %s s, push+sync %s s, receiver CPU %s s; device read %s MiB, written %s MiB; load %.2f-%.2f" % (rows[0][0], len(rows), m(1, "%.3f"), m(2, "%.3f"), m(3, "%.2f"), m(5, "%.0f"), m(6, "%.0f"), min(loads), max(loads)))'
done
for fs in clone copy; do
	line=$(run "$fs" link) || fail "$line"
	echo "$line"
done
