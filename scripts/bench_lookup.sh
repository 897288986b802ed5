#!/usr/bin/env bash
# In-process dtune_lookup latency after the first lookup (issue 6 target:
# under 1 us).  Runs examples/lookup_bench: one first lookup (which loads the
# schedule), then REPEATS runs of LOOKUPS lookups cycling over the shapes
# VAR=LO..HI; the figure is the minimum over the runs of the mean ns per
# lookup, for shapes as text (dtune_lookup) and as values
# (dtune_lookup_values).
#
#   scripts/bench_lookup.sh [--db dtune.db --workload KEY [--var M --lo 1 --hi 64]
#                           [--other NAME=VALUE]] [--build build] [--repeats 20]
#                           [--lookups 200000]
#
# --other: a workload with two variables (conv2d over H, W) holds the second
# at VALUE while --var cycles through LO..HI.
#
# Without --db it makes its own database in a temporary directory: a tiny
# `dtune tune` of dense(M=1..64,N=256,K=256) (--trials 40, a few seconds).
# Builds BUILD/examples/lookup_bench if it is missing.  Exit status 0 when
# both figures are under 1000 ns, 1 when not, 2 on errors.
set -euo pipefail
cd "$(dirname "$0")/.."

DB=
KEY='dense(M=1..64,N=256,K=256)'
VAR=M LO=1 HI=64
BUILD=build
REPEATS=20
LOOKUPS=200000
OTHER=
while [ $# -gt 0 ]; do
  case "$1" in
    --db) DB=$2; shift 2 ;;
    --workload) KEY=$2; shift 2 ;;
    --var) VAR=$2; shift 2 ;;
    --lo) LO=$2; shift 2 ;;
    --hi) HI=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --lookups) LOOKUPS=$2; shift 2 ;;
    --other) OTHER=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench_lookup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

BENCH=$BUILD/examples/lookup_bench
if [ ! -x "$BENCH" ]; then
  cmake --build "$BUILD" --target dtune_example_lookup_bench >/dev/null
fi

TMP=$(mktemp -d /tmp/dtune-bench-lookup.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
if [ -z "$DB" ]; then
  DB=$TMP/lookup.db
  echo "tuning $KEY (40 trials) into $DB ..."
  DTUNE_CACHE_DIR=$TMP/cache "$BUILD/dtune" tune "$KEY" --trials 40 --db "$DB" >"$TMP/tune.log" 2>&1 ||
    { cat "$TMP/tune.log" >&2; exit 2; }
fi

"$BENCH" "$DB" "$KEY" "$VAR" "$LO" "$HI" "$REPEATS" "$LOOKUPS" ${OTHER:+"$OTHER"} | tee "$TMP/out.txt"
awk '/ns per lookup/ { if ($2 + 0 >= 1000) bad = 1 } END {
       print bad ? "target: under 1000 ns per lookup -- MISSED" : "target: under 1000 ns per lookup -- met"
       exit bad }' "$TMP/out.txt"
