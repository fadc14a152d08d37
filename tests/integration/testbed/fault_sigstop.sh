# A peer stopped (SIGSTOP) for longer than the timeouts, over real verbs:
# its kernel still answers TCP and RDMA, so nothing but railcp's own
# deadlines can end the other side's wait. Each case asserts that side ends
# with one line and status 1 within its documented limit (--timeout for a
# control or connection step, here 5 s; --stall for a data phase without
# completions, here 15 s on both sides), and that the stopped server, once
# continued, serves the next copy.
# (a) the server stopped before the client's hello: the client ends in
#     about --timeout;
# (b) the server stopped mid-push: the client ends in about --stall;
# (c) the client stopped mid-push: the server's session ends in about
#     --stall, leaving no temporary, while it serves another client
#     meanwhile.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root
log=serve.log
head -c $((96 << 20)) /dev/urandom >big
head -c 65536 /dev/urandom >small
stall=15
slow="--qps-per-rail 1 --rails rxe0:1 --chunk 64K --timeout 5 --stall $stall"

cleanup() {
	[ -n "${server_pid:-}" ] && kill -CONT "$server_pid" 2>/dev/null && kill "$server_pid" 2>/dev/null
	[ -n "${client:-}" ] && kill -CONT "$client" 2>/dev/null && kill -KILL "$client" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM

# ended LABEL MIN MAX PID ERRFILE: PID exits with status 1 and one line within
# MAX s of now (and not before MIN s); sets $took.
ended() {
	_t0=$(date +%s)
	wait "$4"
	rc=$? took=$(($(date +%s) - _t0)) err=$(cat "$5")
	expect_one_line_error "$1"
	[ "$rc" -eq 1 ] || fail "$1: exit status $rc, not 1: $err"
	[ "$took" -le "$3" ] || fail "$1: ended after $took s, past its limit of $3 s: $err"
	[ "$took" -ge "$2" ] || fail "$1: ended after $took s, before any limit could have run out: $err"
	echo "$1: ended in $took s: $err"
}

start_server "$log" --root "$dir/root" --stall "$stall"

# (a) Stopped before the hello.
kill -STOP "$server_pid"
"$RAILCP" $slow small 127.0.0.1:small 2>a.err &
ended "server stopped before the hello" 3 20 $! a.err
kill -CONT "$server_pid"
capture "$RAILCP" small 127.0.0.1:small
[ "$rc" -eq 0 ] || fail "the server did not serve a copy once continued: $err"
rm root/small

# (b) Stopped mid-push, once 8 MiB landed.
"$RAILCP" $slow big 127.0.0.1:big 2>b.err &
client=$!
wait_for_temp root 30 || fail "the push never started"
wait_until 60 sh -c "find root -name '.railcp-tmp-*' -size +8M | grep -q ." ||
	fail "the push never reached 8 MiB"
kill -STOP "$server_pid"
ended "server stopped mid-push" $((stall - 5)) $((stall + 30)) $client b.err
client=
kill -CONT "$server_pid"
wait_for_no_temp root 20 || fail "the continued server left a temporary: $(ls -A root)"
capture "$RAILCP" small 127.0.0.1:small
[ "$rc" -eq 0 ] || fail "the server did not serve a copy once continued after a stop mid-push: $err"
rm root/small

# (c) The client stopped mid-push: the server's session ends by itself.
"$RAILCP" $slow big 127.0.0.1:big 2>c.err &
client=$!
wait_until 60 sh -c "find root -name '.railcp-tmp-*' -size +8M | grep -q ." ||
	fail "the push never reached 8 MiB"
before=$(grep -c "session .* failed" "$log")
kill -STOP "$client"
t0=$(date +%s)
# Meanwhile another client is served.
capture "$RAILCP" small 127.0.0.1:small
[ "$rc" -eq 0 ] || fail "the server did not serve another client while one was stopped: $err"
rm root/small
wait_until $((stall + 30)) sh -c "[ \$(grep -c 'session .* failed' '$log') -gt $before ]" ||
	fail "the server's session with a stopped client never ended: $(cat "$log")"
took=$(($(date +%s) - t0))
[ "$took" -ge $((stall - 5)) ] || fail "the server's session with a stopped client ended after $took s, before any limit"
echo "client stopped mid-push: the server's session ended in $took s: $(grep "session .* failed" "$log" | tail -n 1)"
wait_for_no_temp root 20 || fail "the server left a temporary of the stopped client: $(ls -A root)"
kill -KILL "$client"
wait "$client" 2>/dev/null
client=
stop_server
server_pid=
exit 0
