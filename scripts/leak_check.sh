#!/usr/bin/env bash
# Leak checks: the test suite's binaries under LeakSanitizer, and a smaller set
# under valgrind memcheck. Fails if memory is definitely or indirectly lost, or
# if a test binary fails under the tool. (Stacks and file descriptors are not
# malloc'd: tests/leaks.rs checks those, and runs here like any other test.)
#   scripts/leak_check.sh              # both: about 2.5 minutes on 2 cores, plus the build
#   scripts/leak_check.sh lsan         # LeakSanitizer only
#   scripts/leak_check.sh valgrind     # valgrind only
# Needs gcc's LeakSanitizer runtime (liblsan.so.0, preloaded: no rebuild with a
# sanitizer, so stable Rust), gcc, jq and valgrind. Builds the debug test
# binaries in target/leak; logs go to target/leak/leak-check/.
#
# LeakSanitizer: every test binary (doc-tests excepted), child processes and
# examples included (the preload is inherited, and their reports are counted
# with the binary that started them). scripts/lsan_roots.c starts LeakSanitizer
# early and makes goroutine stacks roots of its scan, so what a goroutine still
# parked at exit holds is not reported; scripts/lsan.supp says why each
# suppression is not goro's leak. Allocation stacks are unwound from debug info
# (fast_unwind_on_malloc=0): the frame-pointer unwinder stops at a coroutine
# stack, and LeakSanitizer treats a block with no known caller as reachable.
#
# valgrind: binaries that exercise spawn/join, channels and select, timers,
# goro's sync, blocking calls, panics and the network, one test thread each.
# --max-stackframe is below the distance between two goroutine stacks, so a
# switch between stacks is taken as one and not as a huge frame (which would
# make memcheck mark the M's thread-locals unaddressable and then report the
# blocks they point to as lost). Memcheck's other errors are counted in the
# summary, not failed on.
#
# Example-based tests (cluster_node, http_echo, examples_small) refuse example
# binaries older than src/: if src/ changes while this runs, run it again.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-all}"
case "$mode" in
  all | lsan | valgrind) ;;
  *)
    echo "usage: $0 [all|lsan|valgrind]" >&2
    exit 2
    ;;
esac

target=target/leak
logs="$target/leak-check"
liblsan="${LIBLSAN:-/usr/lib/x86_64-linux-gnu/liblsan.so.0}"
per_binary_timeout=1200

# Valgrind's runs: a test binary, then the filters that pick its tests (none:
# all of them); and tests skipped there by name.
valgrind_runs=(
  "leaks"
  "blocking"
  "behaviour chan_semantics:: select:: spawn_join:: timers:: sync::"
  "network net:: fault_injection::"
)
valgrind_skips=(
  # A million goroutines, or a hundred thousand sleepers, take minutes under
  # valgrind; spawn/join and sleep are covered by the rest of spawn_join and
  # timers, and by leaks.
  a_million_goroutines_spawned_and_joined
  a_hundred_thousand_gs_sleep_at_once
)

need() {
  command -v "$1" >/dev/null || {
    echo "leak_check: $1 not found" >&2
    exit 2
  }
}
need cargo
need jq
if [[ $mode != valgrind ]]; then
  need gcc
  [[ -e $liblsan ]] || {
    echo "leak_check: $liblsan not found (gcc's LeakSanitizer runtime, e.g. liblsan0)" >&2
    exit 2
  }
fi
if [[ $mode != lsan ]]; then
  need valgrind
fi

rm -rf "$logs"
mkdir -p "$logs"
start=$SECONDS

echo "leak_check: building the test binaries in $target"
cargo test --no-run --target-dir "$target" --message-format=json >"$logs/build.json"
declare -A binary
while read -r name exe; do
  binary[$name]=$exe
done < <(jq -r 'select(.reason == "compiler-artifact" and .profile.test and .executable != null)
                | .target.name + " " + .executable' "$logs/build.json")
mapfile -t names < <(printf '%s\n' "${!binary[@]}" | sort)

failed=0
summary=()

# "ok" or "FAILED (exit N)" for a test binary's exit status.
tests_verdict() {
  if [[ $1 == 0 ]]; then echo "tests ok"; else echo "tests FAILED (exit $1)"; fi
}

run_lsan() {
  gcc -O2 -Wall -Wextra -shared -fPIC -o "$target/lsan_roots.so" scripts/lsan_roots.c -ldl
  local preload options name rc reports suppressed verdict
  preload="$liblsan $PWD/$target/lsan_roots.so"
  for name in "${names[@]}"; do
    options="suppressions=$PWD/scripts/lsan.supp:fast_unwind_on_malloc=0:malloc_context_size=16"
    options+=":exitcode=0:log_path=$PWD/$logs/lsan.$name"
    rc=0
    LD_PRELOAD="$preload" LSAN_OPTIONS="$options" \
      timeout "$per_binary_timeout" "${binary[$name]}" -q >"$logs/lsan.$name.out" 2>&1 || rc=$?
    # One log per process that had something to say (leaks, or suppressions used).
    reports=$(cat "$logs/lsan.$name".[0-9]* 2>/dev/null | grep -c "ERROR: LeakSanitizer" || true)
    suppressed=$(cat "$logs/lsan.$name".[0-9]* 2>/dev/null |
      awk '/Suppressions used/ {on = 1; next} on && /^ +[0-9]+ +[0-9]+ / {print $3} /^---/ {on = 0}' |
      sort -u | paste -sd, - || true)
    if ((reports > 0)); then
      verdict="LEAK (see $logs/lsan.$name.<pid>)"
      failed=1
    elif [[ -n $suppressed ]]; then
      verdict="clean, suppressed: $suppressed"
    else
      verdict="clean"
    fi
    [[ $rc == 0 ]] || failed=1
    summary+=("$(printf 'lsan      %-22s %-16s %s' "$name" "$(tests_verdict "$rc")" "$verdict")")
    echo "${summary[-1]}"
  done
}

run_valgrind() {
  local run name rc skip lost errors records verdict
  local words filters
  local skips=()
  for skip in "${valgrind_skips[@]}"; do
    skips+=(--skip "$skip")
  done
  for run in "${valgrind_runs[@]}"; do
    read -r -a words <<<"$run"
    name=${words[0]}
    filters=("${words[@]:1}")
    [[ -n ${binary[$name]:-} ]] || {
      echo "leak_check: no test binary $name" >&2
      exit 2
    }
    rc=0
    timeout "$per_binary_timeout" valgrind --max-stackframe=131072 --leak-check=full \
      --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
      --log-file="$logs/valgrind.$name.%p.log" \
      "${binary[$name]}" -q --test-threads=1 "${skips[@]}" "${filters[@]}" >"$logs/valgrind.$name.out" 2>&1 || rc=$?
    # Bytes definitely plus indirectly lost, and memcheck errors other than leak
    # records, over every process of the run.
    lost=$(cat "$logs/valgrind.$name".*.log |
      awk '/(definitely|indirectly) lost:/ {gsub(",", "", $4); n += $4} END {print n + 0}')
    errors=$(cat "$logs/valgrind.$name".*.log |
      awk '/ERROR SUMMARY:/ {n += $4} END {print n + 0}')
    records=$(cat "$logs/valgrind.$name".*.log | grep -c "lost in loss record" || true)
    if ((lost > 0)); then
      verdict="LEAK: $lost bytes (see $logs/valgrind.$name.<pid>.log)"
      failed=1
    else
      verdict="clean"
    fi
    if ((errors > records)); then
      verdict+=", $((errors - records)) memcheck errors (not leaks; see the log)"
    fi
    [[ $rc == 0 ]] || failed=1
    summary+=("$(printf 'valgrind  %-22s %-16s %s' "$name" "$(tests_verdict "$rc")" "$verdict")")
    echo "${summary[-1]}"
  done
}

[[ $mode == valgrind ]] || run_lsan
[[ $mode == lsan ]] || run_valgrind

echo
echo "leak_check summary ($((SECONDS - start)) s):"
printf '  %s\n' "${summary[@]}"
if ((failed)); then
  echo "leak_check: FAILED (a leak, or a test binary that failed under the tool)"
  exit 1
fi
echo "leak_check: no leaks"
