# A server whose --buffer-mib holds fewer stripes than a push asks for, over
# TCP on 127.0.0.1: it takes as many as give 2 slots each and the copy goes
# on over them (the server's log, the client's notice, the summary and
# --json say how many); a buffer too small for one stripe refuses the
# session in one line; a client's own small buffer plans fewer stripes; a
# --max-memory that holds fewer stripes than the buffer trims them the same
# way. railcp bench's --json says the stripes used per rail, and those asked.
. tests/integration/lib.sh
server_tmp
mkdir -p "$tmp/root"
head -c $((9 * 1024 * 1024 + 17)) /dev/urandom >"$tmp/file"
tcp="--transport tcp --rails lo --port $port"

# 8 MiB: 4 stripes of 1 MiB chunks with 2 slots each, of the 8 asked for.
: >"$tmp/serve.log"
# --max-memory 1G: the buffer binds, not RLIMIT_MEMLOCK's default budget without CAP_IPC_LOCK.
start_server "$tmp/serve.log" --transport tcp --rails lo --port "$port" --root "$tmp/root" \
	--buffer-mib 8 --max-memory 1G
# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp --qps-per-rail 8 --chunk 1M --json "$tmp/file" 127.0.0.1:a
[ "$rc" -eq 0 ] || fail "a push of 8 stripes to a server that holds 4: $err"
cmp "$tmp/file" "$tmp/root/a" || fail "the pushed file differs"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["stripes"] == 4 and j["slots_per_stripe"] == 2, (j["stripes"], j["slots_per_stripe"])
lo = [r for r in j["rails"] if r["name"] == "lo:1"]
assert len(lo) == 1 and lo[0]["stripes"] == 4 and not lo[0]["left_out"], j["rails"]
assert lo[0]["bytes"] == j["bytes"] == 9 * 1024 * 1024 + 17, (lo[0]["bytes"], j["bytes"])
' || fail "--json does not say the 4 stripes the session used: $out"
case "$err" in *"lo:1: the server's buffer (--buffer-mib, --max-memory) holds no more stripes: 4 of its 8 stripes left out"*) ;;
*) fail "the client does not say why 4 stripes were left out: $err" ;; esac
grep -q "the buffer (--buffer-mib) holds 4 of the client's 8 stripes, 2 slots of 1024 KiB each" \
	"$tmp/serve.log" || fail "the server does not say it took 4 stripes: $(cat "$tmp/serve.log")"
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --qps-per-rail 8 --chunk 1M "$tmp/file" 127.0.0.1:b
[ "$rc" -eq 0 ] || fail "the same push without --json: $err"
case "$out" in *"4 stripes (TCP connections), 2 slots of 1.0 MiB per stripe"*) ;;
*) fail "the summary does not say 4 stripes: $out" ;; esac
cmp "$tmp/file" "$tmp/root/b" || fail "the second pushed file differs"

# Chunks of 8 MiB need 16 MiB for one stripe: one line, exit 1, nothing left.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --qps-per-rail 8 --chunk 8M "$tmp/file" 127.0.0.1:c
expect_one_line_error "a push whose one stripe the server cannot hold"
[ "$rc" -eq 1 ] || fail "a server too small for one stripe: exit status $rc, not 1"
case "$err" in *"1 stripe of 8192 KiB chunks needs 16 MiB of slots on the node "*" worker, which may use 8 MiB: use a smaller --chunk, or give the server a larger --buffer-mib") ;;
*) fail "a server too small for one stripe: $err" ;; esac
[ ! -e "$tmp/root/c" ] || fail "a refused push left its file"
[ "$(find "$tmp/root" -name '.*' | wc -l)" -eq 0 ] || fail "a refused push left a temporary"

# The client's own --buffer-mib: 2 of its 8 stripes, said, and the copy goes on.
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --qps-per-rail 8 --chunk 1M --buffer-mib 4 --json "$tmp/file" 127.0.0.1:d
[ "$rc" -eq 0 ] || fail "a push whose own buffer holds 2 of its 8 stripes: $err"
printf '%s' "$out" | python3 -c '
import json, sys
assert json.load(sys.stdin)["stripes"] == 2
' || fail "--json does not say the client's 2 stripes: $out"
case "$err" in *"this side's buffer (--buffer-mib) holds 2 of the 8 stripes planned"*) ;;
*) fail "the client does not say it planned 2 stripes: $err" ;; esac
cmp "$tmp/file" "$tmp/root/d" || fail "the file pushed over 2 stripes differs"

# railcp bench to it: --json's qps_per_rail is the 4 used, beside the 8 asked.
# shellcheck disable=SC2086
capture "$RAILCP" bench $tcp --qps-per-rail 8 --chunk 1M --bytes 16M --json 127.0.0.1
[ "$rc" -eq 0 ] || fail "a bench of 8 stripes to a server that holds 4: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert (j["stripes"], j["qps_per_rail"], j["qps_per_rail_asked"]) == (4, 4, 8), j
' || fail "bench --json does not say 4 stripes used of the 8 asked: $out"
stop_server

# --max-memory 4M under a buffer of 64 MiB: 2 stripes of 1 MiB chunks, not a refusal.
: >"$tmp/serve2.log"
start_server "$tmp/serve2.log" --transport tcp --rails lo --port "$port" --root "$tmp/root" \
	--buffer-mib 64 --max-memory 4M
# shellcheck disable=SC2086
capture "$RAILCP" $tcp --qps-per-rail 8 --chunk 1M --json "$tmp/file" 127.0.0.1:e
[ "$rc" -eq 0 ] || fail "a push of 8 stripes to a server whose --max-memory holds 2: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["stripes"] == 2 and j["slots_per_stripe"] == 2, (j["stripes"], j["slots_per_stripe"])
' || fail "--json does not say the 2 stripes --max-memory holds: $out"
cmp "$tmp/file" "$tmp/root/e" || fail "the file pushed under --max-memory differs"
grep -q "the buffer (its share of --max-memory) holds 2 of the client's 8 stripes" \
	"$tmp/serve2.log" || fail "the server does not say --max-memory took 2: $(cat "$tmp/serve2.log")"
stop_server
