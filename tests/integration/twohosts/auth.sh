# Across hosts, a sender with the wrong key is refused with one line on
# stderr and a non-zero status, one with none refuses to connect to another
# host at all, and the server keeps serving: a sender with the right key
# then succeeds.
. tests/integration/lib.sh
need_two_hosts
port=7513
start_server_on b srv --port $port
log=$(job_file b srv err)
grep -Eq "serving on (0\.0\.0\.0|every address, IPv6 and IPv4,) port $port " "$log" || fail "$(cat "$log")"

other=$(head -c 32 /dev/urandom | base64)
capture tb on a env RAILCP_KEY="$other" "$RAILCP" bench b:$port --bytes 4M
expect_one_line_error "bench from a with the wrong key"
case "$err" in *"key"*) ;; *) fail "$err" ;; esac
echo "wrong key: $err"

# Without a key a client talks to no other host: it does not even connect.
capture tb on a env -u RAILCP_KEY "$RAILCP" bench b:$port --bytes 4M
expect_one_line_error "bench from a without a key"
case "$err" in *"no key, and b is not this host"*) ;; *) fail "$err" ;; esac
echo "no key: $err"

capture tb on a "$RAILCP" bench b:$port --bytes 4M
[ "$rc" -eq 0 ] || fail "bench with the right key after refused ones exited $rc: $err"
[ "$(grep -c 'failed' "$log")" -eq 1 ] || fail "expected one refused session: $(cat "$log")"
[ "$(grep -c ': bench done, ' "$log")" -eq 1 ] || fail "server log: $(cat "$log")"
stop_server_on b srv
