# The fabric knobs in a profile (issue 26): railcp topo --save-profile writes
# those given, a copy, a bench and a server given --profile run with them
# (the summary, its --json and the server's ready line read them back), an
# option on the command line wins over the profile's value, and a bad value
# in the file is one line naming FILE:LINE, exit status 1, nothing written.
# Over TCP on 127.0.0.1 (tcp applies --tos as IP_TOS): no RDMA needed.
. tests/integration/lib.sh
server_tmp
prof="$tmp/tuned.profile"
mkdir -p "$tmp/root"
head -c $((1024 * 1024 + 3)) /dev/urandom >"$tmp/file"

capture "$RAILCP" topo --transport tcp --rails lo --tos 72 --ack-timeout 14 --retry-count 3 \
	--connect-timeout 5 --save-profile "$prof"
[ "$rc" -eq 0 ] || fail "topo --save-profile with knobs: $err"
for line in "tos = 72" "ack_timeout = 14" "retry_count = 3" "connect_timeout = 5" "rails = lo:1"; do
	grep -qx "$line" "$prof" || fail "the saved profile lacks '$line': $(cat "$prof")"
done

# The server takes the profile's knobs and says them; its own option wins.
: >"$tmp/serve.log"
start_server "$tmp/serve.log" --transport tcp --profile "$prof" --port "$port" \
	--root "$tmp/root" --retry-count 6
grep -q "fabric knobs: tos 72, ack_timeout 14, retry_count 6, connect_timeout 5 s" \
	"$tmp/serve.log" || fail "the server does not run with the profile's knobs: $(cat "$tmp/serve.log")"

# knobs TOS ACK RETRY CONNECT: the copy's or bench's --json on stdin reports them
# (CONNECT: the seconds each stripe's connection was given).
knobs() {
	python3 -c '
import json, sys
j = json.load(sys.stdin)
got = [j["tos"], j["ack_timeout"], j["retry_count"], j["connect_timeout"]]
want = [int(x) for x in sys.argv[1:]]
assert got == want, "tos, ack_timeout, retry_count, connect_timeout: %s, not %s" % (got, want)
' "$@"
}

capture "$RAILCP" --transport tcp --profile "$prof" --port "$port" --json "$tmp/file" 127.0.0.1:a
[ "$rc" -eq 0 ] || fail "push with --profile: $err"
printf '%s' "$out" | knobs 72 14 3 5 || fail "the push does not use the profile's knobs: $out"
cmp "$tmp/file" "$tmp/root/a" || fail "the pushed file differs"

capture "$RAILCP" --transport tcp --profile "$prof" --port "$port" --json --tos 40 \
	--retry-count 7 --connect-timeout 8 "$tmp/file" 127.0.0.1:b
[ "$rc" -eq 0 ] || fail "push with --profile and options: $err"
printf '%s' "$out" | knobs 40 14 7 8 || fail "the options do not win over the profile's: $out"

capture "$RAILCP" bench --transport tcp --profile "$prof" --port "$port" --bytes 4M --json \
	--ack-timeout 20 127.0.0.1
[ "$rc" -eq 0 ] || fail "bench with --profile: $err"
printf '%s' "$out" | knobs 72 20 3 5 || fail "the bench does not merge the profile's knobs: $out"

# The summary says the connect timeout too, where it is not the default.
capture "$RAILCP" --transport tcp --profile "$prof" --port "$port" "$tmp/file" 127.0.0.1:e
[ "$rc" -eq 0 ] || fail "push with --profile, no --json: $err"
case "$out" in *"each stripe connects within 5 s (--connect-timeout, at most --timeout)"*) ;;
*) fail "the summary does not say the profile's connect_timeout: $out" ;; esac

# Without a profile nothing is set: the defaults, as before.
capture "$RAILCP" --transport tcp --rails lo --port "$port" --json "$tmp/file" 127.0.0.1:c
[ "$rc" -eq 0 ] || fail "push without a profile: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["tos"] is None and j["ack_timeout"] is None and j["retry_count"] == 7, j
assert j["connect_timeout"] == 10, j["connect_timeout"]
' || fail "a push without a profile reports knobs: $out"

# A bad value: one line naming the file and the line, exit 1, nothing copied.
sed 's/^tos = 72$/tos = 256/' "$prof" >"$tmp/bad.profile"
n=$(grep -n '^tos = ' "$tmp/bad.profile" | cut -d: -f1)
capture "$RAILCP" --transport tcp --profile "$tmp/bad.profile" --port "$port" "$tmp/file" 127.0.0.1:d
expect_one_line_error "a profile with tos = 256"
[ "$rc" -eq 1 ] || fail "a bad profile: exit status $rc, not 1"
[ "$err" = "railcp: $tmp/bad.profile:$n: tos: '256' is not a traffic class from 0 to 255" ] ||
	fail "a bad tos: $err"
[ ! -e "$tmp/root/d" ] || fail "a copy with a bad profile wrote its file"
sed 's/^connect_timeout = 5$/connect_timeout = 0/' "$prof" >"$tmp/bad.profile"
capture "$RAILCP" bench --transport tcp --profile "$tmp/bad.profile" --port "$port" 127.0.0.1
expect_one_line_error "a profile with connect_timeout = 0"
case "$err" in *"bad.profile:"*": connect_timeout: '0' is not a number of seconds from 1 to 3600") ;;
*) fail "a bad connect_timeout: $err" ;; esac
stop_server
