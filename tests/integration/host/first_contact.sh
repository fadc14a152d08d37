# A new user's first command lines (issue 29, items 1 and 2): a line
# without a command is read as a copy and says what it lacks; a mistyped
# option gets the nearest one; a missing value is named as --help names
# it; and what this host alone can tell is said before any RDMA device is
# looked for. Each refusal: one sentence, exit 2 (usage) or 1, nothing written.
. tests/integration/lib.sh
mistakes_dir
listing() { find . -printf '%p %s\n' | sort; }
before=$(listing)

# refuse CODE WANT ARGS...: one line on stderr holding WANT, exit CODE, nothing written.
refuse() {
	code=$1 want=$2
	shift 2
	capture "$RAILCP" "$@"
	expect_one_line_error "$*"
	[ "$rc" -eq "$code" ] || fail "railcp $*: expected exit status $code, got $rc: $err"
	case "$err" in *"$want"*) ;; *) fail "railcp $*: expected '$want' in: $err" ;; esac
	[ -z "$out" ] || fail "railcp $*: expected nothing on stdout, got: $out"
	[ "$(listing)" = "$before" ] || fail "railcp $*: files changed: $(listing)"
}

# Item 1: copy lines that lack something.
refuse 2 "the copy of 'dir' needs a destination after it: HOST:PATH" -r dir
refuse 2 "the destination needs HOST:PATH (did you mean '127.0.0.1:'?)" a.txt 127.0.0.1
refuse 2 "did you mean '[::1]:'?" a.txt ::1
refuse 2 "neither 'a.txt' nor 'b.txt' is HOST:PATH" a.txt b.txt
refuse 2 "the copy from 'h:x' needs a local destination" h:x
refuse 2 "see 'railcp --help-copy'" --chunk 3 a.txt h:x
# Mistyped options and commands, from the parsers' own tables.
refuse 2 "unknown option '--topolgy': did you mean --topology?" topo --topolgy x.xml
refuse 2 "did you mean --recursive?" --recusive dir h:x
refuse 2 "did you mean --max-sessions?" serve --max-sesions 3
refuse 2 "'--p' is ambiguous: --preserve, --partial, --port" --p a.txt h:x
refuse 2 "unknown option '--verison': did you mean --version?" --verison
refuse 2 "unknown command 'devics': did you mean devices?" devics
refuse 2 "unknown option '--bogus' before the command" --bogus devices
refuse 2 "--json takes no value" devices --json=yes
# Missing values, named as --help names them; an option is no value.
refuse 2 "--topology needs an XML file (--topology FILE.xml)" topo --topology
refuse 2 "--root needs a directory (--root DIR), not the option '--port'" serve --root --port 17470
refuse 2 "--key-file needs a file (--key-file FILE)" a.txt h:x --key-file
refuse 2 "--port needs a port number (--port P)" bench h --port

# --help lists the common copy options.
capture "$RAILCP" --help
[ "$rc" -eq 0 ] || fail "railcp --help: exit status $rc"
for o in -r -p -u --partial --port -e --json --help-copy; do
	printf '%s\n' "$out" | grep -q -- "^  $o[ ,]" || fail "railcp --help does not list $o: $out"
done

# -q and -v after the command as before it (item 5).
f=$OLDPWD/tests/fixtures/topo_2s_4nic.xml
for args in "topo -q --topology $f" "topo --topology $f -v" "topo -vv --topology $f"; do
	# shellcheck disable=SC2086
	capture "$RAILCP" $args
	[ "$rc" -eq 0 ] || fail "railcp $args: exit status $rc: $err"
done
capture "$RAILCP" -v devices
b_rc=$rc b_out=$out b_err=$err
capture "$RAILCP" devices -v
[ "$rc" = "$b_rc" ] && [ "$out" = "$b_out" ] && [ "$err" = "$b_err" ] ||
	fail "railcp devices -v ($rc: $err) differs from railcp -v devices ($b_rc: $b_err)"

capture "$RAILCP" -v --help-copy
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--no-fsync" || fail "railcp -v --help-copy: $rc $err"

# Item 2: local mistakes before the device probe, whether or not this host has RDMA.
refuse 1 "cannot stat missing.txt: No such file or directory" missing.txt h:x
refuse 1 "dir is a directory: copy directories with -r" dir h:x
refuse 1 "cannot open the key file none.key" --key-file none.key a.txt h:x
refuse 1 "the key in short.key is only 9 bytes" --key-file short.key a.txt h:x
refuse 1 "the key in short.key is only 9 bytes" bench h --key-file short.key
refuse 1 "cannot create $tmp/no/such: $tmp/no: No such file or directory" h:x "$tmp/no/such"
refuse 1 "cannot open the root directory $tmp/none" serve --root "$tmp/none"
refuse 1 "cannot open the root directory a.txt" serve --root a.txt
refuse 1 "cannot listen on '1.2.3': not an IPv4 or IPv6 address" serve --listen 1.2.3 --key-file short.key
refuse 1 "cannot listen on '1.2.3': not an IPv4 or IPv6 address" serve --listen 1.2.3

# Without a device, what to do next, and no script of the source tree.
# Asked for RDMA, that is: by default (--transport auto) a host without
# RDMA copies over TCP (host/tcp_copy.sh).
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
	for args in "devices --transport rdma" "bench h --transport rdma" "-r dir h:x --transport rdma" "serve --transport rdma"; do
		# shellcheck disable=SC2086
		refuse 1 "rdma link add rxe0 type rxe netdev IF" $args
		case "$err" in *tools/*) fail "railcp $args names a script of the source tree: $err" ;; esac
	done
	refuse 1 "see 'railcp devices'" -r dir h:x --transport rdma
fi
echo "first contact: copy lines, did-you-means, missing values and local mistakes said as expected"
