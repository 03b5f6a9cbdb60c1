#!/usr/bin/env python3
"""Keeps the medians file the charts are drawn from (docs/charts/medians.tsv).

    compare_medians.py --results RESULTS.tsv --medians MEDIANS.tsv

The medians of this run (one row per workload, GOMAXPROCS and implementation
with at least one ok run; the same medians as the report's tables) replace every
row of the same workloads in MEDIANS.tsv; rows of other workloads are kept, so
that `ONLY=...` runs refresh their own bars and leave the rest of the charts as
they were, like the sections of docs/BENCHMARKS.md. Columns:

    workload procs impl median unit runs date
"""

import argparse
import csv
import os
import sys

sys.dont_write_bytecode = True  # no scripts/__pycache__ from the import below
from compare_report import Cell, read_results  # noqa: E402 (after the line above)

FIELDS = ["workload", "procs", "impl", "median", "unit", "runs", "date"]


def run_medians(rows, date):
    keys = []
    for r in rows:
        k = (r["workload"], r["procs"], r["impl"])
        if k not in keys:
            keys.append(k)
    out = []
    for w, p, i in keys:
        c = Cell([r for r in rows if (r["workload"], r["procs"], r["impl"]) == (w, p, i)])
        if c.median is not None:
            out.append(
                {"workload": w, "procs": p, "impl": i, "median": f"{c.median:.6g}", "unit": c.unit,
                 "runs": str(len(c.values)), "date": date}
            )
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--medians", required=True)
    ap.add_argument("--date", default="", help="label of this run (default: the results' directory name)")
    a = ap.parse_args()

    rows = read_results(a.results)
    date = a.date or os.path.basename(os.path.dirname(os.path.abspath(a.results)))
    measured = {r["workload"] for r in rows}
    old = []
    if os.path.exists(a.medians):
        with open(a.medians, newline="") as f:
            old = [r for r in csv.DictReader(f, delimiter="\t") if r["workload"] not in measured]
    with open(a.medians, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(old + run_medians(rows, date))


if __name__ == "__main__":
    main()
