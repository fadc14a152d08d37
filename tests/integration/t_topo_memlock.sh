# A memlock limit below the buffer pools fails before any allocation or
# registration, with one sentence that names `ulimit -l`.
. tests/integration/lib.sh
need_rdma

capture sh -c 'ulimit -l 64 && exec "$0" topo --check-buffers' "$RAILCP"
expect_one_line_error "railcp topo --check-buffers under ulimit -l 64"
case "$err" in
*"of locked memory but the limit is 64 KiB: raise it with 'ulimit -l unlimited'"*) ;;
*) fail "the error does not name the limit and ulimit -l: $err" ;;
esac
case "$out" in *"buffers:"*) fail "pools were allocated despite the low limit: $out" ;; esac

# A pool that fits the limit passes: the check compares, it does not just refuse.
capture sh -c 'ulimit -l 65536 && exec "$0" topo --check-buffers --buffer-mib 4' "$RAILCP"
[ "$rc" -eq 0 ] || fail "4 MiB pools under a 64 MiB limit failed: $err"
echo "memlock: 64 KiB refused with the ulimit -l sentence, 4 MiB pools under 64 MiB accepted"
