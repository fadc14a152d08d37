# Many copies at once across hosts (issue 33's goals, at a smaller count
# than tools/bench/burst's 64): 12 keyed pushes of 16 KiB started at once
# from a's own address, then 12 from 8 addresses of a (--bind), all
# complete and arrive identical, with the server on b never running more
# than --max-sessions 4 at once and its peak RSS bounded; then, while 64
# connections that never authenticate are held open from 8 other
# addresses of a (renewed as the server closes them), a keyed copy still
# completes within its --timeout. tools/bench/burst does the work and
# fails on any of these.
. tests/integration/lib.sh
need_two_hosts
capture python3 tools/bench/burst --port 7521 --copies 12 --max-sessions 4 --cases one,many,idle \
	--idle 64 --timeout 120 --max-rss-kib 65536
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "tools/bench/burst exited $rc: $err"
case "$out" in *"bench-burst: every copy arrived whole"*) ;; *) fail "no verdict: $out $err" ;; esac
most=$(printf '%s\n' "$out" | sed -n 's/^server: at most \([0-9]*\) sessions at once.*/\1/p')
[ -n "$most" ] && [ "$most" -ge 2 ] && [ "$most" -le 4 ] ||
	fail "the server ran at most '$most' sessions at once: not a burst within --max-sessions 4"
