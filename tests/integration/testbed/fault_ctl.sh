# The control connection cut while data flows, over real verbs: the
# control connection runs over 127.0.0.1 (lo) and the data over the rxe
# rails, which loop inside rxe; `tc netem loss 100%` on lo drops every
# control packet from then on, with no reset, as a dead switch port would.
# Both sides must notice by TCP keepalive (about 16 s) or their own
# deadlines, and end with one line: the client with status 1, the server's
# session with a line in its log; nothing under the final name that is not
# the whole source, no temporary left; with lo working again the server
# serves the next copy.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root
log=serve.log
head -c $((96 << 20)) /dev/urandom >big
head -c 65536 /dev/urandom >small
slow="--qps-per-rail 1 --rails rxe0:1 --chunk 64K"

cleanup() {
	tc qdisc del dev lo root 2>/dev/null
	[ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM

start_server "$log" --root "$dir/root"
"$RAILCP" $slow big 127.0.0.1:big 2>err &
client=$!
wait_until 60 sh -c "find root -name '.railcp-tmp-*' -size +8M | grep -q ." ||
	fail "the push never reached 8 MiB"
before=$(grep -c "session .* failed" "$log")
tc qdisc add dev lo root netem loss 100% || fail "cannot make lo drop packets (tc netem)"
t0=$(date +%s)
wait $client
rc=$? took=$(($(date +%s) - t0)) err=$(cat err)
# A copy that got through the cut: what lo dropped, and what the server saw, to tell why.
[ "$rc" -ne 0 ] || echo "lo's qdisc after the cut: $(tc -s qdisc show dev lo | tr '\n' ' '); server: $(cat "$log")"
expect_one_line_error "the client after its control connection was cut"
[ "$rc" -eq 1 ] || fail "the client exited $rc, not 1: $err"
[ "$took" -le 45 ] || fail "the client ended $took s after the cut, past keepalive's 16 s and its 30 s limits: $err"
echo "client: ended $took s after the cut: $err"
wait_until 45 sh -c "[ \$(grep -c 'session .* failed' '$log') -gt $before ]" ||
	fail "the server's session did not end within 45 s of the cut: $(cat "$log")"
echo "server: ended $(($(date +%s) - t0)) s after the cut: $(grep "session .* failed" "$log" | tail -n 1)"
wait_for_no_temp root 20 || fail "a temporary was left: $(ls -A root)"
# The data went on over the rails: the file may have arrived whole, every
# chunk checked, before the end's exchange failed. Then it is the source's.
if [ -e root/big ]; then
	cmp big root/big || fail "a file that is not the source's is under its final name"
	echo "the file arrived whole before the end's exchange failed, and is the source's"
fi
tc qdisc del dev lo root || fail "cannot restore lo"
capture "$RAILCP" small 127.0.0.1:small
[ "$rc" -eq 0 ] || fail "the server did not serve a copy after the cut: $err"
cmp small root/small || fail "the copy after the cut differs"
stop_server
server_pid=
exit 0
