#!/usr/bin/python3
"""Plots of scripts/bench_vs_tvm.sh's results (Debian's python3-matplotlib:
run with /usr/bin/python3; `apt-get install python3-matplotlib` if missing).

  /usr/bin/python3 scripts/plot_vs_tvm.py OUT DIR [--suffix -smoke]

Writes, per workload and budget B:
  DIR/tvm-gflops-<w>-b<B><suffix>.png     GFLOP/s against M (1..128): dtune
      joint and per-shape (dispatched), oneDNN, TVM tuned with bucketing, TVM
      untuned (symbolic M), medians over seeds and timing processes;
  DIR/tvm-search-<w>-b<B><suffix>.png     best objective (mean over the tuned
      shapes of the best time, us: dtune's objective with its uniform
      weights, which sum to 1) against tuning wall time (s), one line per
      seed: dtune joint and per-shape from `dtune tune --json`'s "curve" (a
      point per search round), MetaSchedule from its per-trial records (trials.jsonl: each
      trial's wall time and run time; the objective exists once every shape
      has a measured kernel).
Needs OUT/summary.json (scripts/tvm_report.py OUT).
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

def dtune_curve(tune_json):
    """(elapsed s, best objective us) per search round, from `dtune tune
    --json`'s "curve" (one point per round), then the selected schedule's
    measured objective at the end of the tune."""
    try:
        t = json.load(open(tune_json))
    except (OSError, ValueError):
        return []
    pts = [(p["elapsed_s"], p["objective_ns"] / 1e3) for p in t.get("curve") or []
           if p.get("objective_ns") is not None]
    w = (t.get("workloads") or [{}])[0]
    if w.get("objective_ns") is not None and t.get("seconds") is not None:
        pts.append((t["seconds"], w["objective_ns"] / 1e3))
    return pts


def ms_curve(trials_path, shapes):
    best, pts = {}, []
    for line in open(trials_path):
        r = json.loads(line)
        if r["secs"] is None:
            continue
        us = r["secs"] * 1e6
        if r["M"] not in best or us < best[r["M"]]:
            best[r["M"]] = us
            if len(best) == len(shapes):
                pts.append((r["t"], sum(best.values()) / len(shapes)))
    return pts


def main():
    out, dst = sys.argv[1], sys.argv[2]
    suffix = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--suffix" else ""
    os.makedirs(dst, exist_ok=True)
    s = json.load(open(os.path.join(out, "summary.json")))
    cfg = s["config"]
    shapes = [int(x) for x in cfg["shapes"].split()]
    plt.rcParams.update({"figure.dpi": 100, "font.size": 10})
    names = {"dense": "dense 768x768", "ffn_up": "ffn_up 3072x768+bias+GELU"}
    for w, W in s["workloads"].items():
        for B, R in W["budgets"].items():
            fig, ax = plt.subplots(figsize=(8, 5))
            style = {"dtune_joint": ("dtune joint", "C0", "-"),
                     "dtune_per-shape": ("dtune per-shape", "C1", "-"),
                     "onednn": ("oneDNN (strongest matmul peer)", "C2", "--"),
                     "tvm_bucketing": ("TVM MetaSchedule + bucketing (padded to next tuned M)", "C3", "-")}
            for k, (label, c, ls) in style.items():
                cur = R["curves"].get(k)
                if cur:
                    xs = sorted(int(m) for m in cur)
                    ax.plot(xs, [cur[str(m)] if str(m) in cur else cur[m] for m in xs],
                            ls, color=c, label=label, lw=1.4)
            u = W.get("untuned") or {}
            if u:
                xs = sorted(int(m) for m in u)
                ax.plot(xs, [u[str(m)] for m in xs], "o:", color="C4", label="TVM untuned (symbolic M)")
            for m in shapes:
                ax.axvline(m, color="0.85", lw=0.6, zorder=0)
            ax.set_xlabel("M (rows; grey lines: tuned shapes)")
            ax.set_ylabel("GFLOP/s (higher is better)")
            ax.set_title(f"{names.get(w, w)}: {B} trials/shape, {cfg['threads']} thread(s), "
                         f"-mcpu={cfg['mcpu']}{' (SMOKE RUN)' if suffix else ''}", fontsize=10)
            ax.set_xlim(0, 129)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3)
            fig.tight_layout()
            fig.savefig(os.path.join(dst, f"tvm-gflops-{w}-b{B}{suffix}.png"))
            plt.close(fig)

            fig, ax = plt.subplots(figsize=(8, 5))
            for st, c in (("joint", "C0"), ("per-shape", "C1")):
                for i, d in enumerate(sorted(glob.glob(os.path.join(out, w, f"dtune-{st}-b{B}-s*")))):
                    pts = dtune_curve(os.path.join(d, "tune.json"))
                    if pts:
                        ax.plot(*zip(*pts), color=c, lw=1.2, marker=".",
                                label=f"dtune {st}" if i == 0 else None)
            for l, c in (("on", "C3"), ("off", "C5")):
                for i, d in enumerate(sorted(glob.glob(os.path.join(out, w, f"ms-b{B}-s*-layout-{l}")))):
                    p = os.path.join(d, "trials.jsonl")
                    pts = ms_curve(p, shapes) if os.path.exists(p) else []
                    if pts:
                        ax.plot(*zip(*pts), color=c, lw=1.2, drawstyle="steps-post", marker=".",
                                label=f"MetaSchedule, layout rewrite {l}" if i == 0 else None)
            ax.set_xlabel("tuning wall time (s, log scale)")
            ax.set_xscale("log")
            ax.set_ylabel("best objective: mean best time over tuned shapes (us)")
            ax.set_yscale("log")
            ax.set_title(f"{names.get(w, w)}: search progress, {B} trials/shape, one line per seed"
                         f"{' (SMOKE RUN)' if suffix else ''}", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
            fig.tight_layout()
            fig.savefig(os.path.join(dst, f"tvm-search-{w}-b{B}{suffix}.png"))
            plt.close(fig)
    print("plots in", dst)


if __name__ == "__main__":
    main()
