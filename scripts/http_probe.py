#!/usr/bin/env python3
"""Checks that an http_echo server behaves as the benchmark assumes, before wrk
measures it (wrk itself checks no answer body):

    http_probe.py --addr 127.0.0.1:PORT --method get|post [--size 64]

Sends two requests of the method on ONE connection: `GET /` must answer 200 with
a non-empty body; `POST /` with a `size`-byte body must answer 200 with exactly
that body and `Content-Type: application/octet-stream`; neither may close the
connection (HTTP/1.1 keep-alive). Exits 0 if so, else 1 with the reason on one
line of stderr (scripts/compare_http.sh puts it in the report's cell).
"""

import argparse
import http.client
import sys

TIMEOUT_S = 5


def check(conn, method, size, i):
    body = bytes((i * 31 + k) % 251 for k in range(size)) if method == "POST" else None
    headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
    conn.request(method, "/", body=body, headers=headers)
    rsp = conn.getresponse()
    data = rsp.read()
    what = f"{method} / (request {i + 1})"
    if rsp.status != 200:
        raise ValueError(f"{what}: status {rsp.status} {rsp.reason}")
    if rsp.will_close:
        raise ValueError(f"{what}: the server closes the connection (no keep-alive)")
    if method == "GET" and not data:
        raise ValueError(f"{what}: empty body")
    if method == "POST":
        ctype = rsp.getheader("Content-Type", "")
        if data != body:
            raise ValueError(f"{what}: the answer is {len(data)} bytes, not the {size} bytes sent")
        if ctype.split(";")[0].strip().lower() != "application/octet-stream":
            raise ValueError(f"{what}: Content-Type {ctype!r}, expected application/octet-stream")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", required=True, help="host:port")
    ap.add_argument("--method", choices=["get", "post"], required=True)
    ap.add_argument("--size", type=int, default=64, help="POST body bytes")
    a = ap.parse_args()
    host, _, port = a.addr.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S)
    conn.auto_open = 0  # a closed connection must fail, not be reopened silently
    try:
        conn.connect()
        for i in range(2):
            check(conn, a.method.upper(), a.size, i)
    except (ValueError, OSError, http.client.HTTPException) as e:
        msg = str(e) or type(e).__name__
        print(f"probe: {msg}", file=sys.stderr)
        sys.exit(1)
    finally:
        conn.close()


if __name__ == "__main__":
    main()
