#!/usr/bin/env bash
# Runs the loom models of the concurrency core (src/runtime/loom_models.rs):
# the run queue ring and runnext, and the worker parking protocol.
# Usage: scripts/loom.sh [test-name-filter]   (LOOM_MAX_PREEMPTIONS defaults to 3)
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
exec cargo test --lib --release --target-dir target/loom -- --test-threads=1 "${1:-loom_}"
