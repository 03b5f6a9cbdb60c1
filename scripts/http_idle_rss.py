#!/usr/bin/env python3
"""The resident memory an HTTP server holds per idle keep-alive connection
(the `http_idle_rss` row of scripts/compare.sh).

    scripts/http_idle_rss.py --addr HOST:PORT --pid PID [--conns 18000]
                             [--idle 5] [--sources 4]

Against a running server (`pid` listening at `addr`): one `GET /` on a
connection of its own, closed, to start what the server starts on its first
request; then the server's RSS (VmRSS of /proc/PID/status) as the base. Then
`conns` connections, from the source addresses 127.0.0.2 … 127.0.0.(1+sources)
in turn, each sending `GET /` and reading the whole answer, and all left open
and idle for `idle` seconds; then the RSS again. Prints
`value=<(RSS - base) / conns in KiB>` on one line. Last, every connection
sends another `GET /` and must read a 200: a server that dropped idle
connections is measured as failing (exit status 1), not as small.

The fd limit is raised to its hard limit; `conns` plus a margin must fit (a
server needs its own margin too: examples/http_echo answers 503 beyond its
fd budget, 18,740 connections under a hard limit of 20,000).
"""

import argparse
import resource
import socket
import sys
import time

from http_burst_rss import read_answer, rss_kib

REQUEST = b"GET / HTTP/1.1\r\nHost: idle\r\n\r\n"
TIMEOUT_S = 30


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--conns", type=int, default=18_000)
    ap.add_argument("--idle", type=float, default=5.0, help="seconds the connections stay idle")
    ap.add_argument("--sources", type=int, default=4, help="client addresses 127.0.0.2 on")
    a = ap.parse_args()
    host, port = a.addr.rsplit(":", 1)
    addr = (host, int(port))

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < a.conns + 64:
        sys.exit(f"the fd hard limit {hard} is below {a.conns + 64} (--conns {a.conns} plus a margin)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    with socket.create_connection(addr, timeout=TIMEOUT_S) as s:
        s.sendall(REQUEST)
        read_answer(s)
    time.sleep(0.5)
    base = rss_kib(a.pid)
    socks = []
    try:
        for i in range(a.conns):
            src = (f"127.0.0.{2 + i % a.sources}", 0)
            s = socket.create_connection(addr, timeout=TIMEOUT_S, source_address=src)
            socks.append(s)
            s.sendall(REQUEST)
            read_answer(s)
        time.sleep(a.idle)
        idle = rss_kib(a.pid)
        for s in socks:
            s.sendall(REQUEST)
        for s in socks:
            read_answer(s)
    except (OSError, RuntimeError) as e:
        sys.exit(f"{len(socks)} of {a.conns} connections: {e}")
    finally:
        for s in socks:
            s.close()
    per_conn = (idle - base) / a.conns
    print(f"base {base} KiB, idle {idle} KiB with {a.conns} connections: value={per_conn:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
