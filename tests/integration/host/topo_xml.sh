# `railcp topo --topology FILE`: a file hwloc 2.9 crashes on (a cpuset that
# starts with a comma makes it fail an assertion; a root Bridge it cannot
# read is freed twice) is read in a child
# process, so railcp says one sentence and exits 1 instead of dumping core;
# -v adds hwloc's own line. A good export still gives its plan.
. tests/integration/lib.sh
fixture=tests/fixtures/topo_1node_dualport.xml
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed 's/type="PU" os_index="0" cpuset="0x00000001"/type="PU" os_index="0" cpuset=",0x1"/' \
	"$fixture" >"$dir/bad.xml"
cmp -s "$fixture" "$dir/bad.xml" && fail "the fixture no longer has the PU this test edits"

capture "$RAILCP" topo --topology "$fixture"
[ "$rc" -eq 0 ] || fail "topo of $fixture: exit status $rc: $err"
printf '%s\n' "$out" | grep -q "one-node-dualport" || fail "topo of $fixture does not name its host: $out"

capture "$RAILCP" topo --topology "$dir/bad.xml"
expect_one_line_error topo --topology bad.xml
[ "$rc" -eq 1 ] || fail "topo of bad.xml: expected exit status 1, got $rc"
case "$err" in *"hwloc crashed reading $dir/bad.xml"*"hwloc 2.x XML export"*) ;;
*) fail "topo of bad.xml: unexpected sentence: $err" ;; esac
[ -z "$out" ] || fail "topo of bad.xml printed a plan: $out"

capture "$RAILCP" -v topo --topology "$dir/bad.xml"
[ "$rc" -eq 1 ] || fail "-v topo of bad.xml: expected exit status 1, got $rc"
printf '%s\n' "$err" | grep -q "Assertion" || fail "-v topo of bad.xml does not show hwloc's line: $err"

# hwloc frees a root Bridge it could not read twice (glibc stops it: Aborted).
capture "$RAILCP" topo --topology tests/fixtures/bad_hwloc_bridge_root.xml
expect_one_line_error topo --topology bad_hwloc_bridge_root.xml
[ "$rc" -eq 1 ] || fail "topo of bad_hwloc_bridge_root.xml: expected exit status 1, got $rc"

capture "$RAILCP" topo --topology "$dir/none.xml"
expect_one_line_error topo --topology none.xml
[ "$rc" -eq 1 ] || fail "topo of a missing file: expected exit status 1, got $rc"
echo "PASS: a file that crashes hwloc is one sentence and exit status 1"
