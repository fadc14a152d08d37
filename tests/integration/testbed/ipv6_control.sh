# The control connection over IPv6 with the data over real verbs (issue 29
# item 4 asked for it in the testbed as well as natively): a keyless server
# on ::1 takes a tree pushed to [::1]: over the guest's RDMA rails and gives
# it back to a pull, naming its peer ::1; a keyed server without --listen
# listens on both families on one port and serves a push to [::1] and one
# to 127.0.0.1, each over RDMA, naming each peer as the user wrote it (never
# ::ffff:127.0.0.1); bench takes [::1]:PORT. The guest is the testbed's own:
# it has ::1, so a missing one is a failure here, not a skip.
. tests/integration/lib.sh
need_rdma
/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' ||
	fail "the testbed guest has no IPv6 loopback (::1 cannot be bound)"
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir -p root back src/d
echo hello >src/d/small
head -c $((3 * 1048576 + 7)) /dev/urandom >src/big

# json FILE KEY: one key of a --json summary.
json() { /usr/bin/python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# Keyless, on ::1: a push and a pull of a tree, over verbs.
start_server serve6.log --listen ::1 --port 7490 --root "$dir/root"
grep -q "serving on ::1 port 7490" serve6.log || fail "not serving on ::1: $(cat serve6.log)"
"$RAILCP" --port 7490 -r --json src '[::1]:' >push.json 2>push.err || fail "push to [::1]: $(cat push.err)"
[ "$(json push.json transport)" = rdma ] || fail "the push to [::1] did not go over RDMA: $(cat push.json)"
diff -r src root/src || fail "the tree pushed to [::1] differs"
"$RAILCP" --port 7490 -r '[::1]:src' back/ 2>pull.err || fail "pull from [::1]: $(cat pull.err)"
diff -r src back/src || fail "the tree pulled from [::1] differs"
grep -q "session 1 from ::1: push" serve6.log || fail "the server does not name ::1: $(cat serve6.log)"
stop_server

# Keyed, no --listen: IPv6 and IPv4 on one port.
head -c 32 /dev/urandom | base64 >key
chmod 600 key
start_server serve46.log --port 7491 --root "$dir/root" --key-file "$dir/key"
grep -q "serving on every address, IPv6 and IPv4, port 7491" serve46.log ||
	fail "a keyed server does not listen on both families: $(cat serve46.log)"
for to in '[::1]' 127.0.0.1; do
	"$RAILCP" --port 7491 --key-file key --json src/big "$to:keyed-$to" >k.json 2>k.err ||
		fail "keyed push to $to: $(cat k.err)"
	[ "$(json k.json transport)" = rdma ] || fail "the keyed push to $to did not go over RDMA"
	cmp src/big "root/keyed-$to" || fail "the keyed push to $to differs"
done
capture "$RAILCP" bench '[::1]:7491' --key-file key --bytes 4M
[ "$rc" -eq 0 ] || fail "bench [::1]:7491: $err"
grep -q "from ::1: push" serve46.log && grep -q "from 127.0.0.1: push" serve46.log ||
	fail "the server does not name both peers as written: $(cat serve46.log)"
grep -q "ffff" serve46.log && fail "the server names an IPv4 peer as IPv6-mapped: $(cat serve46.log)"
stop_server
echo "control over ::1 and dual-stack, data over verbs: push, pull, keyed pushes to [::1] and 127.0.0.1, bench [::1]:PORT"
rm -rf "$dir"
exit 0
