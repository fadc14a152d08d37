# The queue pairs' retry knobs, across two hosts: a push with --ack-timeout
# 15 --retry-count 2 (4.096 us x 2^15 = 134 ms, two retries: 0.4 s; shorter
# ones fail healthy rails of the emulated guests under load) whose rail 1
# starts dropping everything a second in (a netem qdisc, 100% loss, on b's
# end, both ports ACTIVE) completes over rail 0, identical, with rxe1:1
# failed for its retries running out (the rail watchdog is set to 60 s, so
# it is not what finds it) within 2.5 s of the loss, where rdma_cm's default
# retries take over 4 s; --json and the summary say which knobs ran.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
dir=$(shared_dir knobs)
cd "$dir" || fail "cannot enter $dir"
port=7497

nic_b=$(tb on b cat /sys/class/infiniband/rxe1/parent) && [ -n "$nic_b" ] ||
	fail "no network device under rxe1 on b"
trap 'kill_jobs; tb on b tc qdisc del dev "$nic_b" root 2>/dev/null' EXIT
tb on a sh -c 'rm -rf /tmp/k && mkdir -p /tmp/k && head -c 128M /dev/urandom >/tmp/k/src' ||
	fail "cannot make the source on a"
tb on b sh -c 'rm -rf /tmp/k && mkdir -p /tmp/k/root' || fail "cannot make the root on b"
start_server_on b srv --root /tmp/k/root --port $port
src=$(tb on a sha256sum /tmp/k/src | cut -d' ' -f1) || fail "cannot sum the source"

n=$(sessions_of b srv)
# The copy marks its start on the share; this side's clock takes it from there.
spawn_on a cp sh -c "touch $dir/started && exec $RAILCP --port $port --json --ack-timeout 15 \
	--retry-count 2 --rail-stall 60 /tmp/k/src b:k"
wait_for_file "$dir/started" 60 || fail "the copy did not start"
t_start=$(date +%s%N)
wait_session_after b srv "$n"
sleep 1
tb on b tc qdisc add dev "$nic_b" root netem loss 100% || fail "cannot add netem on b's $nic_b"
t_loss=$(( ($(date +%s%N) - t_start) / 1000000 )) # ms from the copy's start to the loss
tb wait a cp 120
rc=$?
tb on b tc qdisc del dev "$nic_b" root
cp "$(job_file a cp out)" cp.out
cp "$(job_file a cp err)" cp.err
[ "$rc" -eq 0 ] || fail "a push whose rail 1 went silent failed: $(cat cp.err)"
[ "$(tb on b sha256sum /tmp/k/root/k | cut -d' ' -f1)" = "$src" ] || fail "the push differs"
why=$(
	/usr/bin/python3 - cp.out "$t_loss" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
t_loss = int(sys.argv[2]) / 1000
assert doc["ack_timeout"] == 15 and doc["retry_count"] == 2, doc
rails = {r["name"]: r for r in doc["rails"]}
r1 = rails["rxe1:1"]
assert r1["failed"] and not rails["rxe0:1"]["failed"], rails
assert "retry" in r1["error"] and "stalled" not in r1["error"], r1
# When the job began, from the copy's start: its first sample with bytes
# (late by up to an interval; and this side saw the start late: both make
# the estimate below longer, not shorter). 3 x 134 ms of retries find the
# loss within half a second; rdma_cm's default (8 x 0.54 s or more) would
# take over 4 s.
series = doc["series"]
first = next(t for t, b in zip(series["t_ms"], series["bytes"]) if sum(b) > 0) / 1000
found = r1["failed_after_s"] - (t_loss - first)
assert found < 2.5, (found, t_loss, first, r1)
print("%s %.1f s after the loss began" % (r1["error"], found))
PY
) || fail "the push's JSON does not show rail 1 failing on its retries: $(cat cp.out)"
# The summary, without --json, says which knobs ran.
tb on a "$RAILCP" --port $port --ack-timeout 15 --retry-count 2 /tmp/k/src b:k2 >sum.out 2>sum.err ||
	fail "a push with the knobs failed: $(cat sum.err)"
grep -q "queue pairs: ACK timeout 4.096 us x 2^15 = 134.2 ms, 2 retries" sum.out ||
	fail "the summary does not say the knobs: $(cat sum.out)"
echo "rail 1 silent mid-push with --ack-timeout 15 --retry-count 2: rxe1:1 failed: $why"
