#!/usr/bin/env python3
"""Reads the output of `wrk --latency` and prints one tab-separated line

    <requests/s> <p50 ms> <p99 ms> <warnings>

for scripts/compare_http.sh (warnings: wrk's socket errors and non-2xx/3xx
answers, or empty). Exits 1 with the reason on stderr when the output has no
result, no request completed, or more than 1 % of the answers were not 2xx/3xx
(the run then measured error answers, not the server's normal path).
"""

import re
import sys

# wrk's format_time units, in milliseconds.
UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
MAX_BAD_FRACTION = 0.01


def parse(text):
    """(rps, p50_ms, p99_ms, warnings) from wrk's output; raises ValueError."""
    rps = re.search(r"^Requests/sec:\s+([\d.]+)\s*$", text, re.M)
    total = re.search(r"^\s*(\d+) requests in ", text, re.M)
    pct = {
        m.group(1): float(m.group(2)) * UNITS_MS[m.group(3)]
        for m in re.finditer(r"^\s*(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)\s*$", text, re.M)
    }
    if not rps or not total:
        raise ValueError("wrk printed no Requests/sec line")
    if "50" not in pct or "99" not in pct:
        raise ValueError("wrk printed no latency distribution (was --latency given?)")
    total = int(total.group(1))
    if total == 0:
        raise ValueError("no request completed")
    warnings = []
    sock = re.search(r"^\s*Socket errors: (.*)$", text, re.M)
    if sock:
        nonzero = [f for f in sock.group(1).split(", ") if not f.endswith(" 0")]
        if nonzero:
            warnings.append("wrk socket errors: " + ", ".join(nonzero))
    bad = re.search(r"^\s*Non-2xx or 3xx responses: (\d+)", text, re.M)
    if bad:
        n = int(bad.group(1))
        if n > MAX_BAD_FRACTION * total:
            raise ValueError(f"{n} of {total} answers were not 2xx/3xx")
        warnings.append(f"{n} of {total} answers were not 2xx/3xx")
    return float(rps.group(1)), pct["50"], pct["99"], "; ".join(warnings)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: wrk_parse.py WRK_OUTPUT_FILE")
    with open(sys.argv[1]) as f:
        text = f.read()
    try:
        rps, p50, p99, warnings = parse(text)
    except ValueError as e:
        print(e, file=sys.stderr)
        sys.exit(1)
    print(f"{rps:.2f}\t{p50:.3f}\t{p99:.3f}\t{warnings}")


if __name__ == "__main__":
    main()
