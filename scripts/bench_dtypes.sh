#!/usr/bin/env bash
# Reduced precision against oneDNN at the same precision: sampled dtune
# micro-kernels (no tuning: the best of N sampled kernels per shape) beside
# oneDNN's matmul of the same dtype, with every dtype's peak measured in the
# same run (`dtune bench`, which verifies every kernel on every shape).
#
#   scripts/bench_dtypes.sh [--dtypes "bf16 int8"] [--sample 200] [--threads "1 2"]
#                           [--shapes "{1,2,4,8,12,16,24,32,37,48,64,80,96,112,128}"]
#                           [--w8] [--w8-shapes 1..16] [--out /tmp/dtune-bench-dtypes]
#                           [--bin build/dtune] [--repeats 5] [--min-time MS]
#
# bf16 and int8: BERT-base's four dense layers (N×K = 2304×768, 768×768,
# 3072×768 with GELU, 768×3072), with their biases.  Per workload and thread
# count: the geometric mean over the shapes of (best sampled kernel ÷ the
# strongest oneDNN peer, prepacked per shape or with run-time M), the ratio at
# M = 1, 8, 37 and 128, and % of the dtype's peak (vdpbf16ps / vpdpbusd,
# measured in the same run) at M = 128.
#
# --w8: weight-only int8 on the decode shapes dense 4096×4096 and 11008×4096
# (M = --w8-shapes): dtune's w8a32 kernels against oneDNN f32 (the same
# dequantized weights) and oneDNN bf16 (its bf16 matmul on the same shapes),
# with the weight-streaming GB/s (N·K bytes of s8 per call ÷ time) next to
# the read bandwidth of `dtune info --peaks`, and each ratio's ceiling: the
# same ratio for a kernel at w8a32's roofline (the weight bytes at the probed
# read bandwidth, or the flops at the probed f32 FMA peak, whichever is slower).
#
# Writes OUT/<name>.json (dtune bench --json) and OUT/summary.txt.  Run it
# on a quiet machine; the figures are ratios of interleaved timings.
set -euo pipefail
cd "$(dirname "$0")/.."

DTYPES="bf16 int8"
SAMPLE=200
THREADS="1 2"
SHAPES="{1,2,4,8,12,16,24,32,37,48,64,80,96,112,128}"
W8=0
W8_SHAPES="1..16"
OUT=/tmp/dtune-bench-dtypes
BIN=${DTUNE_BIN:-build/dtune}
REPEATS=5
MIN_MS=5

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dtypes) DTYPES=$2; shift 2 ;;
    --sample) SAMPLE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --w8) W8=1; shift ;;
    --w8-shapes) W8_SHAPES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --min-time) MIN_MS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_dtypes.sh: unknown option $1" >&2; usage >&2; exit 1 ;;
  esac
done
[ -x "$BIN" ] || { echo "bench_dtypes.sh: $BIN not built (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$OUT"

declare -A LAYERS=(
  [qkv]="N=2304,K=768,epilogue=bias"
  [out_proj]="N=768,K=768,epilogue=bias"
  [ffn_up]="N=3072,K=768,epilogue=bias+gelu"
  [ffn_down]="N=768,K=3072,epilogue=bias"
)
status=0
run() { # name key shapes threads [extra args]
  local name=$1 key=$2 shapes=$3 t=$4; shift 4
  echo "bench_dtypes: $name ($key, $t thread(s))" >&2
  if ! "$BIN" bench "$key" --shapes "$shapes" --threads "$t" --repeats "$REPEATS" \
      --min-time "$MIN_MS" --json "$@" > "$OUT/$name.json"; then
    echo "bench_dtypes: $name failed" >&2
    status=1
  fi
}
for dt in $DTYPES; do
  for layer in qkv out_proj ffn_up ffn_down; do
    for t in $THREADS; do
      run "$dt-$layer-t$t" "dense(M=1..128,${LAYERS[$layer]},dtype=$dt)" "$SHAPES" "$t" \
        --sample "$SAMPLE" --peers onednn,onednn_rt
    done
  done
done
if [ "$W8" = 1 ]; then
  "$BIN" info --peaks --json > "$OUT/info.json"
  for nk in "N=4096,K=4096" "N=11008,K=4096"; do
    tag=${nk//[=,]/}
    for t in $THREADS; do
      run "w8-$tag-t$t" "dense(M=1..16,$nk,dtype=w8a32)" "$W8_SHAPES" "$t" \
        --sample "$SAMPLE" --peers onednn,onednn_rt
      # oneDNN bf16 on the same shapes: one kernel only, its peers are what counts
      run "w8-bf16peer-$tag-t$t" "dense(M=1..16,$nk,dtype=bf16)" "$W8_SHAPES" "$t" \
        --sample 1 --peers onednn,onednn_rt
    done
  done
fi

python3 - "$OUT" "$DTYPES" "$THREADS" "$W8" > "$OUT/summary.txt" <<'EOF'
import json, math, os, sys
out, dtypes, threads, w8 = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "1"
def load(name):
    p = os.path.join(out, name + ".json")
    try:
        return json.load(open(p))
    except Exception:
        return None
def gm(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
def at(d, m):
    for s in d["shapes"]:
        if s["vars"].get("M") == m:
            return s
    return None
print("Sampled dtune kernels (best per shape) vs the strongest oneDNN peer of the same dtype")
print("| dtype | layer | threads | geomean | M=1 | M=8 | M=37 | M=128 | %peak M=128 | peak | back-end M=128 |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for dt in dtypes:
    for layer in ["qkv", "out_proj", "ffn_up", "ffn_down"]:
        for t in threads:
            d = load(f"{dt}-{layer}-t{t}")
            if not d:
                print(f"| {dt} | {layer} | {t} | failed |"); continue
            r = [s["ratio_vs_onednn"] for s in d["shapes"]]
            cells = []
            for m in (1, 8, 37, 128):
                s = at(d, m)
                cells.append(f"{s['ratio_vs_onednn']:.2f}x" if s and s["ratio_vs_onednn"] else "-")
            s128 = at(d, 128)
            pk = f"{100 * s128['fraction_of_peak']:.0f}%" if s128 and s128.get("fraction_of_peak") else "-"
            # the peak of the back-end of M=128's best kernel (bench: %peak by back-end)
            kind = (s128 or {}).get("peak_kind") or d["peak_kind"]
            gops = d.get("peaks", {}).get(kind, {}).get("gops", d["peak_gops"])
            be = (s128 or {}).get("backend") or "-"
            print(f"| {dt} | {layer} | {t} | {gm(r):.3f}x | " + " | ".join(cells) +
                  f" | {pk} | {gops:.0f} {kind} | {be} |")
if w8:
    info = load("info")
    bw = dict(zip(info["bandwidth"]["threads"], info["bandwidth"]["values"])) if info else {}
    pk = dict(zip(info["peaks"]["threads"], info["peaks"]["f32"]["values"])) if info else {}
    print("\nWeight-only int8 (w8a32) vs oneDNN f32 and bf16, geometric mean over the shapes")
    print("ceiling = the same geomean for a kernel at the roofline of w8a32's arithmetic: per shape")
    print("max(N*K weight bytes / read bandwidth, 2*M*N*K / f32 FMA peak), both measured in this run")
    print("(bandwidth: the probe's, or the fastest weight stream of any kernel in the run if higher)")
    print("(f32 activations are multiplied in f32: the FMA peak bounds it, not vdpbf16ps's)")
    print("| weights | threads | vs oneDNN f32 | ceiling | vs oneDNN bf16 | ceiling | weight GB/s at M=1 | read bandwidth probe | f32 peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tag in ["N4096K4096", "N11008K4096"]:
        for t in threads:
            d, b = load(f"w8-{tag}-t{t}"), load(f"w8-bf16peer-{tag}-t{t}")
            if not d:
                print(f"| {tag} | {t} | failed |"); continue
            vf, vb, cf, cb = [], [], [], []
            pkt = pk.get(int(t))
            # the probe, or the fastest weight stream any kernel reached in
            # this run if that is higher (the shared machine's bandwidth
            # varies between the probe and the kernels)
            bwt = bw.get(int(t)) or 0
            for x, wbytes in [(d, 1)] + ([(b, 2)] if b else []):
                for s in x["shapes"]:
                    n_k = s["dims"]["N"] * s["dims"]["K"]
                    for g in s["gflops"].values():
                        if g:
                            bwt = max(bwt, wbytes * n_k / (s["gflop"] / g) / 1e9)
            for s in d["shapes"]:
                dm = s["dims"]
                # the roofline time in seconds, and its GFLOP/s
                roof = max(dm["N"] * dm["K"] / (bwt * 1e9), s["gflop"] / pkt) if bwt and pkt else 0
                groof = s["gflop"] / roof if roof else 0
                f32 = max([g for k, g in s["gflops"].items() if k.startswith("onednn") and g] or [0])
                if f32:
                    vf.append(s["best"] / f32)
                    if groof: cf.append(groof / f32)
                sb = None
                for x in (b or {}).get("shapes", []):
                    if x["vars"] == s["vars"]:
                        sb = x
                bf = max([g for k, g in (sb or {}).get("gflops", {}).items() if k.startswith("onednn") and g] or [0])
                if bf:
                    vb.append(s["best"] / bf)
                    if groof: cb.append(groof / bf)
            s1 = at(d, 1)
            n, k = s1["dims"]["N"], s1["dims"]["K"]
            gbs = n * k / (s1["gflop"] / s1["best"]) / 1e9 if s1 and s1["best"] else float("nan")
            print(f"| {tag} | {t} | {gm(vf):.2f}x | {gm(cf):.2f}x | {gm(vb):.2f}x | {gm(cb):.2f}x | {gbs:.1f} "
                  f"| {bw.get(int(t), float('nan')):.1f} GB/s (used {bwt:.1f}) | {pk.get(int(t), float('nan')):.0f} GFLOP/s |")
EOF
cat "$OUT/summary.txt"
exit $status
