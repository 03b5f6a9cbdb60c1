#!/usr/bin/env python3
"""Two or more builds of examples/http_echo under the HTTP echo benchmark's load
(scripts/compare_http.sh's wrk runs), interleaved, with medians:

    scripts/http_ab.py --server before=/tmp/base/http_echo --server after=target/release/examples/http_echo
                       [--env after=GODEBUG=heaptrim=0] [--rounds 5] [--secs 10]
                       [--conns 64,512] [--methods get,post] [--procs 2] [--warmup 1]

For each (method, connections), `rounds` rounds; in each round every server
runs once, the order rotating from round to round. One run: a fresh server
(`--addr 127.0.0.1:0 --procs P`, GOMAXPROCS=P), `warmup` seconds of unmeasured
wrk load, then `wrk -t2 -c<conns> -d<secs> --latency` (POST: 64-byte bodies,
benches/compare/wrk/post.lua), parsed by scripts/wrk_parse.py, and the
server's CPU time (utime + stime of /proc/PID/stat) over the measured run
divided by wrk's request count. Prints each run, then per server the medians
of req/s, p99 and server CPU per request with their ranges, and the change of
the medians against the first server. Needs wrk (`apt-get install -y wrk`).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True  # no scripts/__pycache__ from the import below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wrk_parse import parse  # noqa: E402 (after the lines above)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POST_LUA = os.path.join(ROOT, "benches/compare/wrk/post.lua")
POST_SIZE = "64"


def start(path, env, procs):
    e = dict(os.environ)
    e.update(env)
    e["GOMAXPROCS"] = str(procs)
    p = subprocess.Popen(
        [path, "--addr", "127.0.0.1:0", "--procs", str(procs)], stdout=subprocess.PIPE, env=e, text=True
    )
    m = re.match(r"listening on (\S+)", p.stdout.readline())
    if not m:
        p.kill()
        sys.exit(f"{path} did not say where it listens")
    return p, m.group(1)


def wrk(url, method, conns, secs, latency):
    cmd = ["wrk", "-t2", f"-c{conns}", f"-d{secs}s"]
    if latency:
        cmd.append("--latency")
    if method == "post":
        cmd += ["-s", POST_LUA]
    env = dict(os.environ, HTTP_POST_SIZE=POST_SIZE)
    return subprocess.run(cmd + [url], capture_output=True, text=True, env=env, timeout=secs + 60).stdout


def cpu_s(pid):
    """utime + stime of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(path, env, procs, method, conns, secs, warmup):
    server, addr = start(path, env, procs)
    try:
        url = f"http://{addr}/"
        if warmup > 0:
            wrk(url, method, conns, warmup, False)
        cpu0 = cpu_s(server.pid)
        out = wrk(url, method, conns, secs, True)
        cpu = cpu_s(server.pid) - cpu0
        rps, _p50, p99, warn = parse(out)
        requests = int(re.search(r"^\s*(\d+) requests in ", out, re.M).group(1))
        return rps, p99, cpu / requests * 1e6, warn
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", action="append", required=True, help="LABEL=PATH (first: the reference)")
    ap.add_argument("--env", action="append", default=[], help="LABEL=K=V for that server's environment")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--conns", default="64,512")
    ap.add_argument("--methods", default="get,post")
    ap.add_argument("--procs", type=int, default=2)
    a = ap.parse_args()

    servers = [tuple(s.split("=", 1)) for s in a.server]
    envs = {label: {} for label, _ in servers}
    for kv in a.env:
        label, _, rest = kv.partition("=")
        k, _, v = rest.partition("=")
        envs[label][k] = v
    results = {}
    for conns in a.conns.split(","):
        for method in a.methods.split(","):
            for r in range(a.rounds):
                for i in range(len(servers)):
                    label, path = servers[(i + r) % len(servers)]
                    rps, p99, cpu, warn = one_run(path, envs[label], a.procs, method, conns, a.secs, a.warmup)
                    results.setdefault((method, conns), {}).setdefault(label, []).append((rps, p99, cpu))
                    print(
                        f"{method} c={conns} round {r + 1}/{a.rounds} {label}: {rps:.0f} req/s, p99 {p99:.2f} ms, "
                        f"server CPU {cpu:.2f} µs/req" + (f" ({warn})" if warn else ""),
                        flush=True,
                    )
    print(f"\nmedians of {a.rounds} interleaved runs ({a.secs} s each, GOMAXPROCS={a.procs}):")
    print("| load | server | req/s (min–max) | p99 ms (min–max) | CPU µs/req (min–max) | Δ req/s | Δ p99 | Δ CPU |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (method, conns), by in results.items():
        ref = None
        for label, _ in servers:
            cols = list(zip(*by[label]))
            med = [statistics.median(c) for c in cols]
            ref = ref or med
            rng = [f"{statistics.median(c):.{d}f} ({min(c):.{d}f}–{max(c):.{d}f})" for c, d in zip(cols, (0, 2, 2))]
            delta = [f"{100 * (m / r - 1):+.1f}%" for m, r in zip(med, ref)]
            print(f"| {method.upper()} c={conns} | {label} | " + " | ".join(rng + delta) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
