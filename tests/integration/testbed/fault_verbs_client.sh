# A verbs or rdma_cm call failing at the client of a bench, over real
# verbs, one call at a time (verbs_fail.sh has the shim and the sweep): the
# bench ends with status 0 or 1 and one line, within 60 s, and the server
# (without the shim) serves the next bench.
. tests/integration/verbs_fail.sh
start_server "$log"
shimmed 0 "$RAILCP" $bench >/dev/null 2>err || fail "a bench with the shim failing nothing failed: $(cat err)"
cp trace count
n=$(wc -l <count)
[ "$n" -ge 10 ] || fail "the shim counted only $n calls: is it preloaded?"
# The devices are opened for one listing, which the plan and the session's
# rail addresses share, and once more by rdma_cm's own start (librdmacm).
lists=$(grep -c ' ibv_get_device_list$' count)
[ "$lists" -le 2 ] || fail "the client listed the RDMA devices $lists times, not at most twice (its plan's listing and rdma_cm's): $(grep -E 'ibv_(get_device_list|open_device)$' count | tr '\n' ' ')"
# --tos reaches each id the client resolves, before its address is resolved.
shimmed 0 "$RAILCP" $bench --tos 106 >/dev/null 2>err || fail "a bench with --tos 106 failed: $(cat err)"
tos=$(grep -c ' rdma_set_option tos=106$' "$dir/trace")
ids=$(grep -c ' rdma_resolve_addr$' "$dir/trace")
[ "$tos" -ge 1 ] && [ "$tos" -eq "$ids" ] || fail "--tos 106 was set on $tos ids of the $ids resolved: $(cat "$dir/trace")"
awk '$2 == "rdma_set_option" { set++ } $2 == "rdma_resolve_addr" && set-- <= 0 { bad = 1 } END { exit bad }' "$dir/trace" ||
	fail "an address was resolved before its id had --tos: $(cat "$dir/trace")"
failed=0 runs=0
for k in $(sweep count); do
	capture shimmed "$k" timeout -s KILL 60 "$RAILCP" $bench
	survived "client, $(what "$k")"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
	runs=$((runs + 1))
	kill -0 "$server_pid" 2>/dev/null || fail "the server died after the client's $(what "$k"): $(tail -n 3 "$log")"
done
capture "$RAILCP" $bench
[ "$rc" -eq 0 ] || fail "the server did not serve a bench after the sweep: $err"
stop_server
! grep -q "Sanitizer" "$log" || fail "the server's log has a sanitizer report: $(cat "$log")"
echo "client: $n calls of $(names count| wc -w) functions ($(names count)); $runs failed one at a time: $failed ended with one line, $((runs - failed)) were survived"
rm -rf "$dir"
exit 0
