# A missing build dependency fails configuration with one sentence naming the
# Debian package. Each package is hidden from pkg-config in turn by pointing
# PKG_CONFIG_LIBDIR at a copy of its search path without that .pc file.
. tests/integration/lib.sh
command -v scons >/dev/null || skip "scons is not installed"
pcdir=$(mktemp -d)
trap 'rm -rf "$pcdir"' EXIT
for pair in hwloc:libhwloc-dev libibverbs:libibverbs-dev librdmacm:librdmacm-dev \
	jansson:libjansson-dev cmocka:libcmocka-dev libisal:libisal-dev libcrypto:libssl-dev; do
	pc=${pair%%:*} deb=${pair#*:}
	rm -f "$pcdir"/*.pc
	for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
		for f in "$d"/*.pc; do
			[ -e "$f" ] && [ "$(basename "$f")" != "$pc.pc" ] && ln -sf "$f" "$pcdir/"
		done
	done
	PKG_CONFIG_LIBDIR=$pcdir pkg-config --exists "$pc" && fail "could not hide $pc from pkg-config"
	capture env PKG_CONFIG_LIBDIR="$pcdir" scons -Q mode=debug
	[ "$rc" -ne 0 ] || fail "scons succeeded without $pc"
	line=$(printf '%s\n%s\n' "$out" "$err" | grep '^railcp: ')
	[ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] || fail "expected one railcp: line, got: $out $err"
	case "$line" in *"install the Debian package $deb"*) ;; *) fail "no package name in: $line" ;; esac
	echo "without $pc: $line"
done
