#!/usr/bin/env bash
# The tuner issue's search benchmark (DietCode's protocol): joint vs
# per-shape on dense 768x768 with M in {5,24,43,62,81,100,119,128}.
#
#   scripts/bench_tuning.sh [B]        (default B = 64)
#
# per-shape gets B trials per shape (8·B in total), joint gets B in total.
# Both select without a kernel budget (--max-kernels all): what is compared
# is what each search found (the default budget, auto, costs joint up to 1 %).
# Each tunes into its own fresh database with its own cold kernel cache.  Then
# `dtune bench --db` runs each database's dispatched kernels over every M in
# 1..128 (the eight tuned shapes, and the others through nearest-tuned-shape
# dispatch), 3 interleaved repeats, min counts.  Printed: trials, wall time,
# geometric-mean GFLOP/s of each on the eight shapes and on 1..128, and the
# ratios joint / per-shape.  Each strategy runs once per seed (`--seed`);
# printed per seed, then the median and the spread (min..max) over the seeds,
# the joint / per-shape ratio included.  Environment: DTUNE_BIN (default
# build/dtune), THREADS (default 1), SEEDS (default "1 2 3"), OUT (results
# directory, default /tmp/dtune-bench-tuning; one OUT/seed-S per seed).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${DTUNE_BIN:-build/dtune}
B=${1:-64}
THREADS=${THREADS:-1}
OUT=${OUT:-/tmp/dtune-bench-tuning}
SEEDS=${SEEDS:-1 2 3}
KEY='dense(M={5,24,43,62,81,100,119,128},N=768,K=768)'
[ -x "$BIN" ] || { echo "bench_tuning: $BIN not found; build first (scripts/setup.sh)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"

for seed in $SEEDS; do
  D="$OUT/seed-$seed"
  mkdir -p "$D"
  for s in per-shape joint; do
    n=$B
    [ "$s" = per-shape ] && n=$((8 * B))
    echo "== seed $seed: tune $s: $n trials, $THREADS thread(s)" >&2
    DTUNE_CACHE_DIR="$D/cache-$s" "$BIN" --quiet tune "$KEY" --strategy "$s" --trials "$n" \
      --max-kernels all --seed "$seed" --threads "$THREADS" --db "$D/$s.db" --json > "$D/$s-tune.json"
  done
  for s in per-shape joint; do
    echo "== seed $seed: bench $s dispatch over M=1..128" >&2
    DTUNE_CACHE_DIR="$D/cache-$s" "$BIN" bench "$KEY" --db "$D/$s.db" --shapes 1..128 \
      --threads "$THREADS" --peers none --repeats 3 --json > "$D/$s-bench.json"
  done
done

python3 - "$OUT" "$B" $SEEDS <<'PY'
import json, math, statistics, sys
out, B, seeds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tuned = {5, 24, 43, 62, 81, 100, 119, 128}
def load(seed, s):
    t = json.load(open(f"{out}/seed-{seed}/{s}-tune.json"))
    b = json.load(open(f"{out}/seed-{seed}/{s}-bench.json"))
    g = {}
    for sh in b["shapes"]:
        m = int(sh["shape"].split("=")[1])
        g[m] = sh["gflops"]
    return t, g
def geo(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
def spread(v, spec=".1f"):
    if len(v) == 1:
        return format(v[0], spec)
    return f"{format(statistics.median(v), spec)} [{format(min(v), spec)}..{format(max(v), spec)}]"
print(f"dense 768x768, M in {sorted(tuned)}, B = {B}, seeds {' '.join(seeds)}")
print(f"{'seed':>5} {'strategy':10} {'trials':>7} {'wall s':>7} {'GFLOP/s 8 shapes':>17} {'GFLOP/s M=1..128':>17}")
cols = {"per-shape": ([], [], [], []), "joint": ([], [], [], [])}
r8s, ralls = [], []
for seed in seeds:
    tp, gp = load(seed, "per-shape")
    tj, gj = load(seed, "joint")
    for name, t, g in (("per-shape", tp, gp), ("joint", tj, gj)):
        row = (t["trials_total"], t["seconds"], geo([g[m] for m in tuned]), geo(list(g.values())))
        for c, v in zip(cols[name], row):
            c.append(v)
        print(f"{seed:>5} {name:10} {row[0]:7d} {row[1]:7.1f} {row[2]:17.1f} {row[3]:17.1f}")
    r8s.append(geo([gj[m] / gp[m] for m in tuned]))
    ralls.append(geo([gj[m] / gp[m] for m in gp]))
print(f"over {len(seeds)} seed(s): median [min..max]")
for name, (n, w, g8, ga) in cols.items():
    print(f"  {name:10} trials {spread(n, '.0f')}, wall s {spread(w)}, "
          f"GFLOP/s 8 shapes {spread(g8)}, M=1..128 {spread(ga)}")
print(f"joint / per-shape: {spread(r8s, '.3f')} on the 8 tuned shapes (joint {B} trials vs "
      f"per-shape {8 * B}), {spread(ralls, '.3f')} over M=1..128")
PY
