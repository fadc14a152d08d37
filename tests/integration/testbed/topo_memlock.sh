# A memlock limit below the buffer pools fails before any allocation or
# registration, with one sentence that names `ulimit -l`; unless the process
# has CAP_IPC_LOCK, with which the kernel pins past the limit. The tests run
# as root: setpriv takes CAP_IPC_LOCK away where the limit must hold.
. tests/integration/lib.sh
need_rdma
nocap="setpriv --bounding-set -ipc_lock"

capture $nocap sh -c 'ulimit -l 64 && exec "$0" topo --check-buffers' "$RAILCP"
expect_one_line_error "railcp topo --check-buffers under ulimit -l 64"
case "$err" in
*"of locked memory but the limit is 64 KiB: raise it with 'ulimit -l unlimited'"*) ;;
*) fail "the error does not name the limit and ulimit -l: $err" ;;
esac
case "$out" in *"buffers:"*) fail "pools were allocated despite the low limit: $out" ;; esac

# A pool that fits the limit passes: the check compares, it does not just refuse.
capture $nocap sh -c 'ulimit -l 65536 && exec "$0" topo --check-buffers --buffer-mib 4' "$RAILCP"
[ "$rc" -eq 0 ] || fail "4 MiB pools under a 64 MiB limit failed: $err"

# With CAP_IPC_LOCK (root's) the limit does not apply: the pools are made and registered.
if [ "$(id -u)" = 0 ]; then
	capture sh -c 'ulimit -l 64 && exec "$0" topo --check-buffers' "$RAILCP"
	[ "$rc" -eq 0 ] || fail "root (CAP_IPC_LOCK) under ulimit -l 64 was refused: $err"
	case "$out" in *"buffers:"*) ;; *) fail "no pools reported with CAP_IPC_LOCK: $out" ;; esac
fi
echo "memlock: 64 KiB refused with the ulimit -l sentence, 4 MiB pools under 64 MiB accepted, CAP_IPC_LOCK passes"
