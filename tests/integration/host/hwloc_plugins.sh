# railcp loads none of hwloc's plugins (libhwloc-plugins: PCI through
# libpciaccess, OpenCL, GL/X11, the libxml2 XML reader), so its plan and what
# it reads from an XML export are the same whether or not the host has them:
# - with the plugins installed, the dynamic loader opens none of them, for
#   this host and for --topology (LD_DEBUG=files lists every library opened);
# - `railcp topo`, live and for every fixture, prints the same with the
#   plugin directory as it is and with it hidden (a mount namespace puts an
#   empty tmpfs over it): the machine without libhwloc-plugins. One file has
#   a newline and a tab in its host name, which libxml2 would read as spaces.
. tests/integration/lib.sh
plugins=$(pkg-config --variable=libdir hwloc)/hwloc
[ -e "$plugins/hwloc_xml_libxml.so" ] ||
	skip "libhwloc-plugins is not installed ($plugins has no hwloc_xml_libxml.so; tools/setup installs it)"
[ "$(id -u)" -eq 0 ] || skip "hiding $plugins in a mount namespace needs root"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed 's/value="one-node-dualport"/value="one\
node	= 7"/' tests/fixtures/topo_1node_dualport.xml >"$dir/newline.xml"
cmp -s tests/fixtures/topo_1node_dualport.xml "$dir/newline.xml" &&
	fail "the fixture no longer has the host name this test edits"

for args in "topo" "topo --topology tests/fixtures/topo_2s_4nic.xml"; do
	# shellcheck disable=SC2086 # $args is words on purpose
	LD_DEBUG=files "$RAILCP" $args >/dev/null 2>"$dir/ld"
	grep -E "file=[^ ]*/hwloc/hwloc_[a-z_]+\.so" "$dir/ld" >"$dir/opened" &&
		fail "railcp $args opened hwloc's plugins: $(sed -E 's/.*file=([^ ]*).*/\1/' "$dir/opened" | sort -u | tr '\n' ' ')"
done

n=0
for f in "" tests/fixtures/topo_*.xml "$dir/newline.xml"; do
	set -- topo
	[ -z "$f" ] || set -- topo --topology "$f"
	"$RAILCP" "$@" >"$dir/with" 2>&1
	rc_with=$?
	unshare --mount sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' sh "$plugins" \
		"$RAILCP" "$@" >"$dir/without" 2>&1
	rc_without=$?
	[ "$rc_with" -eq "$rc_without" ] ||
		fail "railcp $*: exit status $rc_with with hwloc's plugins, $rc_without without"
	cmp -s "$dir/with" "$dir/without" ||
		fail "railcp $* differs with hwloc's plugins: $(diff "$dir/with" "$dir/without" | head -n 6)"
	n=$((n + 1))
done
grep -q "one$" "$dir/with" ||
	fail "the host name's newline was not kept as a newline: $(head -n 2 "$dir/with")"
echo "PASS: no hwloc plugin opened; $n plans the same with and without libhwloc-plugins"
