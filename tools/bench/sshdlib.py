"""tools/bench/sshdlib.py - a private sshd on 127.0.0.1, so a bench can set scp beside railcp.

PrivateSshd runs '/usr/sbin/sshd -D -e -f CONFIG' as the user running the
bench (root or not), listening on 127.0.0.1 and a port the caller picked.
Everything it uses lives in a scratch directory of the caller's: a host
key and a client key made with ssh-keygen, an authorized_keys holding the
client's public key, the config and sshd's log. The config shuts out
everything but that key (no passwords, no PAM), turns StrictModes off (the
scratch directory is on /dev/shm, whose mode sshd would refuse) and serves
SFTP with Debian's sftp-server, as the packaged sshd_config does: OpenSSH's
scp (9.0 on) copies over SFTP.

scp_argv gives the scp command a user would type against it, with no user
or system ssh configuration read (-F /dev/null), no agent, no prompt and no
known_hosts touched.

Root: sshd insists on its privilege separation directory (/run/sshd,
fixed when OpenSSH is built). When it is missing, start makes it as
Debian's service would and stop removes it again.

stop ends the listener and every process it forked (each session's sshd
leaves its process group, so they are found through /proc), whatever state
the run was left in; should the bench be killed before it can run stop,
the kernel sends sshd SIGTERM (PR_SET_PDEATHSIG). Python 3 standard
library only; not thread-safe.
"""

import ctypes
import os
import shutil
import signal
import subprocess
import time

SSHD = "/usr/sbin/sshd"  # sshd wants its absolute path (it executes itself again)
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
PRIVSEP_DIR = "/run/sshd"
PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None, use_errno=True)


def missing_tool():
    """The first of sshd, sftp-server, scp and ssh-keygen that is not installed, or None."""
    for tool in (SSHD, SFTP_SERVER):
        if not os.access(tool, os.X_OK):
            return tool
    for tool in ("scp", "ssh-keygen"):
        if not shutil.which(tool):
            return tool
    return None


def die_with_parent():
    """In sshd before it starts: SIGTERM when the bench dies, even by SIGKILL, where stop cannot run."""
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def children_of(pid):
    """Every live descendant of pid, from /proc (parents before children)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        todo += kids
    return found


class PrivateSshd:
    def __init__(self, top, port):
        self.dir = os.path.join(top, "sshd")
        self.port = port
        self.key = os.path.join(self.dir, "id")
        self.log = os.path.join(self.dir, "sshd.log")
        self.proc = None
        self.made_privsep = False

    def keygen(self, path):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "railcp-bench", "-f", path],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def configure(self):
        """Keys, authorized_keys and the config; returns the config's path."""
        os.makedirs(self.dir, mode=0o700)
        self.keygen(os.path.join(self.dir, "host"))
        self.keygen(self.key)
        auth = os.path.join(self.dir, "authorized_keys")
        with open(self.key + ".pub") as src, open(auth, "w") as dst:
            dst.write(src.read())
        conf = os.path.join(self.dir, "sshd_config")
        with open(conf, "w") as f:
            f.write("ListenAddress 127.0.0.1:%d\nHostKey %s/host\nAuthorizedKeysFile %s\nPidFile %s/sshd.pid\n"
                    "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nSubsystem sftp %s\n"
                    % (self.port, self.dir, auth, self.dir, SFTP_SERVER))
        return conf

    def start(self):
        """Starts sshd and waits up to 10 s for it to listen; RuntimeError if it does not."""
        try:
            conf = self.configure()
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError("cannot set up a private sshd: %s" % (getattr(e, "stderr", None) or e))
        if os.geteuid() == 0 and not os.path.isdir(PRIVSEP_DIR):
            os.mkdir(PRIVSEP_DIR)
            os.chmod(PRIVSEP_DIR, 0o755)  # whatever the umask: sshd refuses a directory others may write
            self.made_privsep = True
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", conf], stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=die_with_parent)
        for _ in range(200):
            with open(self.log) as f:
                text = f.read()
            if "Server listening on" in text:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("sshd exited at start: %s" % (text.strip().splitlines() or ["(no output)"])[-1])
            time.sleep(0.05)
        raise RuntimeError("sshd did not listen on port %d within 10 s" % self.port)

    def scp_argv(self, src, dst, recursive=False):
        """scp [-r] SRC to DST on this sshd, as the user running the bench."""
        return (["scp", "-q", "-F", "/dev/null", "-P", str(self.port), "-i", self.key, "-o", "IdentitiesOnly=yes",
                 "-o", "IdentityAgent=none", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                 "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
                + (["-r"] if recursive else []) + [src, "127.0.0.1:" + dst])

    def stop(self):
        """Ends sshd and every session it forked; removes the privilege separation directory it made."""
        if self.proc is not None:
            kids = children_of(self.proc.pid)
            self.proc.terminate()
            for pid in kids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass  # ended already
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.made_privsep:
            try:
                os.rmdir(PRIVSEP_DIR)
            except OSError:
                pass  # a system sshd has put something there since: leave it
            self.made_privsep = False
