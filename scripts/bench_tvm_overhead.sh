#!/usr/bin/env bash
# The TVM client's per-call overhead (docs/tvm.md, "Overhead"): dtune.dense
# through TVM FFI (lookup + call) against the exported C of the same
# schedule called directly, single thread, on a tuned database.
#
#   scripts/bench_tvm_overhead.sh --db DB [--key KEY] [--shapes "1 8 32 128"]
#                                 [--build build] [--out DIR]
#
# KEY (default BERT-base's out projection, dense(M=1..128,N=768,K=768,
# epilogue=bias)) must have a 1-thread schedule in DB.  Prints one JSON line
# per M (min and median per-call times of both paths, the overhead) and a
# summary line; the build must have found TVM FFI (libdtune_tvm built).
set -euo pipefail
cd "$(dirname "$0")/.."
DB= KEY="dense(M=1..128,N=768,K=768,epilogue=bias)" SHAPES="1 8 32 128" BUILD=build OUT=
while [ $# -gt 0 ]; do
  case $1 in
    --db) DB=$2; shift 2 ;;
    --key) KEY=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_tvm_overhead: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[ -n "$DB" ] || { echo "bench_tvm_overhead: --db is required" >&2; exit 1; }
CLIENT=$BUILD/libdtune_tvm.so
[ -f "$CLIENT" ] || { echo "bench_tvm_overhead: $CLIENT not built (TVM FFI not found; scripts/tvm_ffi_venv.sh)" >&2; exit 1; }
inc=$(sed -n 's/^TVM_FFI_INCLUDE_DIR:PATH=//p' "$BUILD/CMakeCache.txt")
lib=$(sed -n 's/^TVM_FFI_LIBRARY:FILEPATH=//p' "$BUILD/CMakeCache.txt")
[ -n "$OUT" ] || OUT=$(mktemp -d)
mkdir -p "$OUT"
N=$(echo "$KEY" | sed -n 's/.*[(,]N=\([0-9]*\).*/\1/p')
K=$(echo "$KEY" | sed -n 's/.*[(,]K=\([0-9]*\).*/\1/p')
"$BUILD/dtune" export "$KEY" --db "$DB" --threads 1 -o "$OUT/dtx.c" >&2
cc -O3 -march=native -fopenmp -fPIC -shared "$OUT/dtx.c" -o "$OUT/dtx.so"
cc -O2 -I"$inc" scripts/bench_tvm_overhead.c -o "$OUT/bench_tvm_overhead" "$lib" \
   -Wl,-rpath,"$(dirname "$lib")" -ldl
echo "== $(build/dtune info --json | sed -n 's/^ *"model": "\(.*\)",$/\1/p' | head -n 1), $KEY, 1 thread" >&2
# shellcheck disable=SC2086
OMP_NUM_THREADS=1 "$OUT/bench_tvm_overhead" "$(realpath "$CLIENT")" "$DB" "$KEY" "$N" "$K" \
    "$OUT/dtx.so" $SHAPES | tee "$OUT/overhead.jsonl"
python3 - "$OUT/overhead.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("overhead per call (median of paired rounds): " + ", ".join(
    f"M={r['M']}: {r['overhead_median_ns']:.0f} ns" for r in rows) +
    f"; largest {max(r['overhead_median_ns'] for r in rows):.0f} ns")
PY
