#!/usr/bin/env bash
# dtune against TVM's MetaSchedule on DietCode's shapes (docs/results/tvm-comparison.md).
#
#   scripts/bench_vs_tvm.sh [--budgets "64 512"] [--shapes "5 24 43 62 81 100 119 128"]
#                           [--workloads "dense ffn_up"] [--threads 1] [--seeds "1 2 3"]
#                           [--layout "on off"] [--procs 3] [--repeats 5] [--min-ms 50]
#                           [--untuned-shapes "1 5 24 43 62 81 100 119 128"]
#                           [--per-iter 64] [--tuning-cores N] [--build-timeout 120]
#                           [--mcpu CPU] [--out DIR] [--venv DIR]
#                           [--skip-tvm] [--skip-dtune] [--retime] [--bin build/dtune]
#
# --retime: tune nothing; time every TVM kernel already in OUT again (after a
# change to the timing protocol or the inputs of scripts/tvm_ms.py).
#
# Workloads: dense 768x768 (no bias) and BERT-base ffn_up (N=3072, K=768, bias +
# GELU in its erf form, fused in TVM's te.compute too).  For every workload,
# budget B (trials per shape) and seed:
#   - MetaSchedule (scripts/tvm_ms.py tune): one task per shape, all in one
#     tune_tir (gradient task scheduler, evolutionary search, XGBoost cost
#     model, num_trials_per_iter = min(64, B), B trials per task, candidates
#     built by N processes (default: all cores, as dtune builds; LocalBuilder
#     timeout 120 s instead of 30 s, so that a loaded machine does not fail
#     builds), measured one at a time by its LocalRunner's defaults), once with
#     the layout rewrite of the constant weight (pre-packed outside the timed
#     kernel) and once without; per shape the faster counts.
#   - dtune joint and per-shape: `dtune tune KEY --strategy S --trials 8·B
#     --seed S` (the same total trials as MetaSchedule), then `dtune bench KEY
#     --db --shapes 1..128 --peers onednn --json`: the dispatched kernels over
#     every M and oneDNN (the strongest of its matmul peers) beside them.
# Once per workload: TVM untuned, a PrimFunc with a symbolic M compiled with
# tvm.compile, timed on --untuned-shapes (it is slow: ~1 GFLOP/s).
# TVM bucketing is derived: each M in 1..128 runs the tuned MetaSchedule
# kernel of the next tuned shape up on a zero-padded input (the copy into the
# padded buffer is not counted).
#
# The f32 FMA peak (`dtune info --peaks`) is measured once into OUT/peaks.json
# and the summary gives every GFLOP/s figure as a share of it.
#
# Timing: every TVM kernel is checked against numpy float64 and timed with
# time_evaluator (warm call, REPEATS repeats of >= MIN_MS, minimum counts) in
# PROCS separate processes; the median of the minima is reported.  dtune bench
# (which verifies every kernel and peer) is likewise run PROCS times and the
# per-shape median taken.  Everything runs at THREADS threads (TVM_NUM_THREADS,
# target num-cores, dtune --threads).
#
# The venv (apache-tvm pinned, with what MetaSchedule needs) is created once
# under --venv (default ~/.cache/dtune-tvm-venv) and reused while its pins
# match.  -mcpu is `dtune info --json`'s llvm_cpu, unless given.  Results: OUT
# (default /tmp/dtune-vs-tvm): per run JSON (dtune's tune.json with its
# per-round curve), dtune's tune stderr, MetaSchedule's trials.jsonl, summary.txt and
# summary.json (scripts/tvm_report.py); plots with scripts/plot_vs_tvm.py.
set -euo pipefail
cd "$(dirname "$0")/.."

BUDGETS="64 512"
SHAPES="5 24 43 62 81 100 119 128"
WORKLOADS="dense ffn_up"
THREADS=1
SEEDS="1 2 3"
LAYOUT="on off"
PROCS=3
REPEATS=5
MIN_MS=50
UNTUNED_SHAPES=
PER_ITER=64
TUNING_CORES=
BUILD_TIMEOUT=120
MCPU=
OUT=/tmp/dtune-vs-tvm
VENV=${DTUNE_TVM_VENV:-$HOME/.cache/dtune-tvm-venv}
BIN=${DTUNE_BIN:-build/dtune}
SKIP_TVM=0
SKIP_DTUNE=0
RETIME=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --budgets) BUDGETS=$2; shift 2 ;;
    --trials) BUDGETS=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --layout) LAYOUT=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --min-ms) MIN_MS=$2; shift 2 ;;
    --untuned-shapes) UNTUNED_SHAPES=$2; shift 2 ;;
    --per-iter) PER_ITER=$2; shift 2 ;;
    --tuning-cores) TUNING_CORES=$2; shift 2 ;;
    --build-timeout) BUILD_TIMEOUT=$2; shift 2 ;;
    --mcpu) MCPU=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --venv) VENV=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --skip-tvm) SKIP_TVM=1; shift ;;
    --skip-dtune) SKIP_DTUNE=1; shift ;;
    --retime) RETIME=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_vs_tvm: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[ -n "$UNTUNED_SHAPES" ] || UNTUNED_SHAPES="1 $SHAPES"
[ -x "$BIN" ] || { echo "bench_vs_tvm: $BIN not found; build first (scripts/setup.sh)" >&2; exit 1; }
say() { echo "== $(date +%H:%M:%S) $*" >&2; }

# ---- the venv, pinned (scripts/tvm_venv.sh: PINS, PY, tvm_venv_ensure)
. scripts/tvm_venv.sh
[ "$SKIP_TVM" = 1 ] || tvm_venv_ensure

# ---- target: -mcpu and cores from dtune info
INFO=$("$BIN" info --json)
CORES=$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cores"])')
# dtune names the CPU as LLVM does (common/target.c, dt_target_llvm_cpu: AMD
# by CPUID family and model, Intel by features)
[ -n "$MCPU" ] || MCPU=$(echo "$INFO" | python3 -c 'import json,sys; print(json.load(sys.stdin)["llvm_cpu"])')
# cross-check with LLVM's own host detection: warn, keep dtune's, record both
LLVM_CPU=
if [ "$SKIP_TVM" = 0 ]; then
  LLVM_CPU=$("$PY" -c 'from tvm.target import codegen; print(codegen.llvm_get_system_cpu())' 2>/dev/null || true)
  if [ -n "$LLVM_CPU" ] && [ "$LLVM_CPU" != "$MCPU" ]; then
    echo "bench_vs_tvm: warning: -mcpu=$MCPU from dtune info, but LLVM detects $LLVM_CPU (pass --mcpu to choose)" >&2
  fi
fi
[ -n "$TUNING_CORES" ] || TUNING_CORES=$CORES
[ "$THREADS" -le "$CORES" ] || { echo "bench_vs_tvm: --threads $THREADS > $CORES cores" >&2; exit 1; }
export TVM_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
mkdir -p "$OUT"
NSH=$(echo $SHAPES | wc -w)
SHAPESET=$(echo $SHAPES | tr ' ' ',')
cat > "$OUT/config.json" <<EOF
{"budgets": "$BUDGETS", "shapes": "$SHAPES", "workloads": "$WORKLOADS", "threads": $THREADS,
 "seeds": "$SEEDS", "layout": "$LAYOUT", "procs": $PROCS, "repeats": $REPEATS, "min_ms": $MIN_MS,
 "untuned_shapes": "$UNTUNED_SHAPES", "per_iter": $PER_ITER, "tuning_cores": $TUNING_CORES, "build_timeout": $BUILD_TIMEOUT, "mcpu": "$MCPU", "llvm_host_cpu": "$LLVM_CPU", "cores": $CORES,
 "pins": "$(echo $PINS)", "bin": "$BIN"}
EOF
# the ceiling every system is under, measured on this machine in this run
# (tvm_report.py prints each GFLOP/s as a share of it)
if [ ! -s "$OUT/peaks.json" ]; then
  say "measuring the compute peaks (dtune info --peaks)"
  "$BIN" info --peaks --json > "$OUT/peaks.json.tmp" && mv "$OUT/peaks.json.tmp" "$OUT/peaks.json"
fi
say "target: -mcpu=$MCPU, $CORES cores; $THREADS thread(s); shapes {$SHAPESET}; budgets $BUDGETS per shape; seeds $SEEDS"

key_of() {
  case "$1" in
    dense) echo "dense(M={$SHAPESET},N=768,K=768)" ;;
    ffn_up) echo "dense(M={$SHAPESET},N=3072,K=768,epilogue=bias+gelu)" ;;
  esac
}

# time_tvm WORKLOAD OUTFILE KERNELSPEC...: PROCS processes, one JSON line each
time_tvm() {
  local w=$1 out=$2; shift 2
  local args=() p
  for k in "$@"; do args+=(--kernel "$k"); done
  : > "$out.tmp"
  for p in $(seq "$PROCS"); do
    "$PY" scripts/tvm_ms.py time --workload "$w" "${args[@]}" --repeats "$REPEATS" \
      --min-ms "$MIN_MS" >> "$out.tmp" 2>> "${out%.jsonl}.log"
  done
  mv "$out.tmp" "$out"
}

# time_ms WORKLOAD DIR: time_tvm on every shape's kernel a MetaSchedule run exported
time_ms() {
  local w=$1 d=$2 m specs=()
  for m in $SHAPES; do
    if [ -f "$d/kernels/m$m.so" ]; then specs+=("$d/kernels/m$m.so@$m")
    else echo "   no MetaSchedule kernel for M=$m (every trial failed; see $d/ms/logs)" >&2; fi
  done
  if [ ${#specs[@]} -gt 0 ]; then time_tvm "$w" "$d/time.jsonl" "${specs[@]}"; fi
}

for w in $WORKLOADS; do
  key=$(key_of "$w")
  if [ "$SKIP_TVM" = 0 ]; then
    d="$OUT/$w/untuned" time=1
    if [ "$RETIME" = 1 ]; then
      if [ -f "$d/untuned.so" ]; then say "$w: TVM untuned, timed again"; else time=0; fi
    elif [ ! -f "$d/time.jsonl" ]; then
      say "$w: TVM untuned (symbolic M)"
      mkdir -p "$d"
      "$PY" scripts/tvm_ms.py untuned --workload "$w" --threads "$THREADS" --mcpu "$MCPU" \
        --work "$d" > "$d/compile.json"
    else
      time=0
    fi
    if [ "$time" = 1 ]; then
      time_tvm "$w" "$d/time.jsonl" "$d/untuned.so@$(echo $UNTUNED_SHAPES | tr ' ' ',')"
    fi
  fi
  for B in $BUDGETS; do
    for s in $SEEDS; do
      if [ "$SKIP_TVM" = 0 ]; then
        for l in $LAYOUT; do
          d="$OUT/$w/ms-b$B-s$s-layout-$l"
          if [ "$RETIME" = 1 ]; then
            [ -d "$d/kernels" ] || continue
            say "$w: MetaSchedule B=$B/shape seed $s layout rewrite $l, timed again"
          elif [ ! -f "$d/time.jsonl" ]; then
            say "$w: MetaSchedule B=$B/shape seed $s layout rewrite $l"
            rm -rf "$d"; mkdir -p "$d"
            "$PY" scripts/tvm_ms.py tune --workload "$w" --shapes "$SHAPES" --trials "$B" \
              --per-iter "$PER_ITER" --tuning-cores "$TUNING_CORES" --threads "$THREADS" --mcpu "$MCPU" --seed "$s" \
              --layout "$l" --build-timeout "$BUILD_TIMEOUT" --work "$d" > "$d/tune.out" 2> "$d/tune.log"
          else
            continue
          fi
          time_ms "$w" "$d"
        done
      fi
      if [ "$SKIP_DTUNE" = 0 ] && [ "$RETIME" = 0 ]; then
        for st in joint per-shape; do
          d="$OUT/$w/dtune-$st-b$B-s$s"
          if [ ! -f "$d/bench.jsonl" ]; then
            n=$((NSH * B))
            say "$w: dtune $st, $n trials, seed $s"
            rm -rf "$d"; mkdir -p "$d"
            # unrestricted selection (--max-kernels all): the searches are
            # compared, not the kernel budget (auto may cost joint up to 1 %)
            DTUNE_CACHE_DIR="$d/cache" "$BIN" tune "$key" --strategy "$st" --trials "$n" \
              --max-kernels all --seed "$s" --threads "$THREADS" --db "$d/dtune.db" --json \
              > "$d/tune.json" 2> "$d/tune.err"
            : > "$d/bench.jsonl.tmp"
            for p in $(seq "$PROCS"); do
              DTUNE_CACHE_DIR="$d/cache" "$BIN" bench "$key" --db "$d/dtune.db" --shapes 1..128 \
                --threads "$THREADS" --peers onednn --repeats "$REPEATS" --json \
                | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' \
                >> "$d/bench.jsonl.tmp"
            done
            mv "$d/bench.jsonl.tmp" "$d/bench.jsonl"
          fi
        done
      fi
    done
  done
done

say "summary"
PYR=$PY; [ -x "$PYR" ] || PYR=python3
"$PYR" scripts/tvm_report.py "$OUT" | tee "$OUT/summary.txt"
echo "results: $OUT (plots: /usr/bin/python3 scripts/plot_vs_tvm.py $OUT docs/results)" >&2
