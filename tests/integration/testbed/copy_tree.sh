# railcp -r -p pushes a tree to a server and pulls it back, and both copies
# equal the source in every entry: type, symlink target (dangling too), size,
# mode, mtime to the nanosecond, content, and for a 5 GiB sparse file with
# data at its start, middle and beyond 4 GiB the same data extents (holes
# stay holes). Names with spaces and non-ASCII bytes, empty files and
# directories, a file of exactly one chunk and one that ends mid-chunk
# travel too. Without -p a file gets the receiver's umask and the time of
# the copy. A directory copied to a new name lands in it under its own
# name; DIR/ and DIR/. (and HOST:.) give the new name the directory's
# contents, as rsync names them. --json reports the files and the
# data bytes; no temporary file is left anywhere.
. tests/integration/lib.sh
need_rdma
umask 022
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root pulled

# The source tree: three levels of directories, every kind of entry.
mkdir -p src/d1/d2/d3 src/emptydir "src/with space" "src/$(printf 'caf\303\251')" src/ro
: >src/empty
echo "three levels down" >src/d1/d2/d3/deep.txt
echo "a name with spaces" >"src/with space/two  spaces.txt"
printf 'not ASCII\n' >"src/$(printf 'caf\303\251')/$(printf 'na\377me')"
echo "read only" >src/ro/x
ln -s d2/d3/deep.txt src/d1/link
ln -s ../nowhere/missing src/d1/d2/dangling
# 5 GiB apparent, three small data regions, a hole at the end. The writes
# start off page boundaries on purpose: extents are whole pages.
truncate -s 5G src/sparse
dd if=/dev/urandom of=src/sparse bs=100000 count=1 conv=notrunc status=none
dd if=/dev/urandom of=src/sparse bs=4096 count=25 seek=655360 conv=notrunc status=none
dd if=/dev/urandom of=src/sparse bs=50000 count=1 seek=4831838209 oflag=seek_bytes conv=notrunc status=none
# Random files (one ends mid-chunk, one is exactly a 64K chunk), modes, and
# old, distinct times with nanoseconds on every entry (links too), deepest first.
/usr/bin/python3 -c '
import os
with open("src/random.bin", "wb") as f:
    f.write(os.urandom(3 * 1048576 + 12345))
with open("src/onechunk", "wb") as f:
    f.write(os.urandom(65536))
for p, m in (("random.bin", 0o640), ("onechunk", 0o600), ("d1/d2/d3/deep.txt", 0o741),
             ("ro/x", 0o444), ("d1/d2", 0o750), ("ro", 0o555), ("emptydir", 0o700)):
    os.chmod("src/" + p, m)
t = 981173106123456789
for i, (top, dirs, files) in enumerate(os.walk(b"src", topdown=False)):
    for j, n in enumerate(files + dirs):
        os.utime(os.path.join(top, n), ns=(t, t + i * 1000003 + j * 7), follow_symlinks=False)
    os.utime(top, ns=(t, t + i * 1000003 + 999), follow_symlinks=False)'

# compare SRC DST [nometa]: fail unless DST has the entries of SRC with the
# same types, links, sizes, data extents and content, and (unless nometa)
# the same modes and mtimes. Prints the source's regular files and data bytes.
cat >compare.py <<'PY'
import errno, hashlib, os, stat, sys

def extents(fd, size):
    out, off = [], 0
    while off < size:
        try:
            data = os.lseek(fd, off, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                break
            raise
        if data >= size:
            break
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), size)
        out.append((data, hole - data))
        off = hole
    return out

def file_facts(path, st):
    # Only the data extents are read: 5 GiB of zeros would take minutes here.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        ext, h = extents(fd, st.st_size), hashlib.sha256()
        for off, n in ext:
            while n:
                b = os.pread(fd, min(n, 1 << 20), off)
                assert b, "short read of %r" % path
                h.update(b)
                off += len(b)
                n -= len(b)
        return ext, h.hexdigest()
    finally:
        os.close(fd)

def walk(top):
    out = {b".": os.lstat(top)}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, top)] = os.lstat(p)
    return out

src, dst, meta = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), sys.argv[3:] != ["nometa"]
a, b = walk(src), walk(dst)
assert set(a) == set(b), "entries differ: only in source %r, only in copy %r" % (
    sorted(set(a) - set(b)), sorted(set(b) - set(a)))
files = data = 0
for rel in sorted(a):
    x, y, ps, pd = a[rel], b[rel], os.path.join(src, rel), os.path.join(dst, rel)
    assert stat.S_IFMT(x.st_mode) == stat.S_IFMT(y.st_mode), "%r: type differs" % rel
    if meta:
        assert stat.S_IMODE(x.st_mode) == stat.S_IMODE(y.st_mode), "%r: mode %o, copy %o" % (
            rel, stat.S_IMODE(x.st_mode), stat.S_IMODE(y.st_mode))
        assert x.st_mtime_ns == y.st_mtime_ns, "%r: mtime %d, copy %d" % (
            rel, x.st_mtime_ns, y.st_mtime_ns)
    if stat.S_ISLNK(x.st_mode):
        assert os.readlink(ps) == os.readlink(pd), "%r: link target differs" % rel
    elif stat.S_ISREG(x.st_mode):
        assert x.st_size == y.st_size, "%r: size %d, copy %d" % (rel, x.st_size, y.st_size)
        (ea, ha), (eb, hb) = file_facts(ps, x), file_facts(pd, y)
        assert ea == eb, "%r: data extents %r, copy %r" % (rel, ea, eb)
        assert ha == hb, "%r: content differs" % rel
        files += 1
        data += sum(n for _, n in ea)
if b"sparse" in a:
    # The test's own premise: the sparse file really is sparse, in both.
    ext, _ = file_facts(os.path.join(src, b"sparse"), a[b"sparse"])
    assert len(ext) == 3 and ext[-1][0] > 4 << 30, "the source is not sparse as planned: %r" % ext
    assert b[b"sparse"].st_blocks * 512 < 4 << 20, "the copy of sparse has its holes filled"
print("%d files %d" % (files, data))
PY
compare() {
	/usr/bin/python3 compare.py "$@" || fail "the copy $2 differs from $1"
}

# check_json DIRECTION FILES BYTES: the --json summary in $out.
check_json() {
	printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["direction"] == sys.argv[1] and doc["host"] == "127.0.0.1", doc
assert doc["files"] == int(sys.argv[2]), "files %d, expected %s" % (doc["files"], sys.argv[2])
assert doc["bytes"] == int(sys.argv[3]), "bytes %d, expected %s" % (doc["bytes"], sys.argv[3])
assert doc["verified"] is True
assert doc["seconds"] > 0 and doc["transfer_seconds"] > 0 and doc["gbps"] > 0, doc
assert doc["rails"] and doc["nodes"], doc
assert sum(r["bytes"] for r in doc["rails"]) == doc["bytes"], doc
print("%s: %d files, %d bytes in %.2f s (data phase %.2f s)" % (sys.argv[1], doc["files"],
      doc["bytes"], doc["seconds"], doc["transfer_seconds"]))
' "$@" || fail "bad --json summary of the $1: $out"
}

start_server serve.log --root "$dir/root"
set -- $(/usr/bin/python3 compare.py src src)
[ "$1" -eq 8 ] && [ "$3" -gt $((3 << 20)) ] || fail "unexpected source tree: $*"
files=$1 bytes=$3
echo "source: $files files, $bytes data bytes"

# Push: tree does not exist, so it is made and src lands in it.
start=$(date +%s)
capture "$RAILCP" -r -p --json --chunk 64K src 127.0.0.1:tree
[ "$rc" -eq 0 ] || fail "push exited $rc: $err"
[ -z "$err" ] || fail "push wrote to stderr: $err"
echo "push: $(($(date +%s) - start)) s"
check_json push "$files" "$bytes"
compare src root/tree/src >/dev/null
grep -q ': push of 8 files into "tree" done' serve.log || fail "server log: $(cat serve.log)"

# Pull into an existing directory: the tree lands under its own name.
start=$(date +%s)
capture "$RAILCP" -r -p --json --chunk 64K 127.0.0.1:tree/src pulled
[ "$rc" -eq 0 ] || fail "pull exited $rc: $err"
[ -z "$err" ] || fail "pull wrote to stderr: $err"
echo "pull: $(($(date +%s) - start)) s"
check_json pull "$files" "$bytes"
compare src pulled/src >/dev/null

# Without -p: mode less the receiver's umask, mtime of the copy.
mkdir loose
echo open >loose/open && chmod 0777 loose/open
echo shut >loose/shut && chmod 0640 loose/shut
chmod 0777 loose
touch -d '2001-02-03 04:05:06' loose/open loose/shut loose
before=$(date +%s)
capture "$RAILCP" -r -q loose 127.0.0.1:
[ "$rc" -eq 0 ] && [ -z "$out$err" ] || fail "push without -p exited $rc: $out $err"
compare loose root/loose nometa >/dev/null
[ "$(stat -c %a root/loose/open root/loose/shut root/loose)" = "$(printf '755\n640\n755')" ] ||
	fail "modes without -p at the server (umask 022): $(stat -c '%n %a' root/loose/* root/loose)"
for f in root/loose/open root/loose/shut; do
	[ "$(stat -c %Y "$f")" -ge "$before" ] || fail "$f kept its mtime without -p: $(stat -c %y "$f")"
done
capture sh -c "umask 077 && exec \"\$0\" -r -q 127.0.0.1:loose/ back077" "$RAILCP"
[ "$rc" -eq 0 ] || fail "pull without -p exited $rc: $err"
[ "$(stat -c %a back077/open back077/shut back077)" = "$(printf '700\n600\n700')" ] ||
	fail "modes without -p here (umask 077): $(stat -c '%n %a' back077/* back077)"
[ "$(stat -c %Y back077/open)" -ge "$before" ] || fail "pulled file kept its mtime without -p"

# DIR/ and DIR/. stand for the directory's contents, as for rsync: a new
# DST receives them, however many entries it has; the root of a pull
# (HOST:.) too.
capture "$RAILCP" -r -q loose/. 127.0.0.1:dotcopy
[ "$rc" -eq 0 ] || fail "push of loose/. to a new name exited $rc: $err"
compare loose root/dotcopy nometa >/dev/null
capture "$RAILCP" -r -q loose/ 127.0.0.1:slashcopy
[ "$rc" -eq 0 ] || fail "push of loose/ to a new name exited $rc: $err"
compare loose root/slashcopy nometa >/dev/null
capture "$RAILCP" -r -q 127.0.0.1:. everything
[ "$rc" -eq 0 ] || fail "pull of 127.0.0.1:. to a new name exited $rc: $err"
compare root everything nometa >/dev/null

expect_no_temps "$dir"
stop_server
cd / && rm -rf "$dir"
