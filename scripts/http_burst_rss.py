#!/usr/bin/env python3
"""The resident memory of examples/http_echo after bursts of idle connections
(issue 26): does freed heap memory go back to the kernel once the server idles?

    scripts/http_burst_rss.py [--bin PATH] [--rounds 7] [--conns 5000]
                              [--settle 10] [--procs 2] [--env K=V ...] [--json]

Starts the server (`--addr 127.0.0.1:0 --procs P`; default binary
target/release/examples/http_echo, build it with
`cargo build --release --example http_echo`), then runs `rounds` rounds. A
round opens `conns` connections, sends `GET /` on each, reads every answer
while all stay open, then closes them all and waits until the server's
connection goroutines have exited (`GET /stats`, `live`). RSS (VmRSS of
/proc/PID/status) is read with every connection open (`peak`) and once they are
gone (`after`); after the last round, again `settle` seconds later (`final`).
Prints one line per round and the verdict: `final` within 2x of round 1's
`after` (exit status 0, else 1).

The fd limit is raised to its hard limit (the server inherits it); `conns` plus
a margin must fit. Loopback ports in TIME_WAIT are reused
(net.ipv4.tcp_tw_reuse=2, Linux's default, covers loopback).
"""

import argparse
import json
import os
import re
import resource
import socket
import subprocess
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: burst\r\n\r\n"
TIMEOUT_S = 30
#: The server's goroutines with no connection open: the accept loop, and
#: whatever the runtime keeps; read before the first round.
LIVE_WAIT_S = 30


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def read_answer(sock):
    """Reads one HTTP answer (headers and Content-Length body)."""
    data = b""
    while True:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", data[:head_end])
            need = head_end + 4 + (int(m.group(1)) if m else 0)
            if len(data) >= need:
                if not data.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"unexpected answer {data[:40]!r}")
                return
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed a connection before answering")
        data += chunk


def live_goroutines(addr):
    with socket.create_connection(addr, timeout=TIMEOUT_S) as s:
        s.sendall(b"GET /stats HTTP/1.1\r\nHost: burst\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    body = data.split(b"\r\n\r\n", 1)[1]
    # The /stats connection's own goroutine counts: it is still running.
    return json.loads(body)["live"] - 1


def wait_live(addr, want):
    deadline = time.monotonic() + LIVE_WAIT_S
    while (n := live_goroutines(addr)) > want:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{n} goroutines still live, {want} expected")
        time.sleep(0.05)


def one_round(addr, conns):
    socks = []
    try:
        for _ in range(conns):
            s = socket.create_connection(addr, timeout=TIMEOUT_S)
            socks.append(s)
        for s in socks:
            s.sendall(REQUEST)
        for s in socks:
            read_answer(s)
        return socks
    except BaseException:
        for s in socks:
            s.close()
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/examples/http_echo")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--conns", type=int, default=5000)
    ap.add_argument("--settle", type=float, default=10.0, help="seconds to wait after the last round")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--env", action="append", default=[], help="K=V for the server's environment")
    ap.add_argument("--label", default="")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line too")
    a = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.conns + 256
    if hard != resource.RLIM_INFINITY and hard < want:
        sys.exit(f"the fd hard limit {hard} is below {want} (--conns {a.conns} plus a margin)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    env = dict(os.environ)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    env["GOMAXPROCS"] = str(a.procs)
    server = subprocess.Popen(
        [a.bin, "--addr", "127.0.0.1:0", "--procs", str(a.procs)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        line = server.stdout.readline()
        m = re.match(r"listening on (\S+):(\d+)", line)
        if not m:
            sys.exit(f"the server did not say where it listens: {line!r}")
        addr = (m.group(1), int(m.group(2)))
        pid = server.pid
        idle_live = live_goroutines(addr)
        start_rss = rss_kib(pid)
        rounds = []
        for r in range(1, a.rounds + 1):
            t0 = time.monotonic()
            socks = one_round(addr, a.conns)
            peak = rss_kib(pid)
            for s in socks:
                s.close()
            wait_live(addr, idle_live)
            after = rss_kib(pid)
            rounds.append({"peak": peak, "after": after, "threads": threads(pid)})
            print(
                f"{a.label}round {r}: RSS {peak / 1024:.1f} MiB with {a.conns} open, "
                f"{after / 1024:.1f} MiB after they closed ({time.monotonic() - t0:.1f} s, "
                f"{threads(pid)} threads)",
                flush=True,
            )
        time.sleep(a.settle)
        final = rss_kib(pid)
        first = rounds[0]["after"]
        ok = final <= 2 * first
        print(
            f"{a.label}start {start_rss / 1024:.1f} MiB; after round 1 {first / 1024:.1f} MiB; "
            f"{a.settle:g} s after round {a.rounds} {final / 1024:.1f} MiB "
            f"({final / first:.2f}x): {'ok' if ok else 'over 2x'}",
            flush=True,
        )
        if a.json:
            print(json.dumps({"label": a.label, "start": start_rss, "rounds": rounds, "final": final}))
        return 0 if ok else 1
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
