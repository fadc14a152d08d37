# The control connection over IPv6, natively over --transport tcp (the data
# stripes stay on lo's IPv4 address): a keyless server on ::1 takes a tree
# pushed to [::1]: and user@[::1]: and gives it back to a pull; a keyed
# server without --listen serves IPv6 and IPv4 clients on one port (and a
# client without a key is told it needs one, at either address), saying
# each peer as the user knows it (127.0.0.1, not ::ffff:127.0.0.1), in its
# log and its --json; a name that resolves to ::1 alone is dialed; bench
# takes [::1]:PORT; the far side started over a remote shell listens on
# the IPv6 address SSH_CONNECTION names; and addresses that cannot be one
# are refused in one line, exit 2, nothing written.
. tests/integration/lib.sh
python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null ||
	skip "this host has no IPv6 loopback (::1 cannot be bound): nothing to test the control connection over IPv6 on"
tmp=$(mktemp -d)
trap 'kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME="$tmp" LC_ALL=C
unset RAILCP_KEY RAILCP_RSH
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::", 0)); print(s.getsockname()[1])')
tcp="--transport tcp --rails lo --port $port"

mkdir -p "$tmp/root" "$tmp/src/d"
echo hello >"$tmp/src/d/small"
head -c $((1024 * 1024 + 7)) /dev/urandom >"$tmp/src/big"

# Without a key: loopback only, ::1 as 127.0.0.1, the peer's user told by sock_diag.
: >"$tmp/serve.log"
# shellcheck disable=SC2086 # $tcp is words
start_server "$tmp/serve.log" $tcp --listen ::1 --root "$tmp/root"
grep -q "serving on ::1 port $port" "$tmp/serve.log" || fail "not serving on ::1: $(cat "$tmp/serve.log")"
# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp -r "$tmp/src" '[::1]:'
[ "$rc" -eq 0 ] || fail "push to [::1]: without a key: $err"
diff -r "$tmp/src" "$tmp/root/src" || fail "the tree pushed to [::1] differs"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp "$tmp/src/big" "$(id -un)@[::1]:as-user"
[ "$rc" -eq 0 ] || fail "push to user@[::1]:as-user: $err"
cmp "$tmp/src/big" "$tmp/root/as-user" || fail "user@[::1]:as-user differs"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r '[::1]:src' "$tmp/back/"
[ "$rc" -eq 0 ] || fail "pull from [::1]:src: $err"
diff -r "$tmp/src" "$tmp/back/src" || fail "the tree pulled from [::1] differs"
grep -q "session 1 from ::1: push" "$tmp/serve.log" || fail "the server does not name ::1: $(cat "$tmp/serve.log")"
stop_server

# With a key and no --listen: both families on one port.
RAILCP_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RAILCP_KEY
: >"$tmp/serve.log"
# --name: the clients alone may know the name below (a mount namespace's).
# shellcheck disable=SC2086
"$RAILCP" serve $tcp --root "$tmp/root" --json --name railcp-v6only.test \
	>"$tmp/sessions.json" 2>"$tmp/serve.log" &
server_pid=$!
wait_until 20 grep -q "serving on " "$tmp/serve.log" || fail "railcp serve is not ready: $(cat "$tmp/serve.log")"
grep -q "serving on every address, IPv6 and IPv4, port $port" "$tmp/serve.log" ||
	fail "a keyed server does not listen on both families: $(cat "$tmp/serve.log")"
for to in '[::1]' 127.0.0.1 localhost; do
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp "$tmp/src/d/small" "$to:keyed-$to"
	[ "$rc" -eq 0 ] || fail "push to $to: on a dual-stack server: $err"
	cmp "$tmp/src/d/small" "$tmp/root/keyed-$to" || fail "the push to $to: differs"
done
capture "$RAILCP" bench "[::1]:$port" --transport tcp --rails lo --bytes 1M
[ "$rc" -eq 0 ] || fail "bench [::1]:$port: $err"
# A client without a key checks that the listener is its user's: on this
# server's IPv6 socket too, reached at 127.0.0.1 (sock_diag answers with
# the IPv6 socket, its addresses mapped); the server then asks for the key.
for to in 127.0.0.1 '[::1]'; do
	# shellcheck disable=SC2086
	capture env -u RAILCP_KEY "$RAILCP" $tcp "$tmp/src/d/small" "$to:no-key"
	expect_one_line_error "a push without a key to $to"
	case "$err" in *"requires a key"*) ;; *) fail "a push without a key to $to: $err" ;; esac
done

# A name that resolves to ::1 alone: in a mount namespace of our own with
# such an /etc/hosts, else ip6-localhost where this host's names it.
name='' wrap=''
printf '::1 railcp-v6only.test\n' >"$tmp/hosts"
cat >"$tmp/in-ns" <<'EOF'
#!/bin/sh
# "$@" in a mount namespace of its own whose /etc/hosts is $HOSTS
exec unshare -m sh -c 'mount --bind "$HOSTS" /etc/hosts && exec "$@"' sh "$@"
EOF
chmod +x "$tmp/in-ns"
if HOSTS="$tmp/hosts" "$tmp/in-ns" getent ahosts railcp-v6only.test >/dev/null 2>&1; then
	name=railcp-v6only.test wrap="$tmp/in-ns"
elif [ "$(getent ahostsv6 ip6-localhost | awk '{ print $1; exit }')" = ::1 ] &&
	[ -z "$(getent ahostsv4 ip6-localhost)" ]; then
	name=ip6-localhost
fi
if [ -n "$name" ]; then
	# shellcheck disable=SC2086 # $wrap and $tcp are words
	HOSTS="$tmp/hosts" capture $wrap "$RAILCP" $tcp "$tmp/src/d/small" "$name:by-name"
	[ "$rc" -eq 0 ] || fail "push to $name (::1 alone): $err"
	cmp "$tmp/src/d/small" "$tmp/root/by-name" || fail "the push to $name differs"
else
	echo "note: no name resolves to ::1 alone here (no mount namespace, no ip6-localhost): that case is left out"
fi
kill "$server_pid"
wait "$server_pid"
python3 - "$tmp/sessions.json" <<'EOF' || fail "serve --json does not say the peers as they are: $(cat "$tmp/sessions.json")"
import json, sys
peers = [json.loads(line)["peer"] for line in open(sys.argv[1]) if line.strip()]
assert "::1" in peers and "127.0.0.1" in peers, peers
assert not any(p.startswith("::ffff:") for p in peers), peers
EOF
grep -q "from 127.0.0.1" "$tmp/serve.log" || fail "the log does not say 127.0.0.1: $(cat "$tmp/serve.log")"
! grep -q "::ffff:" "$tmp/serve.log" || fail "the log says a mapped address: $(cat "$tmp/serve.log")"

# Over a remote shell: the far side listens where SSH_CONNECTION says ssh reached it.
unset RAILCP_KEY
cat >"$tmp/fakessh" <<'EOF'
#!/bin/sh
# ssh's stand-in: the far side runs here, reached (says SSH_CONNECTION) on ::1
[ "$1" = -- ] && shift
shift
SSH_CONNECTION="::1 50000 ::1 22" exec sh -c "$*"
EOF
chmod +x "$tmp/fakessh"
capture "$RAILCP" -v -e "$tmp/fakessh" --railcp-path "$RAILCP" --transport tcp --rails lo \
	"$tmp/src/d/small" "[::1]:$tmp/via-ssh"
[ "$rc" -eq 0 ] || fail "push over the remote shell to [::1]: $err"
cmp "$tmp/src/d/small" "$tmp/via-ssh" || fail "the push over the remote shell differs"
case "$err" in *"the far side listens on ::1 port"*) ;; *) fail "the far side does not listen on ::1: $err" ;; esac

# What cannot be an address: one line, exit 2, nothing written.
for dst in ':x' "$(id -un)@:x" '[]:x' '[::1:x' "$(id -un)@[::1]" '-oProxyCommand=x:y' 'a[b:x'; do
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp "$tmp/src/d/small" "$dst"
	expect_one_line_error "railcp ... $dst"
	[ "$rc" -eq 2 ] || fail "'$dst': exit status $rc, not 2"
done
for h in ':7' '-h' '[::1' '[::1]x' 'h:1:'; do
	capture "$RAILCP" bench --transport tcp --rails lo -- "$h"
	expect_one_line_error "railcp bench $h"
	[ "$rc" -eq 2 ] || fail "bench '$h': exit status $rc, not 2"
done
# shellcheck disable=SC2086
capture "$RAILCP" serve $tcp --listen '[::1]'
expect_one_line_error "railcp serve --listen [::1]"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --bind ::1:x "$tmp/src/d/small" '[::1]:y'
expect_one_line_error "railcp --bind ::1:x"
[ "$rc" -eq 2 ] || fail "--bind ::1:x: exit status $rc, not 2"
# shellcheck disable=SC2012 # names made here, without newlines
[ "$(ls "$tmp/root" | tr '\n' ' ')" = "as-user ${name:+by-name }keyed-127.0.0.1 keyed-[::1] keyed-localhost src " ] ||
	fail "the root holds something no copy made: $(ls "$tmp/root")"
