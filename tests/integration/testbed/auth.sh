# Sessions prove knowledge of a shared key both ways before anything is
# allocated; without a key the server listens on loopback only.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
log=$dir/serve.log
head -c 32 /dev/urandom | base64 >"$dir/key"
head -c 32 /dev/urandom | base64 >"$dir/other"
chmod 600 "$dir/key" "$dir/other"

# Keyless: loopback only, and it says so; a non-loopback --listen is refused.
start_server "$log" --port 7480
grep -q "serving on 127.0.0.1 port 7480 (no key configured: loopback only)" "$log" || fail "$(cat "$log")"
stop_server
capture "$RAILCP" serve --port 7481 --listen 198.18.0.1
expect_one_line_error "serve without a key on a rail address"
case "$err" in *"no key is configured"*"loopback"*) ;; *) fail "$err" ;; esac

# A key shorter than 32 bytes is refused, with how to make one.
printf 'correct horse battery staple\n' >"$dir/short" && chmod 600 "$dir/short"
capture "$RAILCP" serve --port 7481 --key-file "$dir/short"
expect_one_line_error "serve with a 28-byte key"
case "$err" in *"only 28 bytes"*"at least 32"*"head -c 32 /dev/urandom"*) ;; *) fail "$err" ;; esac

# A key file others may read is refused.
cp "$dir/key" "$dir/open" && chmod 644 "$dir/open"
capture "$RAILCP" serve --port 7481 --key-file "$dir/open"
expect_one_line_error "serve with a 0644 key file"
case "$err" in *"chmod 600"*) ;; *) fail "$err" ;; esac

start_server "$log" --port 7482 --key-file "$dir/key"
grep -Eq "serving on (0\.0\.0\.0|every address, IPv6 and IPv4,) port 7482 \(senders must prove the key from $dir/key\)" "$log" || fail "$(cat "$log")"

capture "$RAILCP" bench 127.0.0.1:7482 --bytes 4M --key-file "$dir/key"
[ "$rc" -eq 0 ] || fail "bench with the right key: $err"
capture env RAILCP_KEY="$(cat "$dir/key")" "$RAILCP" bench 127.0.0.1:7482 --bytes 4M
[ "$rc" -eq 0 ] || fail "bench with the key in RAILCP_KEY: $err"

capture "$RAILCP" bench 127.0.0.1:7482 --bytes 4M --key-file "$dir/other"
expect_one_line_error "bench with the wrong key"
case "$err" in *"key"*) ;; *) fail "$err" ;; esac
echo "wrong key: $err"

capture "$RAILCP" bench 127.0.0.1:7482 --bytes 4M
expect_one_line_error "bench without a key"
case "$err" in *"requires a key"*) ;; *) fail "$err" ;; esac
echo "no key: $err"

# The server's answer to a hello is a bare challenge: nothing a stranger
# could test a guess of the key against. A forged proof is refused before
# the welcome (no rails, no memory), again with nothing that depends on the key.
# The protocol version this checkout speaks, from its own header.
version=$(sed -n 's/^#define ENG_PROTO_VERSION \([0-9]*\)$/\1/p' engine/session/proto.h)
[ -n "$version" ] || fail "no ENG_PROTO_VERSION in engine/session/proto.h"
RAILCP_PROTO_VERSION=$version /usr/bin/python3 - <<'PY' || fail "a forged proof was not refused"
import json, os, socket, struct

def send(s, m):
    b = json.dumps(m).encode()
    s.sendall(struct.pack(">I", len(b)) + b)

def recv(s):
    f = s.makefile("rb")
    n = struct.unpack(">I", f.read(4))[0]
    return json.loads(f.read(n))

s = socket.create_connection(("127.0.0.1", 7482)); s.settimeout(20)
send(s, {"proto": "railcp", "version": int(os.environ["RAILCP_PROTO_VERSION"]), "type": "hello", "job": "bench", "bytes": 1 << 20,
         "chunk": 1 << 20, "stripes": [{"addr": "198.18.0.1", "prefix": 24, "rail": "rxe0"}],
         "challenge": os.urandom(32).hex()})
m = recv(s)
assert m["type"] == "challenge" and sorted(m) == ["challenge", "type"], m
send(s, {"type": "proof", "proof": os.urandom(32).hex()})
m = recv(s)
assert m["type"] == "error" and sorted(m) == ["message", "type"] and "key" in m["message"], m
print("forged proof refused:", m["message"])
PY
[ "$(grep -c ': bench done, ' "$log")" -eq 2 ] || fail "server log: $(cat "$log")"
[ "$(grep -c 'failed' "$log")" -eq 3 ] || fail "expected three refused sessions: $(cat "$log")"
stop_server
rm -rf "$dir"
