#!/usr/bin/env bash
# The soak test (tests/soak.rs): a mixed workload in rounds, with GOMAXPROCS 1, 2
# and 8 in turn, in release mode. Each setting runs for SOAK_SECS / 3.
#   scripts/soak.sh                 # 10 minutes in all
#   SOAK_SECS=60 scripts/soak.sh    # one minute in all
set -euo pipefail
cd "$(dirname "$0")/.."
total="${SOAK_SECS:-600}"
each=$(( total / 3 > 1 ? total / 3 : 1 ))
cargo test --release --test soak --no-run -q
for procs in 1 2 8; do
  echo "soak: GOMAXPROCS=$procs for ${each} s"
  GOMAXPROCS=$procs SOAK_SECS=$each cargo test --release -q --test soak -- --ignored --nocapture 2>&1 \
    | grep -E "^(round|soak:)|panicked|FAILED|error" | tail -n 4
  test "${PIPESTATUS[0]}" -eq 0
done
echo "soak: ok (${total} s)"
