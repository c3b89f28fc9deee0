"""Memory cgroups for the benchmarks: a fresh group with a limit, and running in it."""
import json
import os
import subprocess
import sys
import time

GiB = 1 << 30


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = s.strip().upper().rstrip("B").rstrip("I")
    return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units else int(s)


def enable_memory(parent):
    """Give parent's children the memory controller. cgroup v2 allows that only in a group
    without processes of its own: move them into a leaf first (same limits above)."""
    ctl = os.path.join(parent, "cgroup.subtree_control")
    if "memory" in open(ctl).read().split():
        return
    try:
        with open(ctl, "w") as f:
            f.write("+memory")
        return
    except OSError:
        pass
    leaf = os.path.join(parent, "hr-leaf")
    os.makedirs(leaf, exist_ok=True)
    for pid in open(os.path.join(parent, "cgroup.procs")).read().split():
        try:
            with open(os.path.join(leaf, "cgroup.procs"), "w") as f:
                f.write(pid)
        except OSError:
            pass  # gone, or a kernel thread
    with open(ctl, "w") as f:
        f.write("+memory")


class Cgroup:
    """A fresh memory cgroup with a limit, under the cgroup this script runs in."""

    def __init__(self, name, limit):
        self.v2 = False
        self.dir = None
        for line in open("/proc/self/cgroup"):
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctrls.split(","):
                base = "/sys/fs/cgroup/memory"
                if not os.path.isdir(base + path):
                    path = "/"
                self.dir = os.path.join(base + path, name)
        if self.dir is None:  # pure v2
            path = [l for l in open("/proc/self/cgroup") if l.startswith("0::")][0].rstrip("\n")[3:]
            parent = "/sys/fs/cgroup" + path
            self.v2 = True
            try:
                enable_memory(parent)
            except OSError as e:
                sys.exit(f"bench: cannot enable the memory controller under {parent}: {e}")
            self.dir = os.path.join(parent, name)
        if os.path.isdir(self.dir):
            self.remove()
        os.mkdir(self.dir)
        self.write("memory.max" if self.v2 else "memory.limit_in_bytes", str(limit))
        if not self.v2 and os.path.exists(os.path.join(self.dir, "memory.memsw.limit_in_bytes")):
            try:
                self.write("memory.memsw.limit_in_bytes", str(limit))
            except OSError:
                pass
        if self.v2:
            try:
                self.write("memory.swap.max", "0")
            except OSError:
                pass

    def write(self, f, v):
        with open(os.path.join(self.dir, f), "w") as fh:
            fh.write(v)

    def read_key(self, f, key):
        try:
            for line in open(os.path.join(self.dir, f)):
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
        except OSError:
            pass
        return None

    def peak(self):
        f = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        try:
            return int(open(os.path.join(self.dir, f)).read())
        except OSError:
            return None

    def oom_kills(self):
        return self.read_key("memory.events" if self.v2 else "memory.oom_control", "oom_kill") or 0

    def remove(self):
        for _ in range(100):
            procs = open(os.path.join(self.dir, "cgroup.procs")).read().split()
            for p in procs:
                try:
                    os.kill(int(p), 9)
                except OSError:
                    pass
            # child groups headroom made for its jobs
            for d in os.listdir(self.dir):
                sub = os.path.join(self.dir, d)
                if os.path.isdir(sub):
                    try:
                        os.rmdir(sub)
                    except OSError:
                        pass
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.1)


def run_in_cgroup(name, limit, argv, cwd, env, report=None):
    """Run argv in a fresh group. OOM kills: the group's counter; cgroup v1 counts a kill
    only in the victim's own group, so for headroom, whose jobs have groups of their own
    that it removes, pass its --report file: it counts the kills it saw in them."""
    cg = Cgroup(name, limit)
    wrapped = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cg.dir] + argv
    t0 = time.monotonic()
    p = subprocess.run(wrapped, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    ooms = cg.oom_kills()
    if report:
        try:
            ooms = max(ooms, json.load(open(report))["oom_kills"])
        except (OSError, ValueError, KeyError):
            pass
    res = {"rc": p.returncode, "wall_s": wall, "peak_bytes": cg.peak(), "oom_kills": ooms,
           "stderr_tail": p.stderr[-2000:]}
    cg.remove()
    return res
