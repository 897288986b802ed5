#!/usr/bin/env bash
# Convolutions against oneDNN's convolution primitive (issue 31): sampled
# dtune conv2d kernels (no tuning: the best of N sampled kernels per shape)
# beside `onednn_conv`, oneDNN's direct convolution created for each exact
# shape outside the timing, with its creation time per shape reported (what
# a server meeting a new image size pays) — `dtune bench`, which verifies
# every kernel and the peer on every shape.
#
#   scripts/bench_conv.sh [--model models/resnet50.json] [--sample 200]
#                         [--threads "1 2"] [--batches "{1,8}"] [--dtype f32]
#                         [--only 3x3|1x1|dw|tr|all] [--size 224]
#                         [--out /tmp/dtune-bench-conv]
#                         [--bin build/dtune] [--repeats 5] [--min-time MS]
#
# Default: ResNet-50's distinct 3x3 and 1x1 convolutions (22 workloads; the
# 7x7 stem is left out unless --only all) at batch 1 and 8 (the workloads'
# variable N takes --batches), 1 and 2 threads.  --only dw: the grouped
# (depthwise) convolutions, e.g. --model models/mobilenetv2.json --only dw
# (its 10 distinct depthwise layers; a model whose dims follow a `size`
# variable runs at --size, default 224).  --only tr: the transposed
# convolutions (transpose=1), against oneDNN's deconvolution, e.g. --model
# models/unet-decoder.json --only tr.  3x3 and 1x1 take the ungrouped
# forward ones.  Per workload and thread count: the ratio best sampled kernel /
# onednn_conv at each batch, % of the f32 peak and of the memory roofline
# (input + output + weights at the read bandwidth, both measured by
# `dtune info --peaks` in the same run), oneDNN's primitive creation
# time; then per thread count the geometric mean and the lowest ratio.
#
# Writes OUT/<layer>-t<T>.json (dtune bench --json) and OUT/summary.txt.
# Run it on a quiet machine; the figures are ratios of interleaved timings.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=models/resnet50.json
SAMPLE=200
THREADS="1 2"
BATCHES="{1,8}"
DTYPE=f32
ONLY=3x3,1x1
SIZE=224
OUT=/tmp/dtune-bench-conv
BIN=${DTUNE_BIN:-build/dtune}
REPEATS=5
MIN_MS=5

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --sample) SAMPLE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --dtype) DTYPE=$2; shift 2 ;;
    --only) case "$2" in all) ONLY=all ;; 3x3|1x1|dw|tr) ONLY=$2 ;;
              *) echo "bench_conv.sh: --only takes 3x3, 1x1, dw, tr or all" >&2; exit 1 ;; esac
            shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --min-time) MIN_MS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_conv.sh: unknown option $1" >&2; usage >&2; exit 1 ;;
  esac
done
[ -x "$BIN" ] || { echo "bench_conv.sh: $BIN not built (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$OUT"
"$BIN" info > "$OUT/info.txt"
"$BIN" info --peaks --json > "$OUT/peaks.json"

# name<TAB>key of every conv2d workload of the model, its batch a variable
# the bench sets (--shapes), the dtype applied
"$BIN" workloads "$MODEL" --json | python3 -c '
import json, re, sys
only, dtype = sys.argv[1], sys.argv[2]
for w in json.load(sys.stdin)["workloads"]:
    k = w["key"]
    if not k.startswith("conv2d("):
        continue
    r = re.search(r",R=(\d+),S=(\d+),", k)
    size = "%sx%s" % r.groups()
    grouped, transposed = ",groups=" in k, ",transpose=1" in k
    if only == "dw" and (not grouped or transposed):
        continue
    if only == "tr" and not transposed:
        continue
    if only not in ("all", "dw", "tr") and (grouped or transposed or
                                             size not in only.split(",")):
        continue
    k = re.sub(r"^conv2d\(N=[^,]+,", "conv2d(N=1..8,", k)
    if dtype != "f32":
        k = k[:-1] + ",dtype=" + dtype + ")"
    print("%s\t%s" % (w["ops"][0], k))
' "$ONLY" "$DTYPE" > "$OUT/workloads.tsv"
[ -s "$OUT/workloads.tsv" ] || { echo "bench_conv.sh: no conv2d workload in $MODEL" >&2; exit 1; }

status=0
while IFS=$'\t' read -r name key; do
  for t in $THREADS; do
    echo "bench_conv: $name ($key, $t thread(s))" >&2
    shapes=$BATCHES
    case "$key" in *";size="*) shapes="N=$BATCHES;size={$SIZE}" ;; esac
    if ! "$BIN" bench "$key" --shapes "$shapes" --threads "$t" --sample "$SAMPLE" \
        --repeats "$REPEATS" --min-time "$MIN_MS" --peers onednn_conv --json \
        > "$OUT/$name-t$t.json"; then
      echo "bench_conv: $name failed" >&2
      status=1
    fi
  done
done < "$OUT/workloads.tsv"

python3 - "$OUT" "$THREADS" > "$OUT/summary.txt" <<'EOF'
import json, math, os, re, sys
out, threads = sys.argv[1], sys.argv[2].split()
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "workloads.tsv"))]
names = [r[0] for r in rows]
keys = dict(rows)
peaks = json.load(open(os.path.join(out, "peaks.json")))
bw = peaks["bandwidth"]["values"]  # GB/s read, at 1, 2, ... threads
def attr(key, name, default):
    m = re.search(r"[(,]" + name + r"=(\d+)", key)
    return int(m.group(1)) if m else default
def roofline(key, dims, gflop, gflops, t):
    """achieved bytes (input + output + weights, f32) per second over the read bandwidth
    (symmetric pads; a transposed convolution's output with its out_pad)"""
    N, H, W, C, K, R, S = (dims[x] for x in "N H W C K R S".split())
    st, pad, g = attr(key, "stride", 1), attr(key, "pad", 0), attr(key, "groups", 1)
    if attr(key, "transpose", 0):
        op = attr(key, "out_pad", 0)
        oh = (H - 1) * st - 2 * pad + R + op
        ow = (W - 1) * st - 2 * pad + S + attr(key, "out_pad_w", 0)
    else:
        oh, ow = (H + 2 * pad - R) // st + 1, (W + 2 * pad - S) // st + 1
    flop = gflop * 1e9
    nbytes = 4.0 * (N * H * W * C + N * oh * ow * K + K * R * S * (C // g))
    b = bw[min(int(t), len(bw)) - 1]
    return nbytes / (flop / (gflops * 1e9)) / 1e9 / b if b else None
def gm(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
print(open(os.path.join(out, "info.txt")).readline().strip())
print("Sampled dtune conv2d kernels (best per shape) vs onednn_conv (a primitive per exact shape)")
print("| layer | threads | " + " | ".join(["ratio", "dtune GFLOP/s", "oneDNN GFLOP/s", "%peak",
                                             "%roofline", "oneDNN create ms"]) + " |")
print("|---|---|---|---|---|---|---|---|")
allr = {t: [] for t in threads}
for n in names:
    for t in threads:
        p = os.path.join(out, f"{n}-t{t}.json")
        try:
            d = json.load(open(p))
        except Exception:
            print(f"| {n} | {t} | failed |"); continue
        for s in d["shapes"]:
            b = s["vars"].get("N")
            r = s.get("ratio_vs_onednn")
            od = s["gflops"].get("onednn_conv")
            cr = s.get("peer_create_seconds", {}).get("onednn_conv")
            fp = s.get("fraction_of_peak")
            rf = roofline(keys[n], s["dims"], s["gflop"], s["best"], t) if s.get("best") else None
            allr[t].append((r, f"{n} N={b}"))
            print(f"| {n} N={b} | {t} | " + (f"{r:.2f}x" if r else "-") +
                  f" | {s['best']:.0f} | " + (f"{od:.0f}" if od else "-") + " | " +
                  (f"{100 * fp:.0f}%" if fp else "-") + " | " +
                  (f"{100 * rf:.0f}%" if rf else "-") + " | " +
                  (f"{1e3 * cr:.2f}" if cr else "-") + " |")
print()
for t in threads:
    rs = [x for x in allr[t] if x[0]]
    if rs:
        lo = min(rs)
        print(f"{t} thread(s): geometric mean {gm([r for r, _ in rs]):.3f}x over {len(rs)} shapes, "
              f"lowest {lo[0]:.3f}x ({lo[1]}), {sum(1 for r, _ in rs if r < 0.8)} below 0.8x")
EOF
cat "$OUT/summary.txt"
exit $status
