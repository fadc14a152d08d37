# A source file written to while railcp reads it, over real verbs: the copy
# must end with one line and exit status 1, and the receiver must never
# put what it got under the final name (it would be neither the old file
# nor the new). Each case starts a slow push (one QP, 64 KiB chunks) of 128
# MiB, waits until the receiver's temporary holds 8 MiB, then (with 120 MiB
# still to go, seconds even on an idle host, so the change cannot come
# after the copy ended; with 48 MiB a loaded CI host once missed it):
# (a) appends to the source (grown);
# (b) cuts it to 16 MiB (truncated);
# (c) rewrites 1 MiB in place (same size, a new mtime);
# and (d) a pull whose server's source grows. After each, no temporary is
# left and the server takes the next copy.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root back
log=serve.log
size=$((128 << 20))
slow="--qps-per-rail 1 --rails rxe0:1 --chunk 64K"

# The temporary beneath $1 holds at least 8 MiB (tmpfs: its blocks are the bytes written).
eight_mib() {
	find "$1" -name '.railcp-tmp-*' -printf '%b\n' | awk '$1 * 512 >= 8388608 { f = 1 } END { exit !f }'
}

# changed LABEL DIR ACTION PATTERN CMD...: run CMD (a copy into DIR) in the
# background, do ACTION once 8 MiB landed, expect one line matching PATTERN.
changed() {
	_label=$1 _dir=$2 _action=$3 _pattern=$4
	shift 4
	"$@" >out 2>err &
	_pid=$!
	wait_until 60 eight_mib "$_dir" || fail "$_label: the copy never reached 8 MiB"
	sh -c "$_action" || fail "$_label: cannot change the source"
	wait $_pid
	rc=$? err=$(cat err)
	expect_one_line_error "$_label"
	[ "$rc" -eq 1 ] || fail "$_label: exit status $rc, not 1: $err"
	case "$err" in *$_pattern*) ;; *) fail "$_label: the error does not say the source changed: $err" ;; esac
	echo "$_label: $err"
	wait_for_no_temp "$_dir" 20 || fail "$_label: a temporary was left: $(ls -A "$_dir")"
	[ -z "$(ls "$_dir")" ] || fail "$_label: something is under a final name: $(ls -l "$_dir")"
}

# served: the server takes the next small push.
served() {
	capture "$RAILCP" small 127.0.0.1:small
	[ "$rc" -eq 0 ] || fail "the server did not serve a copy after $1: $err"
	rm -f root/small
}

head -c 65536 /dev/urandom >small
start_server "$log" --root "$dir/root"

head -c $size /dev/urandom >src
changed "grown" root "head -c 4096 /dev/urandom >>src" "src changed while it was being sent" \
	"$RAILCP" $slow src 127.0.0.1:src
served "a source that grew"

head -c $size /dev/urandom >src
changed "truncated" root "truncate -s 16M src" "src" "$RAILCP" $slow src 127.0.0.1:src
case "$err" in *"got shorter"* | *"changed while it was being sent"*) ;;
*) fail "truncated: the error does not say the source got shorter: $err" ;; esac
served "a source that was cut short"

head -c $size /dev/urandom >src
changed "rewritten" root "dd if=/dev/urandom of=src bs=1M count=1 seek=40 conv=notrunc status=none" \
	"src changed while it was being sent" "$RAILCP" $slow src 127.0.0.1:src
served "a source rewritten in place"

head -c $size /dev/urandom >root/pullme
changed "pull, grown" back "head -c 4096 /dev/urandom >>root/pullme" \
	"the server says: " "$RAILCP" $slow 127.0.0.1:pullme back/
case "$err" in *"changed while it was being sent"*) ;; *) fail "pull, grown: $err" ;; esac
rm root/pullme
served "a pull whose source grew"
stop_server
rm -rf "$dir"
exit 0
