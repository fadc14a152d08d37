# railcp --partial -u over real verbs, at CI size: a tree
# (200 small files of varied modes and mtimes, then files of 16, 24 and 16
# MiB; the walk is sorted, so half-way falls inside the 24 MiB one) pushed
# with -r -p --partial, killed with SIGKILL once half of its bytes landed at
# the server, first the client (the sender), then the server (the
# receiver); each time resumed with -r -p -u --partial. The resume must send
# at most 55% of the tree's bytes, and no more than what had not landed when
# the kill came plus a small margin (what was in flight); --json's bytes
# (what travelled), bytes_kept (--partial) and bytes_skipped (-u) must add
# up to the tree. The copy must equal the source, each file's bytes, mode
# and mtime to the nanosecond and each directory's mode and mtime, and no
# .railcp-tmp-* may be left. A resume
# that sends everything again, or one that loses what landed, fails here.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root
/usr/bin/python3 -c '
import os, random
rnd = random.Random(12)
os.makedirs("src/tree/sub")
for name, mib in (("src/tree/big1", 16), ("src/tree/big2", 24), ("src/tree/sub/big3", 16)):
    with open(name, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
modes = (0o600, 0o640, 0o644, 0o664, 0o700, 0o750, 0o755, 0o444, 0o400, 0o751)
for d in range(10):
    os.makedirs("src/tree/a/d%d" % d)
for i in range(200):
    p = "src/tree/a/d%d/f%03d" % (i % 10, i)
    with open(p, "wb") as f:
        f.write(os.urandom(rnd.randrange(0, 40000)))
    os.chmod(p, modes[i % len(modes)])
    # mtimes with nanoseconds, past and future
    t = rnd.randrange(10**9, 2 * 10**9) * 10**9 + rnd.randrange(10**9)
    os.utime(p, ns=(t, t))
os.chmod("src/tree/big1", 0o640)
os.utime("src/tree/big1", ns=(1500000000123456789, 1500000000123456789))
os.chmod("src/tree/big2", 0o600)
os.utime("src/tree/big2", ns=(1600000000987654321, 1600000000987654321))
os.utime("src/tree/sub/big3", ns=(2000000000000000001, 2000000000000000001))
for d in ["src/tree/a/d%d" % d for d in range(10)] + ["src/tree/a", "src/tree/sub", "src/tree"]:
    os.chmod(d, 0o750 if d.endswith(("3", "7")) else 0o755)
    t = rnd.randrange(10**9, 2 * 10**9) * 10**9 + rnd.randrange(10**9)
    os.utime(d, ns=(t, t))'
total=$(find src/tree -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
log=serve.log
# As testbed/copy_partial.sh: one QP on one rail in 64 KiB chunks, the same
# for the resume (a record holds for its chunk size only).
slow="--qps-per-rail 1 --rails rxe0:1 --chunk 64K"
# What may land after the kill is measured and still be lost: the chunks in
# flight (a QP's slots) and the small files in random temporaries.
margin=$((2 << 20))

# cut VICTIM: push the tree with -r -p --partial and kill VICTIM (client,
# or the server: $server_pid) with SIGKILL once half of the tree landed
# beneath root/tree: files under their final names (whole, with -p's
# metadata) and partial files (tmpfs: their blocks are the bytes written).
# The watcher starts the copy itself, so it cannot miss the half-way mark
# while starting up, and looks every few ms (in an emulated guest on a busy
# host it still overshoots by up to ~15% of the tree: hence the second
# bound in resumed, what had not landed). Prints the bytes landed when the kill came.
cut() {
	/usr/bin/python3 -c '
import os, signal, subprocess, sys, time
victim, total, server = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
done = {}  # files under their final names: whole, no need to stat them again
def landed():
    n = 0
    for d, _, names in os.walk("root/tree"):
        for name in names:
            p = os.path.join(d, name)
            if p in done:
                n += done[p]
                continue
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue  # renamed meanwhile
            if name.startswith(".railcp-tmp-p"):
                n += min(st.st_blocks * 512, st.st_size)
            elif not name.startswith(".railcp-tmp-"):
                n += done.setdefault(p, st.st_size)
    return n
copy = subprocess.Popen(sys.argv[4:], stderr=open("cut-%s.err" % victim, "w"))
end = time.monotonic() + 60
while landed() < total // 2:
    if copy.poll() is not None or time.monotonic() > end:
        sys.exit("the copy ended or stalled before half of it landed (status %r)" % copy.poll())
    time.sleep(0.002)
n = landed()
os.kill(copy.pid if victim == "client" else server, signal.SIGKILL)
if copy.wait(60) == 0:
    sys.exit("the copy whose %s was killed succeeded" % victim)
print(n)' "$1" "$total" "$server_pid" "$RAILCP" -q -r -p --partial $slow src/tree 127.0.0.1:
}

# resumed LABEL JSON LANDED: the summary adds up, and the resume sent at
# most 55% of the tree and what had not landed (plus the margin).
resumed() {
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
total, landed, margin, label = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
sent, kept, skipped = d["bytes"], d["bytes_kept"], d["bytes_skipped"]
print("%s: killed with %.1f%% landed; the resume sent %.1f%% (%d bytes), kept %.1f%%, skipped %.1f%% in %d files"
      % (label, 100 * landed / total, 100 * sent / total, sent, 100 * kept / total, 100 * skipped / total,
         d["files_skipped"]))
assert sent + kept + skipped == total, ("sent, kept and skipped do not add up to the tree", sent, kept, skipped, total)
assert kept > 0 and d["files_skipped"] > 0, ("nothing was kept or nothing skipped", d)
assert sent <= total - landed + margin, ("sent more than had not landed", sent, total - landed + margin)
assert sent <= 0.55 * total, ("sent more than 55%% of the tree", sent, total)
' "$2" "$total" "$3" $margin "$1" || fail "$1: the resume sent too much: $(cat "$2")"
}

# same LABEL: root/tree equals src/tree: the same names, each file's bytes,
# mode and mtime (ns), and each directory's mode and mtime (ns): the resume
# knows the directories the cut copy made by their marker (io/root.c) and
# gives them the source's metadata as if it had made them itself.
same() {
	/usr/bin/python3 -c '
import hashlib, os, stat, sys
def walk(top):
    out = {}
    for d, dirs, names in os.walk(top):
        for name in dirs + names:
            p = os.path.join(d, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, top)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("f", st.st_mode & 0o7777, st.st_mtime_ns, h)
            else:
                out[rel] = ("d", st.st_mode & 0o7777, st.st_mtime_ns, None)
    return out
a, b = walk("src/tree"), walk("root/tree")
assert set(a) == set(b), ("names differ", sorted(set(a) ^ set(b))[:10])
bad = [(k, a[k], b[k]) for k in sorted(a) if a[k][0] == "f" and a[k] != b[k]]
assert not bad, ("%d files differ (name, source, copy)" % len(bad), bad[:5])
dirs = [(k, oct(a[k][1]), a[k][2], oct(b[k][1]), b[k][2]) for k in sorted(a) if a[k][0] == "d" and a[k] != b[k]]
assert not dirs, ("%d directories differ in mode or mtime (name, source, copy)" % len(dirs), dirs[:3])
print("%s: %d files and %d directories equal the source: bytes, mode and mtime"
      % (sys.argv[1], sum(v[0] == "f" for v in a.values()), sum(v[0] == "d" for v in a.values())))
' "$1" || fail "$1: the copy differs from the source"
	expect_no_temps root
}

start_server "$log" --root "$dir/root"

# 1. The client (the sender) killed.
landed=$(cut client 2>&1) || fail "could not kill the client at half: $landed"
wait_for_line "failed" 60 "$log" || fail "the server's session did not end: $(cat "$log")"
[ ! -e root/tree/sub/big3 ] || fail "the last file was in place at half"
"$RAILCP" -r -p -u --partial --json $slow src/tree 127.0.0.1: >client.json 2>client.err ||
	fail "the resume after the client was killed failed: $(cat client.err)"
resumed "client killed" client.json "$landed"
same "client killed"

# 2. The server (the receiver) killed, then started again.
rm -rf root/tree
landed=$(cut server 2>&1) || fail "could not kill the server at half: $landed"
wait "$server_pid" 2>/dev/null
start_server "$log.2" --root "$dir/root"
"$RAILCP" -r -p -u --partial --json $slow src/tree 127.0.0.1: >server.json 2>server.err ||
	fail "the resume after the server was killed failed: $(cat server.err)"
resumed "server killed" server.json "$landed"
same "server killed"
stop_server
rm -rf "$dir"
exit 0
