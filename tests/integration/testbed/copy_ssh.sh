# Copies with no server running: railcp starts 'railcp serve --ssh' through
# a remote shell (here tests/integration/local_rsh, which runs the command
# on this host as ssh would on another; twohosts/ssh.sh uses real sshd
# across two hosts). A push and a pull with -e, paths relative to the far side's home
# and absolute; the fallback when nothing listens on --port (RAILCP_RSH);
# no process of the far side left after each copy, nor after the client is
# killed mid-copy (its channel closed); and one line for each way the start
# can fail: no such remote shell, no railcp there, a far side that is not
# railcp, one that never answers.
. tests/integration/lib.sh
need_rdma
rsh=$PWD/tests/integration/local_rsh
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir -p home src/sub
head -c $((3 << 20)) /dev/urandom >src/big
echo "hello over ssh" >src/a.txt
echo deeper >src/sub/c.txt
ln -s a.txt src/link
export HOME="$dir/home" # the far side's home, which local_rsh passes on

# No far side may be left once a copy is over. It may take a moment to
# exit; twice in CI runs under ASan it took more than 15 s, for a cause not
# yet found. Past 15 s the test prints where each of the far side's threads
# waits, the end of its log (its stderr is the client's memfd, still open)
# and gdb's backtraces where gdb is installed; it fails only if the far side
# outlives its own --timeout (30 s) with a margin.
no_far_side() { ! pgrep -f 'railcp serve --ssh' >/dev/null; }
far_side_said() {
	for p in $(pgrep -f 'railcp serve --ssh'); do
		echo "  far side $p $1, $2:"
		for t in /proc/"$p"/task/*; do
			echo "    $(cat "$t"/comm) wchan $(cat "$t"/wchan) syscall $(cut -d' ' -f1 "$t"/syscall)"
			sed 's/^/      /' "$t"/stack 2>/dev/null | head -8
		done
		timeout 5 tail -n 5 /proc/"$p"/fd/2 2>/dev/null | sed 's/^/    log: /'
		! command -v gdb >/dev/null ||
			timeout 30 gdb -p "$p" -batch -ex 'thread apply all bt 12' 2>/dev/null |
			grep '^#\|^Thread' | sed 's/^/    /'
	done
}
expect_no_far_side() {
	wait_until 15 no_far_side && return
	far_side_said "$1" "still running 15 s after the copy"
	wait_until 30 no_far_side || fail "railcp serve --ssh still runs 45 s $1: $(pgrep -af 'serve --ssh')"
	echo "  the far side took between 15 and 45 s to exit $1 (see its threads above)"
}

# 1. A push with -e into a name relative to the home, and a pull back by its absolute name.
capture "$RAILCP" -r -p --json -e "$rsh" --railcp-path "$RAILCP" src/ 127.0.0.1:tree
[ "$rc" -eq 0 ] || fail "push over ssh exited $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums home/tree)" ] || fail "home/tree differs from src"
[ "$(readlink home/tree/link)" = a.txt ] || fail "the symlink did not arrive"
echo "$out" | grep -q '"over_ssh": true' || fail "--json does not say the copy went over ssh: $out"
echo "$out" | grep -q "\"ssh_home\": \"$HOME\"" || fail "--json does not say where relative paths are: $out"
expect_no_far_side "after a push"
capture "$RAILCP" -r -q -e "$rsh" --railcp-path "$RAILCP" "127.0.0.1:$dir/home/tree/" back
[ "$rc" -eq 0 ] || fail "pull over ssh exited $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums back)" ] || fail "back differs from src"
expect_no_far_side "after a pull"

# 2. Nothing listens on --port: the copy goes over the remote shell RAILCP_RSH names.
# Said without -v: relative paths now mean the far side's home.
capture env RAILCP_RSH="$rsh" "$RAILCP" -r --port 7598 --railcp-path "$RAILCP" src/sub 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push with no server on the port exited $rc: $err"
case "$err" in *"over ssh to 127.0.0.1: "*"a relative path there is beneath $HOME"*) ;;
*) fail "the fallback to ssh was not said: $err" ;; esac
case "$out" in *"to 127.0.0.1 over ssh (relative paths beneath $HOME) in "*) ;;
*) fail "the summary does not say the copy went over ssh: $out" ;; esac
cmp -s src/sub/c.txt home/sub/c.txt || fail "HOST: is not the home: $(find home)"
capture env RAILCP_RSH="$rsh" "$RAILCP" -r -q --port 7598 --railcp-path "$RAILCP" 127.0.0.1: pulled
[ "$rc" -eq 0 ] || fail "pull of HOST: exited $rc: $err"
[ "$(tree_sums home)" = "$(tree_sums pulled)" ] || fail "pulling HOST: did not give the home's contents"
expect_no_far_side "after the fallback"

# 3. The client killed mid-copy: the far side ends, and leaves no temporary.
head -c $((96 << 20)) /dev/urandom >large
"$RAILCP" -q --chunk 64K -e "$rsh" --railcp-path "$RAILCP" large 127.0.0.1:large &
client=$!
wait_for_temp home 60 || fail "the push of large never started a temporary"
kill -KILL $client
wait $client 2>/dev/null
expect_no_far_side "after its client was killed"
wait_for_no_temp home 15 || fail "the far side left its temporary: $(ls -a home)"
[ ! -e home/large ] || fail "a cut copy left large under its final name"

# 4. Each way the start can fail: one line, status 1, within the limit.
capture "$RAILCP" -e no-such-remote-shell src/a.txt 127.0.0.1:x
expect_one_line_error "a remote shell that does not exist"
case "$err" in *"cannot start the remote shell 'no-such-remote-shell'"*) ;; *) fail "no such remote shell: $err" ;; esac
capture "$RAILCP" -e "$rsh" --railcp-path /no/such/railcp src/a.txt 127.0.0.1:x
expect_one_line_error "no railcp on the far side"
case "$err" in *"cannot run railcp on 127.0.0.1 over ssh"*"--railcp-path"*) ;; *) fail "no railcp there: $err" ;; esac
t0=$(date +%s)
capture "$RAILCP" -e echo src/a.txt 127.0.0.1:x
t_echo=$(($(date +%s) - t0))
expect_one_line_error "a far side that is not railcp"
case "$err" in *"did not answer as 'railcp serve --ssh' does"*) ;; *) fail "not railcp: $err" ;; esac
t0=$(date +%s)
capture "$RAILCP" --timeout 2 -e "sleep 100 #" src/a.txt 127.0.0.1:x
expect_one_line_error "a far side that never answers"
case "$err" in *"did not answer over ssh within 2 s"*) ;; *) fail "never answers: $err" ;; esac
t_never=$(($(date +%s) - t0))
# Far below the 100 s the far side would sleep; railcp's own start-up (the
# plan, under emulation and CI's load) takes seconds of this, as t_echo shows.
[ $t_never -le 45 ] || fail "a far side that never answers held the client $t_never s"
! pgrep -f 'sleep 100' >/dev/null || fail "the remote shell that never answered was left running"
[ ! -e home/x ] || fail "a failed start wrote home/x"
echo "pushed and pulled over a remote shell (relative, absolute, HOST:, fallback); killed client leaves nothing; 4 start failures, one line each (not railcp: ${t_echo} s, never answers with --timeout 2: ${t_never} s)"
cd / && rm -rf "$dir"
