# Copies that must not happen are refused with one line and exit status 1
# (2 for a bad command line), and nothing is created anywhere:
# (a) a wrong key or none, against a server with a key;
# (b) remote names that lead out of the server's root: "..", absolute,
#     and symlinks inside the root that point out, for pushes and pulls;
# (c) bad local usage: a missing source, a directory without -r, several
#     sources to a destination that is not a directory, two remote sides;
# (d) any copy, by a server started without --root (it still runs bench);
# (e) the client reports the server's reason for refusing a push without a
#     key or without --root, also when the file list is long (2000 names)
#     and the server closes the connection before reading all of it.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
# No key but the ones given here: none from the environment or ~/.config.
HOME=$dir
export HOME
unset RAILCP_KEY
mkdir root outside got
echo secret >outside/secret
echo data >file
head -c 32 /dev/urandom | base64 >key
head -c 32 /dev/urandom | base64 >other
chmod 600 key other

# snapshot: every name beneath root, outside and got, with its type, size,
# mtime (any write changes it) and symlink target.
snapshot() {
	find root outside got -printf '%p %y %s %T@ %l\n'
}

# refused WHAT CMD...: CMD fails with one line and status 1, nothing changes.
refused() {
	_what=$1
	shift
	_before=$(snapshot)
	capture "$@"
	expect_one_line_error "$_what"
	[ "$rc" -eq 1 ] || fail "$_what: expected exit status 1, got $rc: $err"
	[ "$(snapshot)" = "$_before" ] || fail "$_what changed files: $(snapshot)"
	echo "$_what: $err"
}

# (a) A server with a key.
start_server serve.log --port 7490 --root "$dir/root" --key-file "$dir/key"
refused "push with the wrong key" "$RAILCP" --port 7490 --key-file other file 127.0.0.1:file
case "$err" in *key*) ;; *) fail "the error does not name the key: $err" ;; esac
refused "push without a key" "$RAILCP" --port 7490 file 127.0.0.1:file
refused "pull with the wrong key" "$RAILCP" --port 7490 --key-file other 127.0.0.1:. got
# The same push with the key goes through: the refusals were about the key.
capture "$RAILCP" -q --port 7490 --key-file key file 127.0.0.1:file
[ "$rc" -eq 0 ] && cmp -s file root/file || fail "push with the right key: $rc $err"
rm root/file
stop_server

# (b) Names that lead out of the root, from a keyless server (loopback only).
ln -s "$dir/outside" root/out        # absolute, out
ln -s ../outside root/up             # relative, out
ln -s "$dir/outside/new" root/dangle # dangling, out
mkdir root/a
start_server serve.log --root "$dir/root"
for dst in ../x /etc/x a/../../x out/x out/ up/x up dangle dangle/x; do
	refused "push to 127.0.0.1:$dst" "$RAILCP" file "127.0.0.1:$dst"
	case "$err" in *refused*) ;; *) fail "push to $dst: unclear error: $err" ;; esac
done
refused "push of a tree into 127.0.0.1:up" "$RAILCP" -r got "127.0.0.1:up"
for src in ../x /etc/passwd a/../../x out/secret up/secret dangle/x; do
	refused "pull of 127.0.0.1:$src" "$RAILCP" "127.0.0.1:$src" got
	case "$err" in *refused*) ;; *) fail "pull of $src: unclear error: $err" ;; esac
done
[ "$(grep -c 'failed: refused' serve.log)" -eq 16 ] || fail "server log: $(cat serve.log)"

# (c) Bad local usage.
refused "push of a missing source" "$RAILCP" missing 127.0.0.1:x
refused "push of a directory without -r" "$RAILCP" got 127.0.0.1:x
case "$err" in *"-r"*) ;; *) fail "$err" ;; esac
echo plain >root/plain
echo plain >got/plain
refused "push of two sources onto a file" "$RAILCP" file key 127.0.0.1:plain
case "$err" in *"is not a directory"*) ;; *) fail "two sources onto a file: $err" ;; esac
refused "pull of two sources onto a file" "$RAILCP" -r 127.0.0.1:a 127.0.0.1:plain got/plain
case "$err" in *"is not a directory"*) ;; *) fail "two sources onto a file, pulled: $err" ;; esac
rm root/plain got/plain
before=$(snapshot)
capture "$RAILCP" 127.0.0.1:file 127.0.0.1:copy
expect_one_line_error "both sides remote"
[ "$rc" -eq 2 ] || fail "both sides remote: expected exit status 2, got $rc"
capture "$RAILCP" file copy
expect_one_line_error "both sides local"
[ "$rc" -eq 2 ] || fail "both sides local: expected exit status 2, got $rc"
[ "$(snapshot)" = "$before" ] || fail "bad command lines changed files: $(snapshot)"
stop_server

# (d) A server without --root runs bench only.
start_server serve.log
refused "push to a server without --root" "$RAILCP" file 127.0.0.1:file
refused "pull from a server without --root" "$RAILCP" 127.0.0.1:file got
case "$err" in *"without --root"*) ;; *) fail "unclear error: $err" ;; esac
capture "$RAILCP" bench 127.0.0.1 --bytes 1M
[ "$rc" -eq 0 ] || fail "bench on a server without --root exited $rc: $err"

# (e) The server's reason, not a broken connection, for a push of one file
# and of 2000 names, which the server stops reading once it refuses.
/usr/bin/python3 -c '
import os
for d in range(8):
    os.makedirs("many/dir%d" % d)
    for i in range(250):
        open("many/dir%d/file%04d" % (d, i), "wb").close()'
for src in file many; do
	refused "push of $src to a server without --root" "$RAILCP" -r $src 127.0.0.1:new
	case "$err" in *"without --root"*) ;; *) fail "the server's reason was lost: $err" ;; esac
done
stop_server
start_server serve.log --port 7490 --root "$dir/root" --key-file "$dir/key"
for src in file many; do
	refused "push of $src without a key" "$RAILCP" --port 7490 -r $src 127.0.0.1:new
	case "$err" in *"requires a key"*) ;; *) fail "the server's reason was lost: $err" ;; esac
done
stop_server
cd / && rm -rf "$dir"
