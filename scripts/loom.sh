#!/usr/bin/env bash
# Runs the loom models (every `loom_*` test; see docs/GUARANTEES.md for the list):
# the run queue ring and runnext, the worker parking protocol and retake handshake
# (src/runtime/loom_models.rs), channels and select! (src/chan/loom_models.rs),
# a swap-out racing a wake-up (src/runtime/wait/waitq.rs, src/chan/select.rs),
# WaitGroup, Mutex, Once (src/sync/loom_models.rs), poll descriptors
# (src/runtime/netpoll/loom_models.rs), and the execution trace's chunks
# (src/runtime/loom_models.rs). scripts/loom_mutants.py checks they catch bugs.
# Usage: scripts/loom.sh [test-name-filter]   (LOOM_MAX_PREEMPTIONS defaults to 3)
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
exec cargo test --lib --release --target-dir target/loom -- --test-threads=1 "${1:-loom_}"
