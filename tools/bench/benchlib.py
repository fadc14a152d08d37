"""tools/bench/benchlib.py - what tools/bench/perftest and tools/bench/copy share.

Both scripts run twice: on the host, where they check their arguments, boot
one testbed guest (tools/testbed/boot) and summarize; and inside that guest
(--guest), where they start servers, run the measured commands and write
every figure to a JSON file on the testbed's writable share. This module holds the parts
that are the same in both:

  arguments   parse_size, parse_count, fmt_size, Parser (one-line errors)
  host        die, find_testbed, railcp_answers, check_railcp_devices,
              check_json_dest, run_guest, print_notes, write_json
  guest       GuestBase (child processes, servers, railcp devices --json),
              write_guest_results, write_guest_error
  figures     BenchError, tail, positive, ratio_of, spread, railcp_report

Rails are found by asking railcp itself ('railcp devices --json'), so the
benchmarks use exactly the devices, ports, addresses and NUMA nodes railcp
sees, on the testbed or on real hardware alike.

Python 3 standard library only; nothing here is thread-safe (the scripts
are single-threaded).
"""

import argparse
import ipaddress
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
RAILCP_PORT = 7470  # railcp serve's default port (ENG_DEFAULT_PORT)


class BenchError(Exception):
    """A run failed or a figure could not be read: the whole benchmark fails."""


# ---------------------------------------------------------------------------
# Arguments.

def parse_size(text):
    """argparse type: a positive byte count with an optional K, M or G (binary) suffix."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGkmg]?)(?:i?[Bb])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("'%s' is not a size (a whole number with an optional K, M or G)" % text)
    value = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]
    if value <= 0:
        raise argparse.ArgumentTypeError("a size must be positive, not '%s'" % text)
    return value


def parse_count(text):
    """argparse type: a whole number of at least 1."""
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError("'%s' is not a whole number of at least 1" % text)
    return int(text)


def fmt_size(n):
    """A byte count the way the options take it: 64M, 4K, or plain bytes when no suffix fits."""
    for shift, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, suffix)
    return str(n)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, 'NAME: what is wrong (see PROG --help)', status 2.

    NAME is the name the script's messages start with (bench-copy); prog is
    the path the user types (tools/bench/copy)."""

    def __init__(self, name, **kwargs):
        super().__init__(**kwargs)
        self.name = name

    def error(self, message):
        # One line, not argparse's usage block: the caller sees exactly what is wrong.
        print("%s: %s (see %s --help)" % (self.name, message, self.prog), file=sys.stderr)
        sys.exit(2)


# ---------------------------------------------------------------------------
# Host side.

def die(prog, msg):
    """One line 'PROG: msg' on stderr and exit status 1."""
    print("%s: %s" % (prog, msg), file=sys.stderr)
    sys.exit(1)


def find_testbed(prog, script):
    """tools/testbed/boot, beside the running script's tools/bench/, or die."""
    testbed = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(script)), "..", "testbed", "boot"))
    if not os.access(testbed, os.X_OK):
        die(prog, "cannot find tools/testbed/boot beside this script's directory (%s)" % testbed)
    return testbed


def railcp_answers(railcp, command, option):
    """Whether 'railcp COMMAND --help' succeeds and mentions option; returns (ok, exit status)."""
    probe = subprocess.run([railcp, command, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
    return probe.returncode == 0 and option in probe.stdout, probe.returncode


def check_railcp_devices(prog, railcp):
    """Die unless railcp can list devices as JSON: the guest finds its rails with it."""
    ok, rc = railcp_answers(railcp, "devices", "--json")
    if not ok:
        die(prog, "%s cannot list RDMA devices as JSON (railcp devices --help exited %d without --json); "
                  "the benchmark finds its rails with it" % (railcp, rc))


def check_json_dest(prog, path):
    """Die unless --json PATH can be written, before a guest boots for nothing."""
    if path:
        json_dir = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(json_dir) or not os.access(json_dir, os.W_OK):
            die(prog, "cannot write --json %s: %s is not a writable directory" % (path, json_dir))


def run_guest(prog, script, testbed, timeout, guest_args, testbed_args=()):
    """Boots one testbed guest running 'SCRIPT --guest --results FILE GUEST_ARGS...'
    (TESTBED_ARGS go to tools/testbed/boot before its '--').

    The guest's output streams to stdout. Returns (results, out, seconds):
    the guest's results document, the share directory (the caller removes it
    once its figures are checked; it is kept, and named, on every failure)
    and the seconds the boot and runs took. Dies with the guest's one-line
    error when it wrote one."""
    out = tempfile.mkdtemp(prefix="railcp-%s." % prog)
    results_path = os.path.join(out, "results.json")
    guest_argv = ["/usr/bin/python3", os.path.abspath(script), "--guest", "--results", results_path] + guest_args
    started = time.monotonic()
    rc = subprocess.call([testbed, "--timeout", str(timeout), "--out", out] + list(testbed_args) +
                         ["--"] + guest_argv)
    elapsed = time.monotonic() - started
    try:
        with open(results_path + ".error") as f:
            die(prog, f.read().strip() + " (guest files kept in %s)" % out)
    except FileNotFoundError:
        pass
    if rc != 0:
        die(prog, "the testbed run failed with status %d (guest files kept in %s)" % (rc, out))
    try:
        with open(results_path) as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        die(prog, "cannot read the guest's results %s: %s" % (results_path, e))
    return results, out, elapsed


def print_notes(results, elapsed):
    """The closing lines: the guest's warnings, then how long the testbed took."""
    for w in results.get("warnings", []):
        print("note: %s" % w)
    print("testbed boot and runs took %.0f s" % elapsed)


def write_json(path, doc):
    """doc as indented JSON with a final newline (the --json file)."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


# ---------------------------------------------------------------------------
# Guest side.

def natural_key(name):
    """Sort key that puts rxe2 before rxe10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def rails_from_devices(doc):
    """Every ACTIVE port in a 'railcp devices --json' document, in name order.

    Each rail: name (rxe0:1, as railcp's --rails takes it), dev, port,
    netdev (None for InfiniBand), addr and gid_index of the port's first
    IPv4-mapped RoCE v2 GID (both None when it has none), and node: the
    device's NUMA node, -1 when railcp does not know it."""
    devices = doc.get("devices") if isinstance(doc, dict) else None
    if not isinstance(devices, list):
        raise BenchError("railcp devices --json gave no list of devices")
    rails = []
    for dev in sorted(devices, key=lambda d: natural_key(str(d.get("name")))):
        node = dev.get("numa_node")
        for port in sorted(dev.get("ports") or [], key=lambda p: p.get("port", 0)):
            if port.get("state") != "ACTIVE":
                continue
            addr = gid_index = None
            for gid in port.get("gids") or []:
                if gid.get("type") != "RoCE v2":
                    continue
                try:
                    v4 = ipaddress.IPv6Address(gid.get("address", "")).ipv4_mapped
                except ValueError:
                    continue
                if v4 is not None:
                    addr, gid_index = str(v4), gid.get("index")
                    break
            rails.append({"name": "%s:%d" % (dev["name"], port["port"]), "dev": dev["name"],
                          "port": port["port"], "netdev": port.get("netdev"), "addr": addr,
                          "gid_index": gid_index, "node": node if isinstance(node, int) else -1})
    return rails


class GuestBase:
    """The guest side's process handling, shared by both benchmarks.

    Every child runs in its own session, so kill_all (on any failure) takes
    its whole process group. self.env is the environment children get
    (None: this process's own)."""

    def __init__(self, a, env=None):
        self.a = a
        self.env = env
        self.children = []
        self.warnings = []

    def discover_rails(self):
        """The rails railcp sees: every ACTIVE port of 'railcp devices --json' (see rails_from_devices)."""
        argv = [self.a.railcp, "devices", "--json"]
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  universal_newlines=True, env=self.env, timeout=self.a.run_timeout)
        except subprocess.TimeoutExpired:
            raise BenchError("%s did not finish within %d s" % (" ".join(argv), self.a.run_timeout))
        if proc.returncode != 0:
            raise BenchError("%s exited with status %d: %s"
                             % (" ".join(argv), proc.returncode, proc.stderr.strip() or "(no output)"))
        try:
            doc = json.loads(proc.stdout)
        except ValueError:
            raise BenchError("%s: stdout is not one JSON object: %s" % (" ".join(argv), proc.stdout.strip()[:200]))
        return rails_from_devices(doc)

    def spawn(self, argv, log):
        """Starts argv in the background, stdout and stderr into log."""
        with open(log, "w") as f:
            proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=self.env)
        self.children.append(proc)
        return proc

    def reap(self, proc, deadline, what, log):
        """Waits for proc until deadline (time.monotonic()); returns its exit status."""
        try:
            rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise BenchError("%s did not finish within %d s; last output: %s"
                             % (what, self.a.run_timeout, tail(log)))
        self.children.remove(proc)
        return rc

    def run(self, argv, what, out):
        """Runs argv to its end, stdout into out and stderr into out.err; returns (stdout, seconds from
        exec to exit). A non-zero exit status is a BenchError with the end of stderr."""
        err = out + ".err"
        with open(out, "w") as fo, open(err, "w") as fe:
            started = time.monotonic()
            proc = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=self.env)
            self.children.append(proc)
            rc = self.reap(proc, started + self.a.run_timeout, what, err)
            elapsed = time.monotonic() - started
        if rc != 0:
            raise BenchError("%s exited with status %d: %s" % (what, rc, tail(err)))
        with open(out) as f:
            return f.read(), elapsed

    def kill_all(self):
        """SIGKILL to every child still running, and its process group."""
        for proc in self.children:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
        self.children = []

    def stop(self, proc, what, log):
        """SIGTERM to a server; returns its exit status (what names it in a timeout)."""
        proc.send_signal(signal.SIGTERM)
        return self.reap(proc, time.monotonic() + 30, what, log)

    @staticmethod
    def listening(port):
        """Whether some socket listens on TCP port (IPv4 or IPv6)."""
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    next(f)
                    for line in f:
                        fields = line.split()
                        if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                            return True
            except OSError:
                pass
        return False

    def wait_listening(self, port, proc, what, log):
        """Waits up to 30 s for proc to listen on TCP port."""
        deadline = time.monotonic() + 30
        while not self.listening(port):
            if proc.poll() is not None:
                raise BenchError("%s exited with status %d before listening: %s" % (what, proc.returncode, tail(log)))
            if time.monotonic() > deadline:
                raise BenchError("%s did not listen on port %d within 30 s" % (what, port))
            time.sleep(0.05)

    def spawn_serve(self, argv, log):
        """Starts 'railcp serve ...' and waits up to 30 s for its 'serving on ' line;
        returns (process, the log's text so far)."""
        proc = self.spawn(argv, log)
        deadline = time.monotonic() + 30
        while True:
            with open(log) as f:
                text = f.read()
            if "serving on " in text:
                return proc, text
            if proc.poll() is not None:
                raise BenchError("railcp serve exited with status %d: %s" % (proc.returncode, tail(log)))
            if time.monotonic() > deadline:
                raise BenchError("railcp serve was not ready within 30 s: %s" % tail(log))
            time.sleep(0.05)

    def warn(self, msg):
        """A note for the summary, once however often it happens."""
        if msg not in self.warnings:
            self.warnings.append(msg)


def write_guest_results(path, results):
    """The guest's results document, renamed into place so the host never reads half of it."""
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
    os.rename(path + ".tmp", path)


def write_guest_error(path, err, guest):
    """After a failure in the guest: stops guest's children and leaves the one-line reason
    for the host (run_guest prints it). Returns the guest side's exit status, 3."""
    if guest is not None:
        guest.kill_all()
    with open(path + ".error", "w") as f:
        f.write(str(err) + "\n")
    return 3


# ---------------------------------------------------------------------------
# Figures.

def tail(path, lines=3):
    """The last non-empty lines of a log, joined by ' | ', for one-line errors."""
    try:
        with open(path, errors="replace") as f:
            text = [l.strip() for l in f.read().splitlines() if l.strip()]
    except OSError:
        return "(no output)"
    return " | ".join(text[-lines:]) if text else "(no output)"


def positive(x):
    """Whether x is a finite number above 0 (a usable figure; bool is not one)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def ratio_of(x, y):
    """x / y, or a BenchError when either is not a usable figure."""
    if not positive(x) or not positive(y):
        raise BenchError("cannot form a ratio from %r and %r" % (x, y))
    return x / y


def spread(values):
    """min, median, max and every value of one figure over the rounds."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "all": values}


def railcp_report(text, total, what):
    """The checks every railcp --json summary (bench or copy) must pass: one JSON object, data
    verified by the receiver, total bytes moved, positive seconds. Returns the object; each
    benchmark then checks what it asked for (chunk, QPs or stripes, rails)."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise BenchError("%s: stdout is not one JSON object: %s" % (what, text.strip()[:200] or "(empty)"))
    if not isinstance(doc, dict):
        raise BenchError("%s: stdout is not a JSON object" % what)
    if doc.get("verified") is not True:
        raise BenchError("%s: the receiver did not verify the data (verified = %r)" % (what, doc.get("verified")))
    if doc.get("bytes") != total:
        raise BenchError("%s: moved %r bytes, expected %d" % (what, doc.get("bytes"), total))
    if not positive(doc.get("seconds")):
        raise BenchError("%s: seconds is %r" % (what, doc.get("seconds")))
    return doc
