# dist/systemd/railcp.service passes systemd-analyze verify without one
# warning, and dist/railcp.conf gives railcp serve only options its parser
# takes, with the root the unit lets it write.
. tests/integration/lib.sh
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (apt-get install systemd)"
unit=dist/systemd/railcp.service
conf=dist/railcp.conf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verify checks that ExecStart's program exists: the unit names the
# installed /usr/local/bin/railcp, the copy checked here the build under test.
grep -q '^ExecStart=/usr/local/bin/railcp serve \$RAILCP_SERVE_ARGS$' "$unit" ||
	fail "$unit does not start /usr/local/bin/railcp serve \$RAILCP_SERVE_ARGS"
sed "s|^ExecStart=/usr/local/bin/railcp |ExecStart=$RAILCP |" "$unit" >"$tmp/railcp.service"
capture systemd-analyze verify "$tmp/railcp.service"
[ "$rc" -eq 0 ] || fail "systemd-analyze verify exited with status $rc: $out $err"
# verify exits 0 after many warnings (an unknown key or a bad value is
# ignored), so any line about this unit fails; lines about other units of
# this machine are shown, not counted.
about=$(printf '%s\n%s\n' "$out" "$err" | grep -e 'railcp\.service' -e "$tmp")
[ -z "$about" ] || fail "systemd-analyze verify warns about the unit: $about"
# verify ignores a capability it does not know without a word.
for cap in $(sed -n 's/^\(CapabilityBoundingSet\|AmbientCapabilities\)=//p' "$unit"); do
	systemd-analyze capability "$cap" >/dev/null 2>&1 || fail "$unit names an unknown capability: $cap"
done
other=$(printf '%s\n%s\n' "$out" "$err" | grep -v -e '^$' -e 'railcp\.service' -e "$tmp")
[ -z "$other" ] || printf 'note: systemd-analyze verify on other units:\n%s\n' "$other"

# The options in railcp.conf, as the unit passes them ($VAR: split at
# spaces): railcp serve parses them all before it reaches --help, and stops
# at the first it does not take.
args=$(sed -n 's/^RAILCP_SERVE_ARGS="\(.*\)"$/\1/p' "$conf")
[ -n "$args" ] || fail "$conf sets no RAILCP_SERVE_ARGS=\"...\""
# shellcheck disable=SC2086 # the unit splits $RAILCP_SERVE_ARGS the same way
capture "$RAILCP" serve $args --help
[ "$rc" -eq 0 ] || fail "railcp serve does not take the options of $conf ($args): $err"
case " $args " in *" --key-file "*) ;; *) fail "$conf gives no --key-file: the server would serve loopback only" ;; esac
root=$(printf '%s\n' "$args" | sed -n 's/.*--root \([^ ]*\).*/\1/p')
grep -qx "ReadWritePaths=-\?$root" "$unit" ||
	fail "the root in $conf ($root) is not the unit's ReadWritePaths=: $(grep ReadWritePaths "$unit")"
echo "systemd unit: verify says nothing about it; railcp.conf parses, its root is writable"
