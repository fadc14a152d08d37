# scons install puts the command and its man page (and the dist/ files the
# tree has) beneath DESTDIR and PREFIX, the page renders, and scons
# uninstall with the same arguments removes every file it put there.
. tests/integration/lib.sh
command -v scons >/dev/null || skip "scons is not installed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Install the build as it stands: with the werror setting it was made with,
# so that nothing is compiled again (CI builds with werror=1).
werror=werror=1
if ! scons -Q -q werror=1 build/release/railcp >/dev/null 2>&1 &&
	scons -Q -q werror=0 build/release/railcp >/dev/null 2>&1; then
	werror=werror=0
fi

capture scons -Q $werror install PREFIX=/usr/local DESTDIR="$tmp"
[ "$rc" -eq 0 ] || fail "scons install exited $rc: $out $err"
root=$tmp/usr/local
files="$root/bin/railcp $root/share/man/man1/railcp.1"
[ -e dist/bash-completion/railcp ] && files="$files $root/share/bash-completion/completions/railcp"
[ -e dist/systemd/railcp.service ] && files="$files $root/lib/systemd/system/railcp.service"
[ -e dist/railcp.conf ] && files="$files $tmp/etc/railcp/railcp.conf"
for f in $files; do
	[ -f "$f" ] || fail "scons install did not make $f"
done
[ -x "$root/bin/railcp" ] || fail "the installed railcp is not executable"
cmp -s build/release/railcp "$root/bin/railcp" || fail "the installed railcp is not build/release/railcp"
"$root/bin/railcp" --version | grep -q '^railcp [0-9]' || fail "the installed railcp does not run"
echo "installed: $(cd "$tmp" && find . -type f | sort | tr '\n' ' ')"

page=$root/share/man/man1/railcp.1
if command -v man >/dev/null; then
	capture env MANPAGER=cat MANWIDTH=80 man --warnings -l "$page"
elif command -v groff >/dev/null; then
	capture groff -man -Tutf8 -ww "$page"
else
	fail "neither man nor groff is installed to render the page (run tools/setup)"
fi
[ "$rc" -eq 0 ] || fail "the man page does not render: $err"
[ -z "$err" ] || fail "the man page renders with warnings: $err"
for heading in NAME SYNOPSIS DESCRIPTION "COPY OPTIONS" "EXIT STATUS" "SEE ALSO"; do
	printf '%s\n' "$out" | grep -q "^$heading\$" || fail "the rendered page has no $heading"
done
printf '%s\n' "$out" | grep -q "railcp - copy files" || fail "the rendered page has no NAME line"
echo "rendered: $(printf '%s\n' "$out" | wc -l) lines"

capture scons -Q $werror uninstall PREFIX=/usr/local DESTDIR="$tmp"
[ "$rc" -eq 0 ] || fail "scons uninstall exited $rc: $out $err"
left=$(find "$tmp" ! -type d)
[ -z "$left" ] || fail "scons uninstall left: $left"
[ ! -e "$tmp/etc/railcp" ] || fail "scons uninstall left $tmp/etc/railcp"
echo "uninstalled: no file left"
