#!/usr/bin/env bash
# Long stress runs of the scheduler, beyond what `cargo test` does in seconds:
# the wake-up stress, stealing, resize, lock_os_thread and sysmon tests repeated,
# most with more Ps than cores, in release mode (tighter races) and debug mode.
#   scripts/stress.sh            # 20 rounds
#   ROUNDS=200 scripts/stress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-20}"
for profile in --release ""; do
  cargo test $profile --no-run -q --test wakeup_stress --test steal_two_ps --test spawn_join \
    --test set_gomaxprocs --test lock_os_thread --test sysmon_one_p --test blocking
  for i in $(seq "$rounds"); do
    cargo test $profile -q --test wakeup_stress --test steal_two_ps >/dev/null
    GOMAXPROCS=8 cargo test $profile -q --test spawn_join >/dev/null
    cargo test $profile -q --test set_gomaxprocs --test lock_os_thread --test sysmon_one_p --test blocking >/dev/null
  done
  echo "stress ${profile:-debug}: $rounds rounds ok"
done
