# railcp devices --transport rdma on a host without RDMA devices: one
# sentence, exit status 1 (without --transport it lists the IP interfaces
# instead: host/devices_ip.sh).
. tests/integration/lib.sh
ls /sys/class/infiniband/* >/dev/null 2>&1 && skip "this host has RDMA devices"
capture "$RAILCP" devices --transport rdma
expect_one_line_error railcp devices --transport rdma
[ "$rc" -eq 1 ] || fail "expected exit status 1, got $rc"
case "$err" in *"no RDMA device"*) ;; *) fail "unexpected message: $err" ;; esac
[ -z "$out" ] || fail "expected nothing on stdout, got: $out"
capture "$RAILCP" devices --transport rdma --json
expect_one_line_error railcp devices --transport rdma --json
case "$out" in *'"error": "no RDMA device'*'"exit": 1'*) ;; *) fail "expected the error as JSON on stdout, got: $out" ;; esac
case "$err" in *"rdma link add rxe0 type rxe netdev IF"*) ;; *) fail "the message does not say how to make a Soft-RoCE device: $err" ;; esac
