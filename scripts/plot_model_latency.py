#!/usr/bin/python3
"""BERT-base model latency per sequence length after a tune (Debian's
python3-matplotlib: run with /usr/bin/python3).

  /usr/bin/python3 scripts/plot_model_latency.py BENCH_DIR OUT.png
        [--model models/bert-base.json] [--threads 1] [--bin build/dtune] [--title-suffix S]

BENCH_DIR is scripts/bench_tuned.sh's --out directory (its
<workload>-t<T>-tuned.json files: `dtune bench --db` on every shape of each
workload, verified, oneDNN beside it).  For every sequence length, the
model's latency is the sum over its workloads of count × the time of that
shape (GFLOP / GFLOP/s from the bench report): dtune's dispatched kernels,
and the strongest oneDNN peer at that shape.  Plotted in ms against seq,
with the dtune / oneDNN ratio on a second axis.  The workload list and the
counts come from `dtune workloads MODEL --json`.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_dir")
    ap.add_argument("out_png")
    ap.add_argument("--model", default="models/bert-base.json")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--bin", default="build/dtune")
    ap.add_argument("--title-suffix", default="")
    a = ap.parse_args()
    wl = json.loads(subprocess.check_output([a.bin, "workloads", a.model, "--json"]))
    dt, dn, missing = {}, {}, []
    for w in wl["workloads"]:
        stem = re.sub(r"[^A-Za-z0-9]+", "_", w["key"]).strip("_")
        path = os.path.join(a.bench_dir, f"{stem}-t{a.threads}-tuned.json")
        if not os.path.exists(path):
            missing.append(w["key"])
            continue
        try:
            rep = json.load(open(path))
        except ValueError:  # a run that failed (or is still running)
            missing.append(w["key"])
            continue
        for sh in rep["shapes"]:
            seq = int(str(sh["shape"]).split("=")[-1])
            g = sh.get("gflop")
            if not g or not sh.get("gflops") or not sh.get("onednn_best"):
                continue
            dt[seq] = dt.get(seq, 0.0) + w["count"] * g / sh["gflops"] * 1e3  # ms
            dn[seq] = dn.get(seq, 0.0) + w["count"] * g / sh["onednn_best"] * 1e3
    if missing:
        print("plot_model_latency: no bench report for " + ", ".join(missing) +
              " (left out of both sums)", file=sys.stderr)
    xs = sorted(set(dt) & set(dn))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(xs, [dt[x] for x in xs], "-", color="C0", label="dtune (tuned, dispatched)")
    ax.plot(xs, [dn[x] for x in xs], "--", color="C2", label="oneDNN (strongest matmul peer)")
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("model latency, sum of the 6 workloads x count (ms)")
    ax.set_xlim(0, max(xs) + 1 if xs else 129)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(xs, [dn[x] / dt[x] for x in xs], ":", color="C3", lw=1, label="speedup oneDNN time / dtune time")
    ax2.set_ylabel("speedup (x, oneDNN time / dtune time)")
    ax2.axhline(1.0, color="C3", lw=0.5, alpha=0.5)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    ax.set_title(f"{wl.get('model', 'model')}: latency per sequence length, {a.threads} thread(s)"
                 f"{a.title_suffix}", fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out_png)
    if xs:
        print(f"seq {xs[0]}..{xs[-1]}: dtune {dt[xs[-1]]:.2f} ms, oneDNN {dn[xs[-1]]:.2f} ms at seq={xs[-1]}; "
              f"sum over seqs dtune/oneDNN time {sum(dt[x] for x in xs) / sum(dn[x] for x in xs):.3f}")


if __name__ == "__main__":
    main()
