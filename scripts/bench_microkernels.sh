#!/usr/bin/env bash
# The micro-kernel issue's benchmark: for each BERT-base dense workload, at 1
# and 2 threads, the best of a random sample of valid micro-kernels per M
# against the strongest oneDNN peer (and OpenBLAS, LIBXSMM), over M = 1..128,
# all timed side by side in one interleaved loop per shape.
#
#   scripts/bench_microkernels.sh [SAMPLE] [OUTDIR]     (defaults: 200, bench-out/)
#
# Writes OUTDIR/<workload>-t<threads>.json (dtune bench --json) and prints a
# summary table (scripts/bench_summary.py).  Takes about 10-15 minutes per
# workload and thread count on a 2-core machine; run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLE=${1:-200}
OUT=${2:-bench-out}
mkdir -p "$OUT"
scripts/setup.sh > /dev/null   # packages + an up-to-date build/
for nk in "2304 768" "768 768" "3072 768" "768 3072"; do
  set -- $nk
  key="dense(M=1..128,N=$1,K=$2)"
  for t in 1 2; do
    f="$OUT/dense-${1}x${2}-t$t.json"
    echo "== $key, $t thread(s) -> $f" >&2
    build/dtune bench "$key" --sample "$SAMPLE" --threads "$t" --repeats 3 --min-time 1 --json > "$f"
  done
done
python3 scripts/bench_summary.py "$OUT"/dense-*.json
