# tools/bench/native's scp case, small (8 MiB, 20 files, one round): it
# starts a private sshd on 127.0.0.1 as this user, times scp and scp -r
# beside the keyed railcp and prints both ratios; then sshd is gone, and
# so is everything the bench made, /run/sshd as it was before. The same
# must hold when scp fails, when scp exits 0 having copied nothing, and
# when the bench is told to stop (SIGTERM) in the middle of an scp: one
# line on stderr, exit status 1. Those three runs put a stand-in for scp
# first on PATH, which fails in the way asked; the first run uses the real
# scp and sshd. The figures themselves are doc/benchmarks.md's.
. tests/integration/lib.sh
server_tmp
[ -x /usr/sbin/sshd ] && command -v scp >/dev/null ||
	skip "no sshd or scp (openssh-server, openssh-client): run tools/setup"
command -v rsync >/dev/null || skip "no rsync: run tools/setup"
mkdir "$tmp/scratch" "$tmp/bin"
run_dir=$([ -d /run/sshd ] && echo yes || echo no)
native() { capture env "$@" tools/bench/native --railcp "$RAILCP" --dir "$tmp/scratch" --mib 8 --files 20 --rounds 1 \
	--cases big,small,scp; }
left_behind() {
	[ -z "$(ls -A "$tmp/scratch")" ] || fail "$1: the bench left files: $(ls -A "$tmp/scratch")"
	! pgrep -f "$tmp/scratch" >/dev/null || fail "$1: processes left running: $(pgrep -af "$tmp/scratch")"
	[ "$([ -d /run/sshd ] && echo yes || echo no)" = "$run_dir" ] ||
		fail "$1: /run/sshd there before: $run_dir, not after"
}

native
[ "$rc" -eq 0 ] || fail "the bench failed ($rc): $err"
printf '%s\n' "$out" | grep -q "^round 1 scp: *big [0-9.]* s, small (scp -r) [0-9.]* s$" ||
	fail "no scp round: $out"
printf '%s\n' "$out" | grep -q "^scp   8 MiB: scp [0-9.]* s .*railcp keyed [0-9.]* s: scp/railcp [0-9.]* (goal >= 5)" ||
	fail "no ratio for the 8 MiB file: $out"
printf '%s\n' "$out" | grep -q "^scp   20 files of 4 KiB: scp -r .*: scp/railcp [0-9.]* (goal >= 15)$" ||
	fail "no ratio for the 20 files: $out"
left_behind "after a run"

# The stand-in: fails, copies nothing, or stops the bench (its parent).
cat >"$tmp/bin/scp" <<'EOF'
#!/bin/sh
case $FAKE_SCP in
fail) echo "scp: Connection closed" >&2; exit 1 ;;
nothing) exit 0 ;;
term) sleep 0.5; kill -TERM "$PPID"; exec sleep 10 ;;
esac
EOF
chmod +x "$tmp/bin/scp"
for how in fail:"Connection closed" nothing:"the copy holds 0 files" term:"stopped by signal 15"; do
	native FAKE_SCP="${how%%:*}" PATH="$tmp/bin:$PATH"
	[ "$rc" -eq 1 ] || fail "scp ${how%%:*}: expected exit status 1, got $rc ($err)"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && case "$err" in "native: "*"${how#*:}"*) true ;; *) false ;; esac ||
		fail "scp ${how%%:*}: expected one line 'native: ...${how#*:}...', got: $err"
	left_behind "scp ${how%%:*}"
done
