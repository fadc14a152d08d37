# --transport auto, the default, on a host without RDMA, natively on
# 127.0.0.1 (the rail lo): auto means tcp here, so what this can show is
# the side of a mixed pair that has no RDMA. A server on auto serves tcp
# alone (its first line names no second transport); a client on auto and
# one on --transport tcp both push to it over TCP, with no line about
# going over tcp instead (that line is for a client that chose rdma: unit
# test test_session_agree plays the end with RDMA over the loopback
# fabric); a copy over a remote shell starts its far side with tcp when
# this side's auto chose tcp (it has no rdma to agree on: the far side's
# auto could pick an RDMA port it cannot use), as when tcp was given.
. tests/integration/lib.sh
server_tmp
if "$RAILCP" devices --transport rdma >/dev/null 2>&1; then
	skip "this host has RDMA: auto would choose rdma"
fi

mkdir -p "$tmp/root" "$tmp/src"
head -c $((1024 * 1024 + 7)) /dev/urandom >"$tmp/src/big"
echo small >"$tmp/src/small"

: >"$tmp/serve.log"
start_server "$tmp/serve.log" --transport auto --rails lo --port "$port" --root "$tmp/root"
grep -q "over tcp, rails: lo:1" "$tmp/serve.log" || fail "the server on auto does not say tcp: $(cat "$tmp/serve.log")"
! grep -q "and over tcp for a client" "$tmp/serve.log" ||
	fail "a server on auto without RDMA claims a second transport: $(cat "$tmp/serve.log")"

n=0
for t in "" "--transport auto" "--transport tcp"; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # $t is words
	capture "$RAILCP" $t --rails lo --port "$port" --json "$tmp/src/big" "127.0.0.1:big$n"
	[ "$rc" -eq 0 ] || fail "push with '$t' to a server on auto: $err"
	printf '%s' "$out" | python3 -c 'import json, sys; t = json.load(sys.stdin)["transport"]; assert t == "tcp", t' ||
		fail "push with '$t': not over tcp: $out"
	case "$err" in *"going over tcp instead"*) fail "push with '$t' says it went over tcp instead: $err" ;; esac
	cmp "$tmp/src/big" "$tmp/root/big$n" || fail "push with '$t': the file differs"
	rm -f "$tmp/root/big$n"
done
stop_server

# Over a remote shell: the far side's --transport is tcp, whether this side gave tcp or
# its auto chose it (on auto only when this side's auto chose rdma, which this host cannot show).
# shellcheck disable=SC2016 # $1 is the far side script's own
printf '#!/bin/sh\n# runs here, and keeps the far side command\nshift\nprintf "%%s\\n" "$1" >>"%s"\nexec sh -c "$1"\n' \
	"$tmp/far.log" >"$tmp/rsh"
chmod +x "$tmp/rsh"
for t in auto tcp; do
	: >"$tmp/far.log"
	capture "$RAILCP" -e "$tmp/rsh" --railcp-path "$RAILCP" --transport "$t" --rails lo \
		"$tmp/src/small" "127.0.0.1:$tmp/via-$t"
	[ "$rc" -eq 0 ] || fail "push over the remote shell with --transport $t: $err"
	cmp "$tmp/src/small" "$tmp/via-$t" || fail "push over the remote shell with --transport $t differs"
	grep -q -- "serve --ssh .*--transport tcp" "$tmp/far.log" ||
		fail "with --transport $t here, the far side was not started with --transport tcp: $(cat "$tmp/far.log")"
done
