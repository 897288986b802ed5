#!/usr/bin/env python3
"""Summarises `dtune bench --json` files: per file, the best sampled kernel
against the strongest oneDNN peer (geometric mean over all shapes, and at
M = 1, 8, 37, 128), against OpenBLAS and LIBXSMM, the fraction of the FMA
peak at the largest M, and how widely the sampled kernels spread."""
import json
import math
import sys

MARKS = (1, 8, 37, 128)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarise(path):
    d = json.load(open(path))
    shapes = d["shapes"]
    ratios, marks, spread = [], {}, []
    vs = {"openblas": [], "libxsmm": []}
    for s in shapes:
        m = s["dims"].get("M")
        r = s.get("ratio_vs_onednn")
        if r:
            ratios.append(r)
            if m in MARKS:
                marks[m] = r
        for peer in vs:
            g = s["gflops"].get(peer)
            if g and s["best"]:
                vs[peer].append(s["best"] / g)
        if s["best"] and s["worst"]:
            spread.append((m, s["best"], s["median"], s["worst"]))
    last = shapes[-1]
    return {
        "file": path,
        "workload": d["workload"],
        "threads": d["threads"],
        "kernels": sum(1 for c in d["candidates"] if c["kind"] == "kernel" and c["status"] == "ok"),
        "geomean": geomean(ratios),
        "marks": marks,
        "min": min(ratios) if ratios else float("nan"),
        "openblas": geomean(vs["openblas"]),
        "libxsmm": geomean(vs["libxsmm"]),
        "peak_last": last.get("fraction_of_peak"),
        "m_last": last["dims"].get("M"),
        "fma_peak": d.get("peak_gops", d.get("fma_peak_gflops")),
        "spread": spread,
    }


def main(paths):
    rows = [summarise(p) for p in paths]
    print("| workload | threads | kernels | geomean vs oneDNN | M=1 | M=8 | M=37 | M=128 | lowest |"
          " vs OpenBLAS | vs LIBXSMM | % FMA peak at max M |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        marks = " | ".join(f"{r['marks'].get(m, float('nan')):.2f}x" for m in MARKS)
        print(f"| `{r['workload']}` | {r['threads']} | {r['kernels']} | {r['geomean']:.3f}x | {marks} |"
              f" {r['min']:.2f}x | {r['openblas']:.2f}x | {r['libxsmm']:.2f}x |"
              f" {100 * (r['peak_last'] or 0):.0f}% (M={r['m_last']}, peak {r['fma_peak']:.0f} GFLOP/s) |")
    print()
    print("Spread of the sampled kernels (GFLOP/s best / median / worst):")
    for r in rows:
        pts = [s for s in r["spread"] if s[0] in MARKS]
        text = "; ".join(f"M={m}: {b:.0f} / {md:.0f} / {w:.0f}" for m, b, md, w in pts)
        print(f"- `{r['workload']}`, {r['threads']} thread(s): {text}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bench_summary.py FILE.json...")
    main(sys.argv[1:])
