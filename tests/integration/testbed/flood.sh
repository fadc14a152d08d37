# 1,000 connections that never authenticate, over real verbs: while they
# come and sit (from 198.18.1.1, one of the guest's own rail addresses),
# clients from other addresses are still served, a bench and a push; the
# server's descriptors and memory stay bounded (ENG_MAX_PENDING pending
# connections at most, the rest closed at once), and once the strangers
# are gone they return to where they were. The figures are printed (in
# the ASan build the RSS is not bounded: is_asan).
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root
head -c 32 /dev/urandom | base64 >key
chmod 600 key
head -c $((1 << 20)) /dev/urandom >one
log=serve.log
start_server "$log" --port 7485 --key-file "$dir/key" --root "$dir/root"

# usage: fds, then RSS in KiB, and threads of the server.
usage() {
	echo "$(ls /proc/$server_pid/fd | wc -l) $(awk '/^VmRSS/ { print $2 }' /proc/$server_pid/status) $(awk '/^Threads/ { print $2 }' /proc/$server_pid/status)"
}
"$RAILCP" bench 198.18.0.1:7485 --bytes 4M --key-file key >/dev/null 2>err || fail "the first bench failed: $(cat err)"
set -- $(usage)
fd0=$1 rss0=$2 thr0=$3

# The strangers: 1,000 connections from 198.18.1.1, each kept open from
# their side for 40 s; then those the server closed (refused at once, or at
# the end of its 10 s wait for a hello) are counted: all must be.
/usr/bin/python3 - "$dir/flood.out" <<'PY' &
import socket, sys, time
out = open(sys.argv[1], "w")
held, refused = [], 0
for i in range(1000):
    s = socket.socket()
    s.bind(("198.18.1.1", 0))
    try:
        s.connect(("198.18.0.1", 7485))
        held.append(s)
    except OSError:
        refused += 1
        s.close()
print("connected %d refused %d" % (len(held), refused), file=out, flush=True)
time.sleep(40)
def closed(s):
    s.setblocking(False)
    try:
        while s.recv(65536) != b"":
            pass
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True
print("closed by the server %d" % sum(closed(s) for s in held), file=out, flush=True)
PY
flood=$!
wait_until 120 grep -q connected flood.out 2>/dev/null || fail "the strangers did not connect: $(cat flood.out)"
set -- $(usage)
fd1=$1 rss1=$2 thr1=$3
capture "$RAILCP" bench 198.18.0.1:7485 --bytes 4M --key-file key
[ "$rc" -eq 0 ] || fail "a bench during the flood failed: $err"
capture "$RAILCP" --key-file key --port 7485 one 198.18.0.1:one
[ "$rc" -eq 0 ] || fail "a push during the flood failed: $err"
cmp one root/one || fail "the push during the flood differs"
set -- $(usage)
fd2=$1 rss2=$2 thr2=$3
[ "$fd2" -le $((fd0 + 80)) ] || fail "the server holds $fd2 descriptors during the flood (before it: $fd0)"
is_asan || [ "$rss2" -le $((rss0 + 32768)) ] || fail "the server's RSS grew from $rss0 to $rss2 KiB during the flood"
wait $flood
echo "$(head -n 1 flood.out); $(tail -n 1 flood.out)"
grep -q "closed by the server 1000" flood.out ||
	fail "the server did not close every stranger's connection within 40 s: $(cat flood.out)"
# Gone: back to where it was.
wait_until 20 sh -c "[ \$(ls /proc/$server_pid/fd | wc -l) -le $fd0 ]" ||
	fail "the server holds $(ls /proc/$server_pid/fd | wc -l) descriptors after the flood (before it: $fd0)"
set -- $(usage)
fd3=$1 rss3=$2 thr3=$3
[ "$thr3" -eq "$thr0" ] || fail "the server has $thr3 threads after the flood, $thr0 before it"
echo "server: before the flood $fd0 fds, $rss0 KiB RSS, $thr0 threads; during it $fd1/$fd2 fds, $rss1/$rss2 KiB, $thr1/$thr2 threads; after it $fd3 fds, $rss3 KiB, $thr3 threads"
stop_server
rm -rf "$dir"
exit 0
