# tools/bench/zerocopy-testbed.sh - railcp bench over TCP between the two
# testbed guests, plain sends against zero-copy (RAILCP_TCP_ZEROCOPY=off
# and on, at the sending end), each way, the two side by side in each round. Ratios
# only: the guests' CPU is emulated. Run from the top of the tree:
#   flock /tmp/railcp-testbed.lock tools/testbed/boot --hosts 2 -- \
#     env RAILCP=build/release/railcp ROUNDS=4 BYTES=64M sh tools/bench/zerocopy-testbed.sh
. tests/integration/lib.sh
need_two_hosts
port=7533
rounds=${ROUNDS:-4}
bytes=${BYTES:-64M}
TB_ENV="RAILCP_TCP_ZEROCOPY $TB_ENV"
export TB_ENV
start_server_on a srv --transport tcp --port $port
start_server_on b srv --transport tcp --port $port
# Whether the guests' kernel sends zero-copy or copies (the -vv debug lines).
export RAILCP_TCP_ZEROCOPY=on
capture tb on a "$RAILCP" bench -vv "b:$port" --transport tcp --bytes 16M
[ "$rc" -eq 0 ] || fail "bench a -> b with -vv exited $rc: $err"
printf 'zero-copy ends: %s; of them told the kernel copied: %s\n' \
	"$(printf '%s\n' "$err" | grep -c 'zero-copy sends (MSG_ZEROCOPY)')" \
	"$(printf '%s\n' "$err" | grep -c 'the kernel copied a zero-copy send')"
r=1
while [ $r -le "$rounds" ]; do
	for way in a:b b:a; do
		from=${way%:*} to=${way#*:}
		modes="off on"
		[ $((r % 2)) -eq 1 ] || modes="on off" # the order alternates, as load drifts
		for m in $modes; do
			export RAILCP_TCP_ZEROCOPY=$m
			capture tb on "$from" "$RAILCP" bench "$to:$port" --transport tcp --bytes "$bytes" --json
			[ "$rc" -eq 0 ] || fail "bench $from -> $to with zero-copy $m exited $rc: $err"
			printf 'round %d %s->%s %-3s %s Gb/s\n' "$r" "$from" "$to" "$m" \
				"$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["gbps"])')"
		done
	done
	r=$((r + 1))
done
stop_server_on a srv
stop_server_on b srv
