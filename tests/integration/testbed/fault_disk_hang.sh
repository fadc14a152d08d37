# A receiver's disk that stops answering mid-push, over real verbs: ext4 on
# device-mapper over a RAM disk, suspended (dmsetup suspend: its I/O waits
# until it is resumed) while a push with --direct writes into it.
# - The server's session fails with its own sentence (the disk or file
#   system stalled) at its stall limit, and tells the client at once,
#   though its workers are still held by the device: the client, whose
#   own limit is much longer, ends with the server's sentence soon after
#   the server's limit, in one line and with exit status 1.
# - While its I/O has not returned, the server says once that it waits for
#   the disk, and it does not free the memory that I/O uses.
# - Once the device is resumed, the session ends: no file under its final
#   name, no temporary left, and the server serves the next push.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir ext
log=serve.log
dm=railcp-hang-$$
stall=10        # the server's --stall (the default, 60 s, would only make the test longer)
client_stall=40 # the client's: it must end by the server's word, not by its own limit

cleanup() {
	dmsetup resume --noudevsync "$dm" 2>/dev/null
	[ -n "${client_pid:-}" ] && kill -9 "$client_pid" 2>/dev/null
	[ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	umount -l "$dir/ext" 2>/dev/null
	dmsetup remove --noudevsync "$dm" 2>/dev/null && dmsetup mknodes
	rmmod brd 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM

dm_ext4 "$dm" 384 "$dir/ext"
head -c $((192 << 20)) /dev/urandom >big
head -c $((1 << 20)) /dev/urandom >one
start_server "$log" --root "$dir/ext" --stall "$stall"

# Slow enough (one QP, 64 KiB chunks) that the copy is mid-way when the device stops.
"$RAILCP" --direct --qps-per-rail 1 --chunk 64K --stall "$client_stall" big 127.0.0.1:big >out 2>err &
client_pid=$!
# Some data is on the device (written with O_DIRECT, so the size is the device's), most is not.
landed() { [ "$(find ext -name '.railcp-tmp-*' -size +8M | wc -l)" -gt 0 ]; }
wait_until 60 landed || fail "the push never wrote 8 MiB: $(cat err)"
t0=$(date +%s)
# --nolockfs: no freeze, no flush; the device's I/O simply waits from now on.
dmsetup suspend --nolockfs --noudevsync "$dm" || fail "cannot suspend $dm"
kill -0 "$client_pid" 2>/dev/null || fail "the push ended before the device stopped: $(cat err)"
echo "device suspended mid-copy"
end=$((t0 + stall + 12))
while kill -0 "$client_pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 1; done
kill -0 "$client_pid" 2>/dev/null &&
	fail "the client still runs $((stall + 12)) s after the server's disk stopped (the server's limit is $stall s, the client's $client_stall s)"
wait "$client_pid"
rc=$?
client_pid=
err=$(cat err)
echo "client: status $rc after $(($(date +%s) - t0)) s: $err"
expect_one_line_error "a push whose server's disk hangs"
[ "$rc" -eq 1 ] || fail "the client exited $rc, not 1: $err"
case "$err" in *"the disk or file system stalled"*) ;;
*) fail "the client did not give the server's reason: $err" ;; esac
# The server's workers are still held by the device: it says what it waits for.
wait_for_line "waiting for the disk" 40 "$log" ||
	fail "the server never said it waits for its disk: $(tail -n 5 "$log")"
grep "waiting for the disk" "$log"
kill -0 "$server_pid" 2>/dev/null || fail "the server died while its disk hung: $(tail -n 5 "$log")"
dmsetup resume --noudevsync "$dm" || fail "cannot resume $dm"
echo "device resumed after $(($(date +%s) - t0)) s"
wait_for_line "session [0-9]* from .* failed" 30 "$log" ||
	fail "the server's session did not end once its disk answered: $(tail -n 5 "$log")"
grep "session [0-9]* from .* failed" "$log" | grep -q "the disk or file system stalled" ||
	fail "the server's session did not blame its disk: $(grep 'session' "$log")"
wait_for_no_temp ext 20 || fail "temporaries left: $(find ext -name '.railcp-tmp-*')"
[ ! -e ext/big ] || fail "the cut file is under its final name"
capture "$RAILCP" one 127.0.0.1:one
[ "$rc" -eq 0 ] || fail "the server did not serve a push after its disk came back: $err"
cmp one ext/one || fail "the push after the disk came back differs"
stop_server
server_pid=
! grep -q "Sanitizer" "$log" || fail "the server's log has a sanitizer report: $(cat "$log")"
exit 0
