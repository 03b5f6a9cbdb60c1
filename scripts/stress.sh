#!/usr/bin/env bash
# Long stress runs of the scheduler, beyond what `cargo test` does in seconds:
# the stress tests (wake-ups, stolen timers, lock_os_thread), the stealing,
# resize, spawn/join and sysmon tests repeated, most with more Ps than cores, in
# release mode (tighter races) and debug mode.
#   scripts/stress.sh            # 20 rounds
#   ROUNDS=200 scripts/stress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-20}"
for profile in --release ""; do
  cargo test $profile --no-run -q --test stress --test steal_two_ps --test behaviour \
    --test set_gomaxprocs --test sysmon_one_p --test blocking
  for i in $(seq "$rounds"); do
    cargo test $profile -q --test stress --test steal_two_ps >/dev/null
    GOMAXPROCS=8 cargo test $profile -q --test behaviour -- spawn_join:: >/dev/null
    cargo test $profile -q --test set_gomaxprocs --test sysmon_one_p --test blocking >/dev/null
  done
  echo "stress ${profile:-debug}: $rounds rounds ok"
done
