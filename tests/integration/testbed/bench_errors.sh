# Errors a user can act on: no server, a foreign peer on either side, an
# older protocol version, a low memlock limit; the server survives them all.
. tests/integration/lib.sh
need_rdma
log=$(mktemp)

capture "$RAILCP" bench 127.0.0.1:7471 --bytes 1M
expect_one_line_error "bench without a server"
case "$err" in *"cannot reach a railcp server at 127.0.0.1 port 7471"*) ;; *) fail "$err" ;; esac

start_server "$log" --port 7472

# A client that is not railcp, and one that speaks another version.
/usr/bin/python3 - <<'PY' || fail "foreign clients were not refused clearly"
import json, socket, struct

def frame(s):
    s.settimeout(10)
    f = s.makefile("rb")
    n = struct.unpack(">I", f.read(4))[0]
    return json.loads(f.read(n))

s = socket.create_connection(("127.0.0.1", 7472))
s.sendall(b"GET / HTTP/1.0\r\n\r\n")
msg = frame(s)
assert msg["type"] == "error" and "does not speak the railcp protocol" in msg["message"], msg
s = socket.create_connection(("127.0.0.1", 7472))
hello = json.dumps({"proto": "railcp", "version": 99, "type": "hello"}).encode()
s.sendall(struct.pack(">I", len(hello)) + hello)
msg = frame(s)
assert msg["type"] == "error" and "version 99" in msg["message"], msg
print("foreign and old clients refused:", msg["message"])
PY
wait_for_line "session 2 from .* failed: the peer speaks railcp protocol version 99" 10 "$log" ||
	fail "server log: $(cat "$log")"

# A server that is not railcp (it says when it listens, and gives up after 60 s).
ready=$(mktemp -u)
/usr/bin/python3 -c '
import socket, sys
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 7473)); l.listen(1); l.settimeout(60)
open(sys.argv[1], "w").close()
c, _ = l.accept(); c.settimeout(60); c.recv(4096)
c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n"); c.close()
' "$ready" &
fake=$!
wait_for_file "$ready" 30 || fail "the fake server did not start"
capture "$RAILCP" bench 127.0.0.1:7473 --bytes 1M
wait $fake
rm -f "$ready"
expect_one_line_error "bench to a foreign server"
case "$err" in *"does not speak the railcp protocol"*) ;; *) fail "$err" ;; esac

# Too little locked memory: one sentence naming ulimit -l, before any registration.
# (setpriv: root's CAP_IPC_LOCK would let it pin past the limit.)
capture setpriv --bounding-set -ipc_lock sh -c "ulimit -l 64; exec \"$RAILCP\" bench 127.0.0.1:7472 --bytes 1M"
expect_one_line_error "bench with ulimit -l 64"
case "$err" in *"ulimit -l"*) ;; *) fail "$err" ;; esac

# A sender may not make the server allocate beyond its budget (32 MiB per
# worker by default): 64 MiB chunks, of which not one stripe fits, are
# refused in words (fewer stripes would still be taken: host/tcp_buffer).
capture "$RAILCP" bench 127.0.0.1:7472 --bytes 64M --chunk 64M --qps-per-rail 16
expect_one_line_error "bench beyond the server's buffer budget"
case "$err" in *"1 stripe of 65536 KiB chunks needs 128 MiB of slots"*"give the server a larger --buffer-mib") ;;
*) fail "$err" ;; esac

# Still serving.
capture "$RAILCP" bench 127.0.0.1:7472 --bytes 4M --json
[ "$rc" -eq 0 ] || fail "the server stopped serving after bad peers: $err"
stop_server
rm -f "$log"
