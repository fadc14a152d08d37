# Profiles in the testbed: the saved plan loads back to the same plan, and a
# profile naming a rail this machine lacks is one error naming file and line.
. tests/integration/lib.sh
need_rdma

dir=${TESTBED_OUT:-/tmp}
prof=$dir/topo.profile
capture "$RAILCP" topo --json --save-profile "$prof"
[ "$rc" -eq 0 ] || fail "railcp topo --save-profile exited $rc: $err"
first=$out
capture "$RAILCP" topo --json --profile "$prof"
[ "$rc" -eq 0 ] || fail "railcp topo --profile exited $rc: $err"
printf '%s\n%s\n' "$first" "$out" | /usr/bin/python3 -c '
import json, sys
text = sys.stdin.read()
dec = json.JSONDecoder()
a, end = dec.raw_decode(text)
b, _ = dec.raw_decode(text[end:].lstrip())
def shape(doc):
    return [(w["node"], w["cpus"], w["buffer_bytes"], [(r["device"], r["port"], r["qps"]) for r in w["rails"]])
            for w in doc["plan"]["workers"]]
assert shape(a) == shape(b), (shape(a), shape(b))
print("profile: round trip keeps %s" % shape(a))
' || fail "the profile does not load back to the same plan"

line=$(grep -n '^rails = ' "$prof" | head -n 1 | cut -d: -f1)
[ -n "$line" ] || fail "no rails line in $prof"
sed -i "${line}s/\$/ mlx5_9:1/" "$prof"
capture "$RAILCP" topo --profile "$prof"
expect_one_line_error "railcp topo --profile with a missing rail"
case "$err" in "railcp: $prof:$line: rail mlx5_9:1 is not on this host") ;;
*) fail "unexpected error: $err" ;; esac
