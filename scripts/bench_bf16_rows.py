#!/usr/bin/env python3
"""bf16's back-end rows against f32, side by side (issue 44's proof row).

For BERT-base's four dense shapes (N x K = 2304x768, 768x768, 3072x768,
768x3072) at M in {8, 37, 128}: `dtune bench --sample N` of the f32
workload and of the bf16 one (which samples every row the tuner searches
for bf16 on this CPU: avx512_bf16's vdpbf16ps, avx512_fma's widening, AMX
where usable), then per shape the best f32 kernel, the best kernel of each
bf16 row, and ratios: best bf16 row / best f32, and each row / best f32.
Every kernel is verified against the f64 reference by dtune bench.
Min of repeats; ratios only (the machine is shared).

  scripts/bench_bf16_rows.py [--dtune build/dtune] [--sample 120]
                             [--threads 1] [--json out.json]
"""
import argparse
import json
import subprocess
import sys

SHAPES = [(2304, 768), (768, 768), (3072, 768), (768, 3072)]
MS = "{8,37,128}"


def bench(dtune, key, sample, threads, seed):
    cmd = [dtune, "bench", key, "--sample", str(sample), "--peers", "none", "--json",
           "--threads", str(threads), "--seed", str(seed), "--repeats", "5"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def per_row(result):
    """{M: {backend: best GFLOP/s}} of one dtune bench result."""
    backend = {c["name"]: c.get("backend", "?") for c in result["candidates"]}
    rows = {}
    for s in result["shapes"]:
        best = rows.setdefault(s["dims"]["M"], {})
        for k, g in s["gflops"].items():
            if g is None:
                continue
            b = backend.get(k, "?")
            best[b] = max(best.get(b, 0.0), g)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtune", default="build/dtune")
    ap.add_argument("--sample", type=int, default=120)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    report = []
    print(f"{'N x K':>10} {'M':>4} {'f32 GF/s':>9}  best bf16 row / f32   each bf16 row / f32")
    for i, (n, k) in enumerate(SHAPES):
        f32 = per_row(bench(a.dtune, f"dense(M={MS},N={n},K={k})", a.sample, a.threads, 11 + i))
        bf = per_row(bench(a.dtune, f"dense(M={MS},N={n},K={k},dtype=bf16)", a.sample,
                           a.threads, 21 + i))
        for m in sorted(f32):
            best32 = max(f32[m].values())
            rows = {b: g / best32 for b, g in sorted(bf.get(m, {}).items())}
            top = max(rows, key=rows.get) if rows else "-"
            each = "  ".join(f"{b.split('/')[1]} {r:.2f}" for b, r in rows.items())
            print(f"{n:>5}x{k:<4} {m:>4} {best32:9.1f}  {top.split('/')[-1]:>12} "
                  f"{rows.get(top, 0):.2f}   {each}")
            report.append({"N": n, "K": k, "M": m, "f32_gflops": best32,
                           "bf16_rows_over_f32": rows, "picked": top})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
