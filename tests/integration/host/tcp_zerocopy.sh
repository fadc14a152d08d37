# Zero-copy sends over TCP on 127.0.0.1 (RAILCP_TCP_ZEROCOPY=on at both
# ends, since to loopback auto sends plain): a tree pushed and pulled back
# whole (the client sends, then the server), keyless and keyed (every
# chunk sealed in its slot), -vv saying the ends send zero-copy; auto
# saying nothing of it to loopback; a bad value refused with one line
# before anything is sent, by a client as by a server. A kernel that
# refuses SO_ZEROCOPY on TCP sockets (test_tcp_zc skips there too) skips
# the round trips, after the rest ran: railcp then sends plain, silently.
. tests/integration/lib.sh
server_tmp
tcp="--transport tcp --rails lo --port $port"
mkdir -p "$tmp/root" "$tmp/src/d"
head -c $((9 * 1024 * 1024 + 77)) /dev/urandom >"$tmp/src/big"
head -c 5000 /dev/urandom >"$tmp/src/d/small"

# $1: keyless or keyed. A push and a pull with zero-copy at both ends.
round_trip() {
	: >"$tmp/serve.log"
	start_server "$tmp/serve.log" -vv --transport tcp --rails lo --port "$port" --root "$tmp/root"
	# shellcheck disable=SC2086 # $tcp is words
	capture "$RAILCP" $tcp -vv -r "$tmp/src/" 127.0.0.1:"$1"
	[ "$rc" -eq 0 ] || fail "$1 push with zero-copy: $err"
	case "$err" in *"zero-copy sends (MSG_ZEROCOPY)"*) ;; *) fail "$1 push: -vv names no zero-copy end: $err" ;; esac
	diff -r "$tmp/src" "$tmp/root/$1" || fail "the tree pushed $1 with zero-copy differs"
	# shellcheck disable=SC2086
	capture "$RAILCP" $tcp -r 127.0.0.1:"$1/" "$tmp/back-$1"
	[ "$rc" -eq 0 ] || fail "$1 pull with zero-copy: $err"
	diff -r "$tmp/src" "$tmp/back-$1" || fail "the tree pulled $1 with zero-copy differs"
	stop_server
	grep -q "zero-copy sends (MSG_ZEROCOPY)" "$tmp/serve.log" ||
		fail "$1 pull: the server's -vv names no zero-copy end: $(cat "$tmp/serve.log")"
}

# auto (unset) sends plain to loopback; a bad value is one line and exit 2.
unset RAILCP_TCP_ZEROCOPY
: >"$tmp/serve.log"
start_server "$tmp/serve.log" --transport tcp --rails lo --port "$port" --root "$tmp/root"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp -vv -r "$tmp/src/" 127.0.0.1:auto
[ "$rc" -eq 0 ] || fail "push on auto: $err"
case "$err" in *"zero-copy sends"*) fail "auto sent zero-copy to loopback: $err" ;; esac
diff -r "$tmp/src" "$tmp/root/auto" || fail "the tree pushed on auto differs"
# shellcheck disable=SC2086
capture env RAILCP_TCP_ZEROCOPY=yes "$RAILCP" $tcp -r "$tmp/src" 127.0.0.1:bad
expect_one_line_error "RAILCP_TCP_ZEROCOPY=yes"
[ "$rc" -eq 2 ] || fail "RAILCP_TCP_ZEROCOPY=yes exited $rc, not 2"
case "$err" in *"RAILCP_TCP_ZEROCOPY is 'yes': it takes auto, on or off"*) ;; *) fail "bad value: $err" ;; esac
[ ! -e "$tmp/root/bad" ] || fail "RAILCP_TCP_ZEROCOPY=yes wrote something"
stop_server
capture env RAILCP_TCP_ZEROCOPY=On "$RAILCP" serve --transport tcp --rails lo --port "$port" --root "$tmp/root"
expect_one_line_error "railcp serve with RAILCP_TCP_ZEROCOPY=On"
[ "$rc" -eq 2 ] || fail "railcp serve with RAILCP_TCP_ZEROCOPY=On exited $rc, not 2"

# SO_ZEROCOPY is 60 on Linux; a kernel without it on TCP: nothing more to test.
python3 -c 'import socket; socket.socket().setsockopt(socket.SOL_SOCKET, 60, 1)' 2>/dev/null ||
	skip "this kernel refuses SO_ZEROCOPY on TCP sockets: railcp sends plain here (test_tcp_zc skips too)"

export RAILCP_TCP_ZEROCOPY=on
round_trip keyless
RAILCP_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RAILCP_KEY
round_trip keyed
unset RAILCP_KEY
