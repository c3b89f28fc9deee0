#!/usr/bin/env python3
"""A hostile (or confused) launcher for the tests: it speaks the governor's protocol
(src/govern/proto.h) on $HEADROOM_SOCK, run as a build command under `headroom run`, and
says what the governor did. One case per call:

  claim-pid PID      request, admit, then claim PID (and PID + 2^32) as its tool the way
                     the protocol once let it, and hang up: a governor that believed it
                     killed -PID
  maxrss BYTES       request, admit, then report a job that exited 0 with maxrss_bytes
                     BYTES; prints the governor's answer (or "none")
  long-line BYTES    send BYTES without a newline; prints "hung up after N" or "kept all N"
  bad-then-good      a line that is no JSON and a valid request in one write; prints
                     "admitted" or "nothing"
"""
import json
import os
import socket
import sys


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["HEADROOM_SOCK"])
    return s


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


REQUEST = {"type": "request", "attempt": 1, "tool": "cc", "src": "hostile.c", "class": "cc -O2",
           "sig": "cc -O2 :: hostile.c", "cached": False, "check": False}


def recv_line(s, timeout):
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                return None
            buf += chunk
    except socket.timeout:
        return None
    return json.loads(buf.split(b"\n", 1)[0])


def admitted(s, timeout=5):
    """The admit (waits skipped), or None."""
    while True:
        m = recv_line(s, timeout)
        if m is None or m.get("type") == "admit":
            return m


def claim_pid(pid):
    for claim in (pid, pid + 2**32):
        s = connect()
        s.sendall(line(dict(REQUEST, pid=claim)))
        adm = admitted(s)
        if adm is None:
            sys.exit("no admit")
        s.sendall(line({"type": "started", "job": adm["job"], "pid": claim}))
        s.close()
    print("claimed")


def maxrss(value):
    s = connect()
    s.sendall(line(REQUEST))
    adm = admitted(s)
    if adm is None:
        sys.exit("no admit")
    s.sendall(line({"type": "done", "job": adm["job"], "duration_ms": 300, "maxrss_bytes": value, "exit": 0,
                    "signal": None, "cache_hit": None}))
    s.close()
    print("reported")


def long_line(n):
    s = connect()
    s.settimeout(5)
    sent, chunk = 0, b"x" * 65536
    try:
        while sent < n:
            sent += s.send(chunk[: min(len(chunk), n - sent)])
        # all of it went into the socket: did the governor hang up on it since?
        if s.recv(1) == b"":
            print(f"hung up after {sent}")
            return
    except (BrokenPipeError, ConnectionResetError):
        print(f"hung up after {sent}")
        return
    except socket.timeout:
        pass
    print(f"kept all {sent}")


def bad_then_good():
    s = connect()
    s.sendall(b"not json\n" + line(REQUEST))
    print("admitted" if admitted(s, 3) else "nothing")


def main():
    case, args = sys.argv[1], sys.argv[2:]
    if case == "claim-pid":
        claim_pid(int(args[0]))
    elif case == "maxrss":
        maxrss(int(args[0]))
    elif case == "long-line":
        long_line(int(args[0]))
    elif case == "bad-then-good":
        bad_then_good()
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main()
