# --json prints exactly one JSON object on stdout, failures included (issue
# 29, item 3): {"error": the sentence said on stderr, "exit": the exit
# status, ...} for devices, topo, bench and copies, usage errors too.
. tests/integration/lib.sh
mistakes_dir

# json_fails CODE KEY ARGS...: exit CODE, one line on stderr, and stdout one
# JSON object whose "error" is that line's sentence, whose "exit" is CODE,
# and which has KEY too (- for none).
json_fails() {
	code=$1 key=$2
	shift 2
	capture "$RAILCP" "$@"
	expect_one_line_error "$*"
	[ "$rc" -eq "$code" ] || fail "railcp $*: expected exit status $code, got $rc: $err"
	printf '%s' "$out" | python3 -c '
import json, sys
code, key, err = int(sys.argv[1]), sys.argv[2], sys.argv[3]
text = sys.stdin.read()
try:
    o = json.loads(text)
except ValueError as e:
    sys.exit("stdout is not one JSON value (%s): %r" % (e, text))
if not isinstance(o, dict):
    sys.exit("stdout is not a JSON object: %r" % text)
if o.get("exit") != code:
    sys.exit("\"exit\" is %r, not %d" % (o.get("exit"), code))
if not o.get("error") or not err.startswith("railcp: " + o["error"]):
    sys.exit("\"error\" %r is not the sentence on stderr: %r" % (o.get("error"), err))
if key != "-" and key not in o:
    sys.exit("no %r in %r" % (key, o))
' "$code" "$key" "$err" || fail "railcp $*: the JSON on stdout is wrong"
}

json_fails 2 - devices --json extra
json_fails 2 - bench h --json --bytes 0
json_fails 2 - --json -r dir
json_fails 2 - topo --json --topolgy x.xml
json_fails 2 - --json a.txt b.txt
json_fails 1 - topo --json --topology "$tmp/missing.xml"
json_fails 1 host bench h --json --key-file short.key
json_fails 1 direction --json missing.txt h:x
json_fails 1 direction --json dir h:x
json_fails 1 direction --json h:x "$tmp/no/such"
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
	json_fails 1 - devices --json --transport rdma
	json_fails 1 host bench h --json
	json_fails 1 direction --json -r dir h:x
	json_fails 1 direction h:x . --json
fi
# Without --json, nothing on stdout.
capture "$RAILCP" missing.txt h:x
[ "$rc" -eq 1 ] && [ -z "$out" ] || fail "without --json: exit status $rc, stdout: $out"
echo "json errors: one JSON object with the error and the exit status, for every command"
