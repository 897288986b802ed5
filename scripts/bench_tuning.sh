#!/usr/bin/env bash
# The tuner issue's search benchmark (DietCode's protocol): joint vs
# per-shape on dense 768x768 with M in {5,24,43,62,81,100,119,128}.
#
#   scripts/bench_tuning.sh [B]        (default B = 64)
#
# per-shape gets B trials per shape (8·B in total), joint gets B in total.
# Each tunes into its own fresh database with its own cold kernel cache.  Then
# `dtune bench --db` runs each database's dispatched kernels over every M in
# 1..128 (the eight tuned shapes, and the others through nearest-tuned-shape
# dispatch), 3 interleaved repeats, min counts.  Printed: trials, wall time,
# geometric-mean GFLOP/s of each on the eight shapes and on 1..128, and the
# ratios joint / per-shape.  Environment: DTUNE_BIN (default build/dtune),
# THREADS (default 1), OUT (results directory, default /tmp/dtune-bench-tuning).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${DTUNE_BIN:-build/dtune}
B=${1:-64}
THREADS=${THREADS:-1}
OUT=${OUT:-/tmp/dtune-bench-tuning}
KEY='dense(M={5,24,43,62,81,100,119,128},N=768,K=768)'
[ -x "$BIN" ] || { echo "bench_tuning: $BIN not found; build first (scripts/setup.sh)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"

for s in per-shape joint; do
  n=$B
  [ "$s" = per-shape ] && n=$((8 * B))
  echo "== tune $s: $n trials, $THREADS thread(s)" >&2
  DTUNE_CACHE_DIR="$OUT/cache-$s" "$BIN" --quiet tune "$KEY" --strategy "$s" --trials "$n" \
    --threads "$THREADS" --db "$OUT/$s.db" --json > "$OUT/$s-tune.json"
done
for s in per-shape joint; do
  echo "== bench $s dispatch over M=1..128" >&2
  DTUNE_CACHE_DIR="$OUT/cache-$s" "$BIN" bench "$KEY" --db "$OUT/$s.db" --shapes 1..128 \
    --threads "$THREADS" --peers none --repeats 3 --json > "$OUT/$s-bench.json"
done

python3 - "$OUT" "$B" <<'PY'
import json, math, sys
out, B = sys.argv[1], int(sys.argv[2])
tuned = {5, 24, 43, 62, 81, 100, 119, 128}
def load(s):
    t = json.load(open(f"{out}/{s}-tune.json"))
    b = json.load(open(f"{out}/{s}-bench.json"))
    g = {}
    for sh in b["shapes"]:
        m = int(sh["shape"].split("=")[1])
        g[m] = sh["gflops"]
    return t, g
def geo(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
tp, gp = load("per-shape")
tj, gj = load("joint")
print(f"dense 768x768, M in {sorted(tuned)}, B = {B}")
print(f"{'strategy':10} {'trials':>7} {'wall s':>7} {'GFLOP/s 8 shapes':>17} {'GFLOP/s M=1..128':>17}")
for name, t, g in (("per-shape", tp, gp), ("joint", tj, gj)):
    print(f"{name:10} {t['trials_total']:7d} {t['seconds']:7.1f} "
          f"{geo([g[m] for m in tuned]):17.1f} {geo(list(g.values())):17.1f}")
r8 = geo([gj[m] / gp[m] for m in tuned])
rall = geo([gj[m] / gp[m] for m in gp])
print(f"joint / per-shape: {r8:.3f} on the 8 tuned shapes (with {tj['trials_total']} vs "
      f"{tp['trials_total']} trials), {rall:.3f} over M=1..128")
PY
