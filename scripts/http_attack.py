#!/usr/bin/env python3
"""Attacks a local examples/http_echo server as a hostile client would, and
prints one line per attack with what the server did and whether that is right:

    scripts/http_attack.py [--bin target/release/examples/http_echo]
                           [--nofile 256] [--header-timeout 10]

Starts the server itself (127.0.0.1, a free port) with its open-files limit at
`--nofile`, so the connection flood meets the same limits a deployment would.
The attacks, each a class the server must survive:

- slow head:    a request head trickled a line every 0.5 s: 408 at the header
                timeout, however long the trickle goes on;
- slow body:    a body trickled a byte every 0.5 s: 408 at the body timeout;
- no reader:    1 MiB echo requests sent, answers never read: closed at the
                write timeout;
- flood:        nofile - 4 connections trickling their heads: the ones beyond
                --max-conns get 503, and a well-behaved client is served within
                the header timeout plus a second;
- framing:      smuggling probes (bare LF in chunked framing and heads, over-long
                chunk-size lines in one read, blank or duplicate framing headers,
                Content-Length with Transfer-Encoding): 400 and closed, the hidden
                request never answered;
- HTTP/1.0+TE:  closed after its answer.

Exits 1 if any attack got a wrong answer. Needs Python 3 and a built example
(`cargo build --release --example http_echo`).
"""

import argparse
import resource
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"


def start_server(binary, nofile, header_timeout, body_timeout, write_timeout):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        [binary, "--addr", f"{HOST}:0", "--procs", "2",
         "--header-timeout", str(header_timeout),
         "--body-timeout", str(body_timeout),
         "--write-timeout", str(write_timeout)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=limit, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        sys.exit(f"http_attack: the server printed {line!r}")
    port = int(line.rsplit(":", 1)[1])
    return proc, port


def connect(port, timeout=30):
    s = socket.create_connection((HOST, port), timeout=timeout)
    return s


def read_until_closed(s, trickle=None, every=0.5, limit=120):
    """Reads until the server closes `s`, sending `trickle` every `every` s
    while nothing arrives; returns (answer bytes, seconds taken)."""
    started = time.monotonic()
    s.settimeout(every)
    answer = b""
    while time.monotonic() - started < limit:
        try:
            data = s.recv(65536)
        except socket.timeout:
            if trickle is not None:
                try:
                    s.sendall(trickle)
                except OSError:
                    break
            continue
        except OSError:
            break
        if not data:
            break
        answer += data
    return answer, time.monotonic() - started


def status(answer):
    parts = answer.split(b" ", 2)
    return parts[1].decode(errors="replace") if len(parts) > 1 else "(none)"


def get_served(port):
    """One GET / on a new connection: the status line's code, or None."""
    try:
        s = connect(port, timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        line = s.makefile("rb").readline()
        s.close()
        return status(line)
    except OSError:
        return None


def slow_head(port, timeouts):
    s = connect(port)
    s.sendall(b"GET / HTTP/1.1\r\n")
    answer, took = read_until_closed(s, trickle=b"X-Pad: 1\r\n")
    ok = status(answer) == "408" and took < timeouts["header"] + 1
    return ok, f"{status(answer)} after {took:.1f} s"


def slow_body(port, timeouts):
    s = connect(port)
    s.sendall(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n")
    answer, took = read_until_closed(s, trickle=b"x")
    ok = status(answer) == "408" and took < timeouts["body"] + 1
    return ok, f"{status(answer)} after {took:.1f} s"


def no_reader(port, timeouts):
    s = connect(port)
    s.settimeout(0.2)
    body = b"x" * (1 << 20)
    req = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    started = time.monotonic()
    while time.monotonic() - started < 120:
        try:
            s.sendall(req)
        except socket.timeout:
            continue
        except OSError:
            break
    took = time.monotonic() - started
    ok = took < timeouts["write"] + 2
    return ok, f"closed after {took:.1f} s"


def flood(port, timeouts, nofile):
    n = nofile - 4
    started = time.monotonic()
    slow = []
    for _ in range(n):
        s = connect(port)
        s.sendall(b"GET / HTTP/1.1\r\nHost: slow\r\n")
        slow.append(s)
    retries_503 = 0
    served_after = None
    while time.monotonic() - started < 120:
        code = get_served(port)
        if code == "200":
            served_after = time.monotonic() - started
            break
        retries_503 += code == "503"
        time.sleep(0.1)
    counts = {}
    for s in slow:
        answer, _ = read_until_closed(s)
        counts[status(answer)] = counts.get(status(answer), 0) + 1
        s.close()
    ok = served_after is not None and served_after < timeouts["header"] + 1
    seen = ", ".join(f"{v}x {k}" for k, v in sorted(counts.items()))
    return ok, (f"{n} slow: {seen}; a new client served after {served_after:.1f} s "
                f"({retries_503} tries got 503)" if served_after else f"never served; {seen}")


FRAMING = [
    ("bare LF after chunk data",
     b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3\r\nabc\n0\r\n\r\nGET /hidden HTTP/1.1\r\nHost: a\r\n\r\n"),
    ("bare LF in chunk-size line",
     b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3;x\nabc\r\n0\r\n\r\nGET /hidden HTTP/1.1\r\nHost: a\r\n\r\n"),
    ("over-long chunk-size line in one read",
     b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3;" + b"x" * 4000 + b"\r\nabc\r\n0\r\n\r\n"),
    ("blank Content-Length beside Transfer-Encoding",
     b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\n"),
    ("blank Transfer-Encoding beside Content-Length",
     b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:  \r\nContent-Length: 3\r\n\r\nabc"),
    ("Content-Length with Transfer-Encoding",
     b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\n"),
    ("two different Content-Lengths",
     b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
]


def framing(port, probe):
    s = connect(port)
    s.sendall(probe)
    answer, _ = read_until_closed(s, limit=10)
    ok = answer.startswith(b"HTTP/1.1 400 ") and b"/hidden" not in answer \
        and answer.count(b"HTTP/1.1 ") == 1
    return ok, f"{status(answer)}, {answer.count(b'HTTP/1.1 ')} answer(s), closed"


def http10_te(port):
    s = connect(port)
    s.sendall(b"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
    answer, _ = read_until_closed(s, limit=10)
    ok = answer.count(b"HTTP/1.") <= 1
    return ok, f"{status(answer)}, {answer.count(b'HTTP/1.')} answer(s), closed"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="target/release/examples/http_echo")
    ap.add_argument("--nofile", type=int, default=256)
    ap.add_argument("--header-timeout", type=float, default=10)
    ap.add_argument("--body-timeout", type=float, default=10)
    ap.add_argument("--write-timeout", type=float, default=10)
    args = ap.parse_args()
    timeouts = {"header": args.header_timeout, "body": args.body_timeout,
                "write": args.write_timeout}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, args.nofile + 64)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    proc, port = start_server(args.bin, args.nofile, args.header_timeout,
                              args.body_timeout, args.write_timeout)
    failed = 0
    try:
        attacks = [
            ("slow head", lambda: slow_head(port, timeouts)),
            ("slow body", lambda: slow_body(port, timeouts)),
            ("no reader", lambda: no_reader(port, timeouts)),
            ("flood", lambda: flood(port, timeouts, args.nofile)),
        ]
        attacks += [(f"framing: {name}", lambda p=probe: framing(port, p))
                    for name, probe in FRAMING]
        attacks.append(("HTTP/1.0 + Transfer-Encoding", lambda: http10_te(port)))
        for name, attack in attacks:
            ok, what = attack()
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:52} {what}", flush=True)
            if get_served(port) != "200":
                failed += 1
                print(f"FAIL {'still serving after ' + name:52} no 200 for GET /", flush=True)
        if proc.poll() is not None:
            failed += 1
            print(f"FAIL the server exited with {proc.returncode}")
    finally:
        proc.kill()
        proc.wait()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
