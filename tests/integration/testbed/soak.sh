# Sessions back to back against one server, over real verbs: benches,
# pushes of a small tree, pulls of a file, and pushes whose client is
# killed with SIGKILL mid-copy, in turn. The server's descriptors and
# threads once it is idle again at the end equal those after the first few
# sessions, and its RSS has not grown past them by more than 4 MiB (the
# allocator's caches): nothing leaks per session. RAILCP_SOAK_SESSIONS
# sets how many (default 40; tools/check runs the default in the release
# build and 12 in the ASan build, doc/testing.md's figures are from 300).
# Every copy is checked. In the ASan build the RSS is printed, not bounded
# (is_asan); its leak check at the server's exit covers memory there.
. tests/integration/lib.sh
need_rdma
n=${RAILCP_SOAK_SESSIONS:-40}
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root back tree tree/d
for i in 1 2 3 4 5 6 7 8; do head -c $((i * 20000)) /dev/urandom >tree/d/f$i; done
head -c $((2 << 20)) /dev/urandom >root/pullme
head -c $((48 << 20)) /dev/urandom >big
log=serve.log
start_server "$log" --root "$dir/root"
slow="--qps-per-rail 1 --rails rxe0:1 --chunk 64K"

usage() {
	echo "$(ls /proc/$server_pid/fd | wc -l) $(awk '/^VmRSS/ { print $2 }' /proc/$server_pid/status) $(awk '/^Threads/ { print $2 }' /proc/$server_pid/status)"
}

# idle: the server has ended every session (its count of ends reached $1).
idle() { wait_until 90 sh -c "[ \$(grep -c -E 'session [0-9]+ from .* (done|failed)' '$log') -ge $1 ]"; }

killed=0 t0=$(date +%s)
for i in $(seq 1 "$n"); do
	case $((i % 4)) in
	0) "$RAILCP" bench 127.0.0.1 --bytes 8M >/dev/null 2>err || fail "session $i, a bench, failed: $(cat err)" ;;
	1) rm -rf root/tree
	   "$RAILCP" -r tree 127.0.0.1: >/dev/null 2>err || fail "session $i, a push, failed: $(cat err)"
	   [ "$(tree_sums tree)" = "$(tree_sums root/tree)" ] || fail "session $i: the pushed tree differs" ;;
	2) rm -f back/pullme
	   "$RAILCP" 127.0.0.1:pullme back/ >/dev/null 2>err || fail "session $i, a pull, failed: $(cat err)"
	   cmp root/pullme back/pullme || fail "session $i: the pulled file differs" ;;
	3) "$RAILCP" $slow big 127.0.0.1:big 2>/dev/null &
	   c=$!
	   wait_for_temp root 30 || fail "session $i: the push to be killed never started"
	   sleep 0.5
	   kill -KILL $c
	   wait $c 2>/dev/null
	   killed=$((killed + 1)) ;;
	esac
	idle "$i" || fail "the server did not end session $i: $(tail -n 3 "$log")"
	if [ "$i" -eq 8 ]; then
		set -- $(usage)
		fd0=$1 rss0=$2 thr0=$3
	fi
done
wait_for_no_temp root 20 || fail "a temporary was left: $(ls -A root)"
set -- $(usage)
fd1=$1 rss1=$2 thr1=$3
echo "$n sessions ($killed with the client killed) in $(($(date +%s) - t0)) s; the server after 8: $fd0 fds, $rss0 KiB RSS, $thr0 threads; after $n: $fd1 fds, $rss1 KiB, $thr1 threads"
[ "$fd1" -eq "$fd0" ] || fail "the server's descriptors went from $fd0 to $fd1"
[ "$thr1" -eq "$thr0" ] || fail "the server's threads went from $thr0 to $thr1"
is_asan || [ "$rss1" -le $((rss0 + 4096)) ] || fail "the server's RSS grew from $rss0 to $rss1 KiB"
stop_server
rm -rf "$dir"
exit 0
