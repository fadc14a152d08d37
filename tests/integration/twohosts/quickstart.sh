# The README's quick start, followed on two hosts as written: its steps
# 1-4 (make a key, serve, push, pull) are read from README.md's first sh
# block after each "**N. " heading, so the test fails when the README
# drifts from what railcp does, and run with sh on a (the client) and b
# (the server). Three things only are put in, as a user would: the server
# is called b (the README's "server"), the served directory is one on the
# share (the README's /data: the guests' / is read-only), and the key is
# copied from a to b (the README: "copy the same file to the other").
# railcp is found on PATH; ~ is a fresh home in each guest; no RAILCP_KEY.
# The files must land where the README says: /data/incoming/dataset after
# the push (and after the same push again with -u --partial), ./copy after
# the pull. About 5 s once the guests are up.
. tests/integration/lib.sh
need_two_hosts

# readme_step N: the lines of the first ```sh block after "**N. " in README.md.
readme_step() {
	awk -v h="**$1. " 'index($0, h) == 1 { f = 1 } f && /^```sh$/ { g = 1; next } g && /^```$/ { exit } g { print }' README.md
}
for n in 1 2 3 4; do
	[ "$(readme_step $n | grep -c .)" -eq 1 ] || fail "README.md's quick start step $n is not one command: $(readme_step $n)"
done
key_cmd=$(readme_step 1) serve_cmd=$(readme_step 2) push_cmd=$(readme_step 3) pull_cmd=$(readme_step 4)
case "$serve_cmd" in *" /data"*) ;; *) fail "step 2 no longer serves /data: $serve_cmd" ;; esac
grep -q 'into /data/incoming/dataset' README.md || fail "README.md no longer says where the push lands"

dir=$(shared_dir quickstart)
cd "$dir" || fail "cannot enter $dir"
mkdir -p bin data dataset/sub/deeper
ln -s "$RAILCP" bin/railcp
echo "hello" >dataset/a.txt
head -c $((4 << 20)) /dev/urandom >dataset/big
head -c 100000 /dev/urandom >dataset/sub/b.bin
echo deeper >dataset/sub/deeper/c.txt
serve_cmd=$(printf '%s' "$serve_cmd" | sed "s| /data| $dir/data|g")
push_cmd=$(printf '%s' "$push_cmd" | sed 's|server:|b:|g')
pull_cmd=$(printf '%s' "$pull_cmd" | sed 's|server:|b:|g')

# on HOST CMD: CMD with sh on HOST, in $dir, as the README's user there.
home=/tmp/railcp-quickstart-home
on() {
	tb on "$1" env -u RAILCP_KEY HOME=$home PATH="$dir/bin:/usr/sbin:/usr/bin:/sbin:/bin" sh -c "$2"
}

# 1. The key on a, and the same file on b.
for h in a b; do tb on $h sh -c "rm -rf $home && mkdir -p $home" || fail "cannot make a home on $h"; done
capture on a "$key_cmd"
[ "$rc" -eq 0 ] || fail "step 1 on a: '$key_cmd' exited $rc: $err"
tb on a cat "$home/.config/railcp/key" >key.copy || fail "cannot read the key on a"
on b "mkdir -p ~/.config/railcp && cat '$dir/key.copy' >~/.config/railcp/key && chmod 600 ~/.config/railcp/key" ||
	fail "cannot copy the key to b"
rm -f key.copy

# 2. Serve on b.
spawn_on b srv env -u RAILCP_KEY HOME=$home PATH="$dir/bin:/usr/sbin:/usr/bin:/sbin:/bin" sh -c "exec $serve_cmd"
log=$(job_file b srv err)
wait_until 60 grep -q "serving on " "$log" || fail "step 2 on b: '$serve_cmd' is not serving: $(cat "$log")"

# 3. Push from a.
capture on a "$push_cmd"
[ "$rc" -eq 0 ] || fail "step 3 on a: '$push_cmd' exited $rc: $err"
[ "$(tree_sums dataset)" = "$(tree_sums data/incoming/dataset)" ] ||
	fail "step 3: the push did not land in /data/incoming/dataset: $(cd data && find . | head)"

# The push again, with -u --partial as the README says after an
# interruption, over RDMA: it lands where the first did (rsync's naming;
# the TCP case with a cut copy, and what travels, are host/rerun's). What
# it sends is not checked here: the share keeps only whole seconds of an
# mtime set from a guest (-p's 1795713811.475548999 read back as
# .000000000), so -u takes every file for changed.
again_cmd=$(printf '%s' "$push_cmd" | sed 's|^railcp |railcp -u --partial |')
capture on a "$again_cmd"
[ "$rc" -eq 0 ] || fail "the push again on a: '$again_cmd' exited $rc: $err"
[ "$(ls data/incoming)" = dataset ] && [ ! -e data/incoming/dataset/dataset ] ||
	fail "the push again did not land where the first did: $(cd data && find . | head)"
[ "$(tree_sums dataset)" = "$(tree_sums data/incoming/dataset)" ] || fail "the push again left a different tree"

# 4. Pull back on a.
capture on a "$pull_cmd"
[ "$rc" -eq 0 ] || fail "step 4 on a: '$pull_cmd' exited $rc: $err"
[ "$(tree_sums dataset)" = "$(tree_sums copy)" ] || fail "step 4: the pull did not land in ./copy: $(find copy | head)"
expect_no_temps data copy
echo "README quick start on two hosts: '$key_cmd' | '$serve_cmd' | '$push_cmd' | '$pull_cmd'"
stop_server_on b srv
cd / && rm -rf "$dir"
