# A verbs or rdma_cm call failing at a server, over real verbs, one call at
# a time (verbs_fail.sh has the shim and the sweep), from its start through
# one bench session: it fails to start with one line and status 1, or the
# session ends (the client: status 0, or 1 with one line, within 60 s), and
# it then serves the next bench and exits 0 on SIGTERM.
. tests/integration/verbs_fail.sh
rm -f trace
env LD_PRELOAD="$shim" RAILCP_VERBS_FAIL_AT=0 RAILCP_VERBS_TRACE="$dir/trace" "$RAILCP" serve 2>"$log" &
server_pid=$!
wait_for_line "serving on " 20 "$log" || fail "railcp serve with the shim did not start: $(cat "$log")"
"$RAILCP" $bench >/dev/null 2>err || fail "a bench against the shimmed server failed: $(cat err)"
stop_server
cp trace count
n=$(wc -l <count)
[ "$n" -ge 10 ] || fail "the shim counted only $n calls: is it preloaded?"
failed=0 refused=0 runs=0
for k in $(sweep count); do
	runs=$((runs + 1))
	rm -f trace
	env LD_PRELOAD="$shim" RAILCP_VERBS_FAIL_AT="$k" RAILCP_VERBS_TRACE="$dir/trace" "$RAILCP" serve 2>"$log.k" &
	server_pid=$!
	until grep -q "serving on " "$log.k" || ! kill -0 "$server_pid" 2>/dev/null; do sleep 0.1; done
	if ! kill -0 "$server_pid" 2>/dev/null; then
		wait "$server_pid"
		rc=$? err=$(cat "$log.k")
		expect_one_line_error "server, $(what "$k") at its start"
		[ "$rc" -eq 1 ] || fail "server, $(what "$k") at its start: exit status $rc: $err"
		refused=$((refused + 1))
		continue
	fi
	# Calls vary a little from run to run: the failure may come in a later
	# session. The bench after the one it came in must succeed.
	hit=false
	for i in 1 2 3; do
		capture timeout -s KILL 60 "$RAILCP" $bench
		if $hit; then
			[ "$rc" -eq 0 ] || fail "the server did not serve the next bench after its $(what "$k"): $err"
			break
		fi
		survived "bench against a server whose $(what "$k")"
		[ "$rc" -eq 0 ] || failed=$((failed + 1))
		grep -q " failed$" trace && hit=true
	done
	kill "$server_pid"
	wait "$server_pid" || fail "the server exited $? on SIGTERM after its $(what "$k"): $(tail -n 3 "$log.k")"
	! grep -q "Sanitizer" "$log.k" || fail "a sanitizer report after the server's $(what "$k"): $(cat "$log.k")"
done
echo "server: $n calls of $(names count | wc -w) functions ($(names count)); $runs failed one at a time: $refused at its start (one line, status 1), $failed failed a session with one line, $((runs - refused - failed)) were survived"
rm -rf "$dir"
exit 0
