# shellcheck shell=bash
# The http_echo part of scripts/compare.sh (sourced by it; uses its variables
# and helpers: RES, RESULTS, CMP, TGT, RUNS, IMPL_LIST, K, TIMED_OUT, log,
# oneline, mark_unavailable, unavailable_reason, build_reason, run_reason,
# want_impl, selected, start_server, stop_server).
#
# One measurement = a fresh server (GOMAXPROCS=P, `--procs P`) on a free port,
# a probe of its behaviour (scripts/http_probe.py), an unmeasured wrk warm-up, and
# `wrk -t$HTTP_THREADS -c<conns> -d<secs> --latency` (the POST variant with
# benches/compare/wrk/post.lua). Nothing is pinned: wrk and the server share the
# machine's cores. wrk's output becomes three rows (scripts/wrk_parse.py):
# http_<method>_<conns>_rps (req/s), _p50 and _p99 (ms); a fourth, _steal (ms),
# is the CPU time the hypervisor took from this VM during the measured run (the
# steal column of /proc/stat, all CPUs), which the report gives per cell as a
# sign of how hard the host pressed on each implementation's runs.
#
# Servers, all `--addr 127.0.0.1:PORT --procs P`, printing `listening on ADDR`:
#   goro  examples/http_echo of the main crate (built here, see http_setup)
#   go    benches/compare/target/go-bench http_server  (go/http_server.go)
#   tokio benches/compare/target/release/http_tokio     (hyper 1.x)
#   may   benches/compare/target/release/http_may       (may_minihttp)

HTTP_CONNS=${HTTP_CONNS:-64,512}
HTTP_METHODS=${HTTP_METHODS:-get,post}
HTTP_WARMUP=${HTTP_WARMUP:-1}
HTTP_THREADS=${HTTP_THREADS:-2}
HTTP_POST_SIZE=${HTTP_POST_SIZE:-64}
HTTP_LUA=$CMP/wrk/post.lua
# goro's server is built with the peers' optimisation (fat LTO, one codegen
# unit) in a target directory of its own, so that it does not rebuild or wait
# for the root target/ that `cargo test` uses.
HTTP_GORO_TARGET=target/compare-goro-http
HTTP_GORO_BIN=$HTTP_GORO_TARGET/release/examples/http_echo
HTTP_SUFFIXES=(rps p50 p99 steal)
HTTP_CLK_TCK=$(getconf CLK_TCK)

# Installs wrk (Debian's package) and builds goro's example server, once, if
# http_echo is selected. Failures become reasons (wrk: every cell; goro: its cells).
http_setup() {
  selected http_echo || selected http_idle_rss || return 0
  if ! command -v wrk >/dev/null 2>&1; then
    log "== installing wrk (apt-get install -y wrk)"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y wrk ||
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y wrk; }; } >"$RES/apt-wrk.log" 2>&1 || true
  fi
  if ! command -v wrk >/dev/null 2>&1; then
    local why
    why=$(tail -n1 "$RES/apt-wrk.log" 2>/dev/null || true)
    mark_unavailable wrk "wrk (the load generator) is not installed and apt-get install -y wrk failed: $why"
  fi
  want_impl goro || return 0
  if [ ! -e examples/http_echo.rs ] && [ ! -e examples/http_echo/main.rs ]; then
    mark_unavailable http:goro "the goro server examples/http_echo.rs does not exist (yet)"
    return 0
  fi
  log "== cargo build --release --example http_echo (goro's HTTP server, into $HTTP_GORO_TARGET)"
  if CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo build --release --example http_echo --target-dir "$HTTP_GORO_TARGET" >"$RES/build-goro-http.log" 2>&1; then
    :
  else
    rm -f "$HTTP_GORO_BIN"
    mark_unavailable http:goro "examples/http_echo does not build: $(build_reason "$RES/build-goro-http.log")"
  fi
}

# The command of impl's server, in the array HTTP_CMD.
http_server_cmd() { # impl addr procs
  case $1 in
    goro) HTTP_CMD=("$HTTP_GORO_BIN") ;;
    go) HTTP_CMD=("$TGT/go-bench" http_server) ;;
    *) HTTP_CMD=("$TGT/release/http_$1") ;;
  esac
  HTTP_CMD+=(--addr "$2" --procs "$3")
}

# Why impl cannot be measured at all (empty if it can).
http_unavailable() { # impl
  local r
  r=$(unavailable_reason wrk)
  [ -z "$r" ] || { printf '%s' "$r"; return; }
  http_server_unavailable "$1"
}

# Why impl's server cannot run (empty if it can).
http_server_unavailable() { # impl
  local r
  if [ "$1" = goro ]; then r=$(unavailable_reason http:goro); else r=$(unavailable_reason "$1"); fi
  [ -z "$r" ] || { printf '%s' "$r"; return; }
  http_server_cmd "$1" x 1
  [ -x "${HTTP_CMD[0]}" ] || printf 'no server binary %s' "${HTTP_CMD[0]}"
}

# The wrk variants measured: "<method> <conns>" lines.
http_variants() {
  local m c
  local -a ms cs
  IFS=, read -r -a ms <<<"$HTTP_METHODS"
  IFS=, read -r -a cs <<<"$HTTP_CONNS"
  for c in "${cs[@]}"; do for m in "${ms[@]}"; do echo "$m $c"; done; done
}

# One row per metric of a variant, with no value.
http_rows() { # method conns impl procs run secs status reason
  local s
  for s in "${HTTP_SUFFIXES[@]}"; do
    printf 'http_%s_%s_%s\t%s\t%s\t%s\t%s\t%s\t\t\t\t%s\n' "$1" "$2" "$s" "$3" "$4" "$5" "$6" "$7" \
      "$(printf '%s' "$8" | oneline)" >>"$RESULTS"
  done
}

# The machine's steal time so far, in clock ticks (0 where the kernel keeps none).
steal_ticks() {
  awk '$1 == "cpu" { print ($9 == "" ? 0 : $9); exit }' /proc/stat
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_http impl procs run secs method conns -> the variant's three rows.
run_http() {
  local impl=$1 P=$2 r=$3 secs=$4 m=$5 c=$6 base addr url rc line reason errs
  local -a lua=()
  base=$RES/http_echo-$m-$c-p$P-$impl-$r
  [ "$m" = get ] || lua=(-s "$HTTP_LUA")
  http_server_cmd "$impl" "127.0.0.1:$(free_port)" "$P"
  if ! start_server "$base" '^listening on ([^ ]+)' env GOMAXPROCS="$P" "${HTTP_CMD[@]}"; then
    http_rows "$m" "$c" "$impl" "$P" "$r" "$secs" failed "$START_REASON"
    log "http_echo $m c=$c procs=$P run $r/$RUNS $impl: FAILED ($START_REASON)"
    return
  fi
  addr=$SERVER_ADDR
  url=http://$addr/
  if ! python3 scripts/http_probe.py --addr "$addr" --method "$m" --size "$HTTP_POST_SIZE" 2>"$base.probe.err"; then
    stop_server
    reason="$(head -n1 "$base.probe.err")"
    [ "$m" = get ] || reason="$reason (the server does not echo POST bodies as required)"
    http_rows "$m" "$c" "$impl" "$P" "$r" "$secs" failed "$reason"
    log "http_echo $m c=$c procs=$P run $r/$RUNS $impl: FAILED ($reason)"
    return
  fi
  if [ "$HTTP_WARMUP" != 0 ]; then
    HTTP_POST_SIZE=$HTTP_POST_SIZE timeout -k 5 $((HTTP_WARMUP + 30)) \
      wrk -t"$HTTP_THREADS" -c"$c" -d"${HTTP_WARMUP}s" "${lua[@]}" "$url" >"$base.warmup.out" 2>&1 || true
  fi
  local steal0 steal_ms
  steal0=$(steal_ticks)
  if HTTP_POST_SIZE=$HTTP_POST_SIZE timeout -k 5 $((secs + 30)) \
    wrk -t"$HTTP_THREADS" -c"$c" -d"${secs}s" --latency "${lua[@]}" "$url" >"$base.out" 2>"$base.err"; then rc=0; else rc=$?; fi
  steal_ms=$((($(steal_ticks) - steal0) * 1000 / HTTP_CLK_TCK))
  finish_server "$base"
  reason=$SERVER_DIED errs=$SERVER_ERRS
  if [ -z "$reason" ] && [ "$rc" = 0 ] && line=$(python3 scripts/wrk_parse.py "$base.out" 2>"$base.parse.err"); then
    local rps p50 p99 warn s v u
    IFS=$'\t' read -r rps p50 p99 warn <<<"$line"
    warn=$(printf '%s' "${warn}${warn:+${errs:+; }}${errs}" | oneline)
    for s in "${HTTP_SUFFIXES[@]}"; do
      case $s in rps) v=$rps u=req/s ;; p50) v=$p50 u=ms ;; p99) v=$p99 u=ms ;; steal) v=$steal_ms u=ms ;; esac
      printf 'http_%s_%s_%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t%s\n' "$m" "$c" "$s" "$impl" "$P" "$r" "$secs" \
        "$v" "$u" "$P" "$warn" >>"$RESULTS"
    done
    log "http_echo $m c=$c procs=$P run $r/$RUNS $impl: $rps req/s, p50 $p50 ms, p99 $p99 ms, host steal $steal_ms ms${warn:+ (warning: $warn)}"
  else
    if [ -z "$reason" ]; then
      if [ "$rc" != 0 ]; then
        reason="wrk: $(run_reason "$base.err" "$rc")"
        [ "$rc" != 124 ] || TIMED_OUT="$TIMED_OUT $impl"
      else
        reason="wrk: $(head -n1 "$base.parse.err")"
      fi
    fi
    [ -z "$errs" ] || reason="$reason; $errs"
    http_rows "$m" "$c" "$impl" "$P" "$r" "$secs" failed "$reason"
    log "http_echo $m c=$c procs=$P run $r/$RUNS $impl: FAILED ($reason)"
  fi
}

# The whole workload at one GOMAXPROCS: every variant, RUNS rounds, the
# implementations interleaved round-robin (the order rotates every round).
run_http_workload() { # procs secs
  local P=$1 secs=$2 v m c r k impl reason
  local -a variants
  mapfile -t variants < <(http_variants)
  for v in "${variants[@]}"; do
    read -r m c <<<"$v"
    for impl in "${IMPL_LIST[@]}"; do
      reason=$(http_unavailable "$impl")
      [ -z "$reason" ] || http_rows "$m" "$c" "$impl" "$P" 0 "$secs" unavailable "$reason"
    done
    TIMED_OUT=""
    for ((r = 1; r <= RUNS; r++)); do
      for ((k = 0; k < K; k++)); do
        impl=${IMPL_LIST[$(((k + r - 1) % K))]} # rotate the order every round
        [ -z "$(http_unavailable "$impl")" ] || continue
        case " $TIMED_OUT " in *" $impl "*) continue ;; esac
        run_http "$impl" "$P" "$r" "$secs" "$m" "$c"
      done
    done
  done
}

# run_http_idle impl procs run conns -> the http_idle_rss row: the server's RSS
# per idle keep-alive connection, in KiB (scripts/http_idle_rss.py: conns
# connections from 127.0.0.2-5, one GET each, then 5 s idle; each must then
# still answer).
run_http_idle() {
  local impl=$1 P=$2 r=$3 conns=$4 base rc v reason errs
  base=$RES/http_idle_rss-p$P-$impl-$r
  http_server_cmd "$impl" "127.0.0.1:$(free_port)" "$P"
  if ! start_server "$base" '^listening on ([^ ]+)' env GOMAXPROCS="$P" "${HTTP_CMD[@]}"; then
    printf 'http_idle_rss\t%s\t%s\t%s\t%s\tfailed\t\t\t\t%s\n' "$impl" "$P" "$r" "$conns" "$START_REASON" >>"$RESULTS"
    log "http_idle_rss procs=$P run $r/$RUNS $impl: FAILED ($START_REASON)"
    return
  fi
  if timeout -k 5 "$TIMEOUT" python3 scripts/http_idle_rss.py --addr "$SERVER_ADDR" --pid "$SERVER_PID" \
    --conns "$conns" >"$base.out" 2>"$base.err"; then rc=0; else rc=$?; fi
  finish_server "$base"
  reason=$SERVER_DIED errs=$SERVER_ERRS
  v=$(sed -n -E 's/.*value=([0-9.]+).*/\1/p' "$base.out")
  if [ -z "$reason" ] && [ "$rc" = 0 ] && [ -n "$v" ]; then
    printf 'http_idle_rss\t%s\t%s\t%s\t%s\tok\t%s\tKiB\t%s\t%s\n' "$impl" "$P" "$r" "$conns" "$v" "$P" \
      "$(printf '%s' "$errs" | oneline)" >>"$RESULTS"
    log "http_idle_rss procs=$P run $r/$RUNS $impl: $v KiB per idle connection"
  else
    [ -n "$reason" ] || reason="client: $(run_reason "$base.err" "$rc")"
    [ -z "$errs" ] || reason="$reason; $errs"
    printf 'http_idle_rss\t%s\t%s\t%s\t%s\tfailed\t\t\t\t%s\n' "$impl" "$P" "$r" "$conns" \
      "$(printf '%s' "$reason" | oneline)" >>"$RESULTS"
    log "http_idle_rss procs=$P run $r/$RUNS $impl: FAILED ($reason)"
  fi
}

# The http_idle_rss workload at one GOMAXPROCS, interleaved as run_http_workload.
run_http_idle_workload() { # procs conns
  local P=$1 conns=$2 r k impl reason
  for impl in "${IMPL_LIST[@]}"; do
    reason=$(http_server_unavailable "$impl")
    [ -z "$reason" ] || printf 'http_idle_rss\t%s\t%s\t0\t%s\tunavailable\t\t\t\t%s\n' "$impl" "$P" "$conns" \
      "$(printf '%s' "$reason" | oneline)" >>"$RESULTS"
  done
  for ((r = 1; r <= RUNS; r++)); do
    for ((k = 0; k < K; k++)); do
      impl=${IMPL_LIST[$(((k + r - 1) % K))]}
      [ -z "$(http_server_unavailable "$impl")" ] || continue
      run_http_idle "$impl" "$P" "$r" "$conns"
    done
  done
}
