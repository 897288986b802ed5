#!/usr/bin/env bash
# A BERT-base encoder layer in TVM Relax (symbolic seq), three ways, timed
# over seq at 1 and 2 threads (issue 32; docs/results/tvm-bert-layer.md).
#
#   scripts/bench_bert_tvm.sh [--threads "1 2"] [--seqs "1..16 20..128/4"]
#                             [--buckets "16 32 64 128"] [--trials 64] [--seeds 1]
#                             [--layout on] [--dtune-time 3m] [--dtune-db PATH]
#                             [--systems "a b c"] [--repeats 5] [--repeats-a 3]
#                             [--min-ms 50] [--procs 1] [--default-pipeline cpu+dlight]
#                             [--c-spin-count 0]
#                             [--per-iter 64] [--tuning-cores N] [--build-timeout 120]
#                             [--mcpu CPU] [--client build/libdtune_tvm.so] [--standin]
#                             [--out DIR] [--venv DIR] [--bin build/dtune]
#
# Systems (scripts/tvm_bert.py has the details):
#   a  TVM's default for a dynamic seq: the symbolic module through
#      relax.get_default_pipeline(llvm)'s passes with dlight's CPU rules
#      (GEMV, Reduction) after FuseTIR (--default-pipeline: "cpu" without
#      dlight, "build" tvm.compile's own default); no tuning.
#   b  MetaSchedule with bucketing: per thread count, seed and bucket, the
#      layer with seq = bucket tuned as relax's static_shape_tuning_pipeline
#      does (every fused task, TRIALS trials each, gradient task scheduler,
#      layout rewrite of the constant weights with --layout on); a seq runs
#      on the next bucket up, zero-padded with mask -10000 (the padding
#      copy is not timed).
#   c  dtune: module (a) with its 4 denses (+ bias, + GELU) and 2 attention
#      batch matmuls rewritten to R.call_dps_packed into libdtune_tvm's
#      dtune.dense / dtune.batch_matmul; the database from `dtune tune
#      models/bert-base.json --threads T --time DTUNE_TIME --seed S` per
#      thread count and seed (fresh kernel cache), or --dtune-db for all.
#      --standin: numpy stand-ins for the dtune.* functions (the Relax side
#      alone; its times mean nothing).  (c) runs with
#      TVM_THREAD_POOL_SPIN_COUNT=C_SPIN_COUNT (default 0; "tvm" keeps TVM's
#      300000): TVM's idle pool worker otherwise spins on a core dtune's
#      next kernel needs (2 threads on 2 cores: 11.2 ms instead of 2.6 ms at
#      seq 33).  (a) and (b) keep TVM's default.
#
# Protocol: one reference (a's outputs at every seq, checked against numpy
# float64) in OUT/ref.npz; every system's output at every timed seq must be
# within max |y - ref| / (1 + |ref|) < 1e-3 of it, else that seq is not
# timed and the run fails at the end.  Timing: the VM's time_evaluator
# (warm call, REPEATS repeats of >= MIN_MS, the minimum; (a) takes 0.04 to
# 5 s a call, so REPEATS_A), in PROCS processes per (system, threads, seed),
# the median of their minima.  TVM_NUM_THREADS, OMP_NUM_THREADS, the target's
# num-cores and dtune.open's thread count are T.  --seqs "1..128" is the
# full sweep; the default (1..16, then every 4th) costs ~1/3 of it, most of
# it in (a).
#
# Results in OUT (default /tmp/dtune-bert-tvm), resumable (a step whose
# result exists is skipped): config.json, ref.npz + ref.json,
# ms-t<T>-s<S>/b<B>/ (tune.json, tune.log with MetaSchedule's output, ms/ its
# database and logs, the executable), dtune-t<T>-s<S>/
# (dtune.db, tune.json, tune.err, wall.json), time/<sys>-t<T>[-s<S>]-p<P>.json,
# summary.json and summary.txt (geometric means over seq of a/c and b/c
# per thread count, tuning times).  Plot: /usr/bin/python3
# scripts/plot_bert_tvm.py OUT docs/results/tvm-bert-layer.png.
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS="1 2"
SEQS="1..16 20..128/4"
BUCKETS="16 32 64 128"
TRIALS=64
SEEDS=1
LAYOUT=on
DTUNE_TIME=3m
DTUNE_DB=
SYSTEMS="a b c"
REPEATS=5
REPEATS_A=3
MIN_MS=50
PROCS=1
DEFAULT_PIPELINE=cpu+dlight
C_SPIN_COUNT=0
PER_ITER=64
TUNING_CORES=
BUILD_TIMEOUT=120
MCPU=
CLIENT=build/libdtune_tvm.so
STANDIN=0
OUT=/tmp/dtune-bert-tvm
VENV=${DTUNE_TVM_VENV:-$HOME/.cache/dtune-tvm-venv}
BIN=${DTUNE_BIN:-build/dtune}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --seqs) SEQS=$2; shift 2 ;;
    --buckets) BUCKETS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --layout) LAYOUT=$2; shift 2 ;;
    --dtune-time) DTUNE_TIME=$2; shift 2 ;;
    --dtune-db) DTUNE_DB=$2; shift 2 ;;
    --systems) SYSTEMS=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --repeats-a) REPEATS_A=$2; shift 2 ;;
    --min-ms) MIN_MS=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --default-pipeline) DEFAULT_PIPELINE=$2; shift 2 ;;
    --c-spin-count) C_SPIN_COUNT=$2; shift 2 ;;
    --per-iter) PER_ITER=$2; shift 2 ;;
    --tuning-cores) TUNING_CORES=$2; shift 2 ;;
    --build-timeout) BUILD_TIMEOUT=$2; shift 2 ;;
    --mcpu) MCPU=$2; shift 2 ;;
    --client) CLIENT=$2; shift 2 ;;
    --standin) STANDIN=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    --venv) VENV=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_bert_tvm: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
say() { echo "== $(date +%H:%M:%S) $*" >&2; }
die() { echo "bench_bert_tvm: $*" >&2; exit 1; }
[ -x "$BIN" ] || die "$BIN not found; build first (scripts/setup.sh)"
case " $SYSTEMS " in *" c "*)
  if [ "$STANDIN" = 0 ]; then [ -f "$CLIENT" ] || die "$CLIENT not found (the TVM client, docs/tvm.md; or --standin)"; fi
  if [ -n "$DTUNE_DB" ]; then [ -f "$DTUNE_DB" ] || die "--dtune-db $DTUNE_DB not found"; fi ;;
esac
case "$LAYOUT" in on|off) ;; *) die "--layout is on or off" ;; esac

# ---- the venv, pinned (scripts/tvm_venv.sh: PINS, PY, tvm_venv_ensure)
. scripts/tvm_venv.sh
tvm_venv_ensure

# ---- target: -mcpu and cores from dtune info, as bench_vs_tvm.sh
INFO=$("$BIN" info --json)
jget() { echo "$INFO" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
CORES=$(jget cores)
[ -n "$MCPU" ] || MCPU=$(jget llvm_cpu)
LLVM_CPU=$("$PY" -c 'from tvm.target import codegen; print(codegen.llvm_get_system_cpu())' 2>/dev/null || true)
if [ -n "$LLVM_CPU" ] && [ "$LLVM_CPU" != "$MCPU" ]; then
  echo "bench_bert_tvm: warning: -mcpu=$MCPU from dtune info, but LLVM detects $LLVM_CPU (pass --mcpu to choose)" >&2
fi
[ -n "$TUNING_CORES" ] || TUNING_CORES=$CORES
MAXT=1
for t in $THREADS; do
  [ "$t" -le "$CORES" ] || die "--threads $t > $CORES cores"
  [ "$t" -le "$MAXT" ] || MAXT=$t
done
# every seq needs a bucket
MAXSEQ=$("$PY" -c "import sys; sys.path.insert(0, 'scripts'); import tvm_bert; print(max(tvm_bert.parse_seqs('$SEQS')))")
MAXB=0; for b in $BUCKETS; do [ "$b" -le "$MAXB" ] || MAXB=$b; done
case " $SYSTEMS " in *" b "*) [ "$MAXB" -ge "$MAXSEQ" ] || die "the largest bucket ($MAXB) is below the largest seq ($MAXSEQ)" ;; esac

mkdir -p "$OUT/time"
cat > "$OUT/config.json" <<EOF
{"threads": "$THREADS", "seqs": "$SEQS", "buckets": "$BUCKETS", "trials": $TRIALS, "seeds": "$SEEDS",
 "layout": "$LAYOUT", "dtune_time": "$DTUNE_TIME", "dtune_db": "$DTUNE_DB", "systems": "$SYSTEMS",
 "repeats": $REPEATS, "repeats_a": $REPEATS_A, "min_ms": $MIN_MS, "procs": $PROCS,
 "default_pipeline": "$DEFAULT_PIPELINE", "c_spin_count": "$C_SPIN_COUNT", "per_iter": $PER_ITER, "tuning_cores": $TUNING_CORES,
 "build_timeout": $BUILD_TIMEOUT, "mcpu": "$MCPU", "llvm_host_cpu": "$LLVM_CPU", "cores": $CORES,
 "client": "$CLIENT", "standin": $STANDIN, "pins": "${PINS//$'\n'/ }", "bin": "$BIN",
 "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"}
EOF
say "target -mcpu=$MCPU, $CORES cores; threads $THREADS; seqs $SEQS; systems $SYSTEMS; out $OUT"

TB=(scripts/tvm_bert.py)
COMMON=(--mcpu "$MCPU" --default-pipeline "$DEFAULT_PIPELINE" --seed-weights 1)

# ---- the reference: (a) at every seq, checked against numpy float64
if [ ! -f "$OUT/ref.json" ]; then
  say "reference: (a) at every seq, against numpy float64"
  "$PY" "${TB[@]}" ref "${COMMON[@]}" --threads "$MAXT" --seqs "$SEQS" --out "$OUT/ref.npz" \
    > "$OUT/ref.json.tmp" 2> "$OUT/ref.log" || { cat "$OUT/ref.json.tmp" >&2; die "reference failed (see $OUT/ref.log)"; }
  mv "$OUT/ref.json.tmp" "$OUT/ref.json"
fi

# ---- (b) MetaSchedule per thread count, seed and bucket
if [[ " $SYSTEMS " == *" b "* ]]; then
  for t in $THREADS; do
    for s in $SEEDS; do
      for b in $BUCKETS; do
        d="$OUT/ms-t$t-s$s/b$b"
        # done when tune.json has the whole record (written last, after the export)
        grep -qs '"so"' "$d/tune.json" && continue
        say "(b) MetaSchedule: threads $t, seed $s, bucket $b, $TRIALS trials per task"
        mkdir -p "$d"
        # an interrupted run's tuning time survives in tune.json: compile again from its database
        exp=(); [ -f "$d/tune.json" ] && [ -d "$d/ms" ] && exp=(--export-only)
        TVM_NUM_THREADS=$t OMP_NUM_THREADS=$t "$PY" "${TB[@]}" tune-ms "${COMMON[@]}" --threads "$t" \
          --bucket "$b" --trials "$TRIALS" --seed "$s" --per-iter "$PER_ITER" \
          --tuning-cores "$TUNING_CORES" --build-timeout "$BUILD_TIMEOUT" --layout "$LAYOUT" \
          --work "$d" "${exp[@]}" >> "$d/tune.log" 2>&1 || die "(b) tuning failed (see $d/tune.log)"
      done
    done
  done
fi

# ---- (c) dtune's tune per thread count and seed (unless --dtune-db)
if [[ " $SYSTEMS " == *" c "* ]] && [ -z "$DTUNE_DB" ] && [ "$STANDIN" = 0 ]; then
  for t in $THREADS; do
    for s in $SEEDS; do
      d="$OUT/dtune-t$t-s$s"
      [ -f "$d/wall.json" ] && continue
      say "(c) dtune tune models/bert-base.json: threads $t, seed $s, --time $DTUNE_TIME"
      rm -rf "$d"; mkdir -p "$d"
      t0=$(date +%s.%N)
      # a fresh kernel cache: the tune compiles every kernel it tries
      DTUNE_CACHE_DIR="$d/cache" "$BIN" tune models/bert-base.json --db "$d/dtune.db" --threads "$t" \
        --seed "$s" --time "$DTUNE_TIME" --json > "$d/tune.json" 2> "$d/tune.err" || die "dtune tune failed (see $d/tune.err)"
      t1=$(date +%s.%N)
      echo "{\"seconds\": $(python3 -c "print(round($t1 - $t0, 3))"), \"time\": \"$DTUNE_TIME\", \"threads\": $t, \"seed\": $s}" > "$d/wall.json"
    done
  done
fi

# ---- timing: every system, thread count (and seed for b, c), PROCS processes
time_one() {  # NAME THREADS ARGS...: one JSON per process
  local name=$1 t=$2 p; shift 2
  for p in $(seq "$PROCS"); do
    local f="$OUT/time/$name-p$p.json"
    [ -f "$f" ] && continue
    say "timing $name, process $p"
    TVM_NUM_THREADS=$t OMP_NUM_THREADS=$t "$PY" "${TB[@]}" time "${COMMON[@]}" --threads "$t" --seqs "$SEQS" \
      --ref "$OUT/ref.npz" --min-ms "$MIN_MS" --out "$f.tmp" "$@" > /dev/null 2>> "$OUT/time/$name.log" ||
      die "$name: a wrong result or a failure (see $OUT/time/$name.log; $f.tmp)"
    mv "$f.tmp" "$f"
  done
}
CSPIN=(); [ "$C_SPIN_COUNT" = tvm ] || CSPIN=(--spin-count "$C_SPIN_COUNT")
for t in $THREADS; do
  [[ " $SYSTEMS " == *" a "* ]] && time_one "a-t$t" "$t" --system a --repeats "$REPEATS_A"
  for s in $SEEDS; do
    [[ " $SYSTEMS " == *" b "* ]] && time_one "b-t$t-s$s" "$t" --system b --repeats "$REPEATS" --ms-dir "$OUT/ms-t$t-s$s"
    if [[ " $SYSTEMS " == *" c "* ]]; then
      if [ "$STANDIN" = 1 ]; then
        time_one "c-t$t-s$s" "$t" --system c --repeats "$REPEATS" "${CSPIN[@]}" --standin
      elif [ -n "$DTUNE_DB" ]; then
        time_one "c-t$t-s$s" "$t" --system c --repeats "$REPEATS" "${CSPIN[@]}" --client "$CLIENT" --db "$DTUNE_DB"
      else
        DTUNE_CACHE_DIR="$OUT/dtune-t$t-s$s/cache" time_one "c-t$t-s$s" "$t" --system c --repeats "$REPEATS" \
          "${CSPIN[@]}" --client "$CLIENT" --db "$OUT/dtune-t$t-s$s/dtune.db"
      fi
    fi
  done
done

say "summary"
"$PY" "${TB[@]}" summary "$OUT" | tee "$OUT/summary.txt"
echo "results: $OUT (plot: /usr/bin/python3 scripts/plot_bert_tvm.py $OUT docs/results/tvm-bert-layer.png)" >&2
