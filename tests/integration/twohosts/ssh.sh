# Copies over ssh across two hosts, with only sshd running on b: sshd is
# started on b by this test (its host key and authorized_keys in b's
# tmpfs), and a copy from a with no railcp serve on b starts 'railcp serve
# --ssh' there through ssh. A tree pushed with -e and pulled back, a push
# that falls back to ssh when nothing answers on b's port (RAILCP_RSH), no
# railcp process left on b after each, and ssh's own failure in one line.
. tests/integration/lib.sh
need_two_hosts
command -v /usr/sbin/sshd >/dev/null || skip "no sshd (openssh-server): run tools/setup"
dir=$(shared_dir ssh)
cd "$dir" || fail "cannot enter $dir"
railcp=$RAILCP # absolute (tests/integration/run): b runs it from root's home
run=/run/railcp-x-ssh # tmpfs in each guest: keys must not be readable by others

# b: sshd on the management link alone, taking a's key (its keys in b's tmpfs).
start_sshd_on b $run

no_far_side_on_b() { ! tb on b pgrep -f 'railcp serve --ssh' >/dev/null; }
expect_no_far_side_on_b() {
	wait_until 15 no_far_side_on_b || fail "railcp serve --ssh still runs on b $1: $(tb on b pgrep -af 'serve --ssh')"
}

mkdir -p src/sub
head -c $((6 << 20)) /dev/urandom >src/big
echo "over ssh from a" >src/a.txt
echo deeper >src/sub/c.txt
ln -s a.txt src/link

capture tb on a "$RAILCP" -r -p --json -e "$ssh" --railcp-path "$railcp" src/ "b:$dir/onb"
[ "$rc" -eq 0 ] || fail "push from a over ssh to b exited $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums onb)" ] || fail "onb differs from src"
[ "$(readlink onb/link)" = a.txt ] || fail "the symlink did not arrive"
echo "$out" | grep -q '"over_ssh": true' || fail "--json does not say the copy went over ssh: $out"
rails=$(echo "$out" | grep -c '"name": ') # the push's rails, as --json reports them
expect_no_far_side_on_b "after the push"

capture tb on a "$RAILCP" -r -q -e "$ssh" --railcp-path "$railcp" "b:$dir/onb/" back
[ "$rc" -eq 0 ] || fail "pull from b over ssh exited $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums back)" ] || fail "back differs from src"
expect_no_far_side_on_b "after the pull"

# Nothing listens on b's port 7470: the copy starts its far side over RAILCP_RSH.
capture tb on a env RAILCP_RSH="$ssh" "$RAILCP" -q --railcp-path "$railcp" src/big "b:$dir/fallback"
[ "$rc" -eq 0 ] || fail "push with no server on b exited $rc: $err"
cmp -s src/big fallback || fail "the fallback's copy differs"
expect_no_far_side_on_b "after the fallback"

# ssh itself fails: one line that names ssh and says why.
capture tb on a "$RAILCP" -e "$ssh -p 2" --railcp-path "$railcp" src/a.txt "b:$dir/never"
expect_one_line_error "ssh to a port where nothing listens"
case "$err" in *"ssh to b failed: "*"refused"*) ;; *) fail "ssh refused: $err" ;; esac
[ ! -e never ] || fail "a failed ssh wrote never"
expect_no_temps onb back
echo "tree pushed over ssh to b (rails in the report: $rails) and pulled back; fallback without -e; no process left on b; ssh failure: $err"
cd / && rm -rf "$dir"
