"""The cost of one process to itself: wall time, its own CPU time (not its children's)
and its peak resident set, for the bench scripts that measure the governor (`headroom
run` itself is the governor)."""
import os
import subprocess
import time

HZ = os.sysconf("SC_CLK_TCK")


def _own_cpu_s(pid):
    # utime and stime, fields 14 and 15; the name (field 2) may hold blanks
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / HZ


def _hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_measured(argv, poll_s=0.02, timeout_s=None, **popen):
    """Run argv; return (exit status, wall s, own CPU s, peak RSS KiB). The CPU time is
    read from the exited, not yet reaped process, so it is whole; the peak resident set
    is polled every poll_s while it runs (it only grows). Past timeout_s it gets SIGTERM
    (headroom stops its build) and the status is "timeout"."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, **popen)
    hwm, stopped = 0, False
    while os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        hwm = max(hwm, _hwm_kib(p.pid))
        if timeout_s and not stopped and time.monotonic() - t0 > timeout_s:
            p.terminate()
            stopped = True
        time.sleep(poll_s)
    wall = time.monotonic() - t0
    cpu = _own_cpu_s(p.pid)
    rc = p.wait()
    return "timeout" if stopped else rc, wall, cpu, hwm
