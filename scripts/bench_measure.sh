#!/usr/bin/env bash
# The measurement issue's benchmark: trials per minute with the local runner
# and with two `dtune worker`s on loopback, and the wire's overhead per trial.
#
#   scripts/bench_measure.sh [KERNELS] [SHAPES]      (defaults: 16, {1,8,16,32,64,128})
#
# Environment: DTUNE_BIN (default build/dtune), WORKLOAD (default
# dense(M=1..128,N=768,K=768)), MIN_MS (per-trial minimum time of the
# throughput runs, default 20), REPEAT (runs of each overhead measurement,
# the fastest counts; default 3).
#
# Same kernels (--sample KERNELS --seed 1) and shapes in every run.  A first
# local run warms a private kernel cache that the workers share, so builds do
# not count.  Overhead: the same trials with a tiny --min-time (0.01 ms),
# locally and on one worker (each REPEAT times, the fastest run counts);
# (wall on the worker - wall locally) / trials is what the pool, the wire
# and the worker add per trial.  Takes about a minute on 2 cores.  Only 127.0.0.1 is
# used; the workers are stopped (by their PIDs) on exit; every step has a
# time limit, so the script always ends by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${DTUNE_BIN:-build/dtune}
NK=${1:-16}
SHAPES=${2:-'{1,8,16,32,64,128}'}
WORKLOAD=${WORKLOAD:-'dense(M=1..128,N=768,K=768)'}
MIN_MS=${MIN_MS:-20}
REPEAT=${REPEAT:-3}
STEP_LIMIT=${STEP_LIMIT:-1200} # seconds per dtune run

[ -x "$BIN" ] || { echo "bench_measure: $BIN not found; build first (scripts/setup.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dtune-bench-measure-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export DTUNE_CACHE_DIR="$work/cache" # private: warmed below, shared with the workers
export DTUNE_LOG=warn
mkdir -p "$DTUNE_CACHE_DIR"
head -c 32 /dev/urandom | base64 > "$work/token"
chmod 600 "$work/token"

# start_worker N: a worker on 127.0.0.1, any port; sets port_N
start_worker() {
  local log="$work/worker$1.log"
  "$BIN" worker --listen 127.0.0.1:0 --token-file "$work/token" --name "bench-$1" 2> "$log" &
  pids+=($!)
  for _ in $(seq 1 300); do
    if grep -q "^dtune worker listening on 127.0.0.1:" "$log"; then
      eval "port_$1=$(sed -n 's/^dtune worker listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)"
      return 0
    fi
    sleep 0.1
  done
  echo "bench_measure: worker $1 did not start:" >&2
  cat "$log" >&2
  exit 3
}

# run NAME ARGS...: dtune measure with the common arguments; JSON to $work/NAME.json
rows=()
run() {
  local name=$1; shift
  local cmd=("$BIN" measure "$WORKLOAD" --sample "$NK" --seed 1 --shapes "$SHAPES"
             --db "$work/$name.db" --json "$@")
  echo "== $name: ${cmd[*]}" >&2
  timeout "$STEP_LIMIT" "${cmd[@]}" > "$work/$name.json"
  rows+=("$name|${cmd[*]}")
}

field() { # field NAME KEY
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/$1.json" "$2"
}

run warmup --min-time 1
start_worker a
start_worker b
run local --min-time "$MIN_MS"
run workers2 --min-time "$MIN_MS" --workers "127.0.0.1:$port_a,127.0.0.1:$port_b" --token-file "$work/token"
for i in $(seq 1 "$REPEAT"); do
  run "tiny_local_$i" --min-time 0.01
  run "tiny_worker1_$i" --min-time 0.01 --workers "127.0.0.1:$port_a" --token-file "$work/token"
done

echo
printf '%-15s %7s %9s %11s %6s  %s\n' run trials wall_s trials/min ok command
for row in "${rows[@]}"; do
  name=${row%%|*}; cmd=${row#*|}
  [ "$name" = warmup ] && continue
  printf '%-15s %7s %9.2f %11.1f %6s  %s\n' "$name" "$(field "$name" trials)" \
    "$(field "$name" wall_seconds)" "$(field "$name" trials_per_minute)" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status_counts"]["ok"])' "$work/$name.json")" \
    "$cmd"
done
python3 - "$work" "$NK" "$REPEAT" <<'EOF'
import json, sys
w, nk, rep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
j = lambda n: json.load(open(f"{w}/{n}.json"))
loc, two = j("local"), j("workers2")
tl = min((j(f"tiny_local_{i}") for i in range(1, rep + 1)), key=lambda r: r["wall_seconds"])
tw = min((j(f"tiny_worker1_{i}") for i in range(1, rep + 1)), key=lambda r: r["wall_seconds"])
n = tl["trials"]
d = tw["wall_seconds"] - tl["wall_seconds"]
print()
print(f"two workers vs local runner: {two['trials_per_minute'] / loc['trials_per_minute']:.2f}x trials/min")
print(f"wire overhead (fastest of {rep}: 1 worker {tw['wall_seconds']:.3f} s - local "
      f"{tl['wall_seconds']:.3f} s, --min-time 0.01 ms, {n} trials in {nk} batches): "
      f"{d / n * 1e3:+.2f} ms per trial, {d / nk * 1e3:+.1f} ms per batch")
EOF
