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
      point per search round); MetaSchedule from its task scheduler's log
      (ms/logs/*task_scheduler.log): after every batch it prints each task's
      best latency and their total with a timestamp; the curve is total /
      shapes against the time since the log's first line, drawn once every
      shape has a result, and ends at the run's tuning time (tune.json)
      with the best measured trials (trials.jsonl).  (Its measure callbacks
      get the results in one batch near the end of a run: all 512 trials of
      a B = 64 run within 40 s of its end, so trials.jsonl has no curve.)
Needs OUT/summary.json (scripts/tvm_report.py OUT).
"""
import datetime
import glob
import json
import os
import re
import sys

import matplotlib
import matplotlib.ticker

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


STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ")
TOTAL = re.compile(r"^Total latency \(us\): ([0-9.]+)")


def ms_curve(run_dir, nshapes):
    """[(s since the log's first line, total latency / shapes in us)] from
    MetaSchedule's task scheduler log, tables with every task measured."""
    logs = glob.glob(os.path.join(run_dir, "ms", "logs", "*task_scheduler.log"))
    if not logs:
        return []
    t0 = last = None
    pts, table_ok = [], True
    for line in open(logs[0], errors="replace"):
        m = STAMP.match(line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
            t0 = t0 or t
            last = t
            table_ok = True
            continue
        if "N/A" in line:
            table_ok = False
        m = TOTAL.match(line)
        if m and last is not None and table_ok:
            pts.append(((last - t0).total_seconds(), float(m.group(1)) / nshapes))
    return pts


def ms_point(run_dir, shapes):
    """(tuning wall time s, mean over the shapes of the best trial's us) of
    one MetaSchedule run, or None (a shape without a result)."""
    best = {}
    try:
        seconds = json.load(open(os.path.join(run_dir, "tune.json")))["seconds"]
        for line in open(os.path.join(run_dir, "trials.jsonl")):
            r = json.loads(line)
            if r["secs"] is not None and (r["M"] not in best or r["secs"] * 1e6 < best[r["M"]]):
                best[r["M"]] = r["secs"] * 1e6
    except (OSError, ValueError, KeyError):
        return None
    return (seconds, sum(best.values()) / len(shapes)) if len(best) == len(shapes) else None


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
            if not R["curves"].get("dtune_joint"):
                continue  # a MetaSchedule-only budget: drawn into the others' plots
            fig, ax = plt.subplots(figsize=(8, 5.6))
            style = {"dtune_joint": ("dtune joint", "C0", "-"),
                     "dtune_per-shape": ("dtune per-shape", "C1", "-"),
                     "onednn": ("oneDNN (strongest matmul peer)", "C2", "--"),
                     "tvm_bucketing": (f"TVM MetaSchedule, {B} trials/shape + bucketing", "C3", "-")}
            for k, (label, c, ls) in style.items():
                cur = R["curves"].get(k)
                if cur:
                    xs = sorted(int(m) for m in cur)
                    ax.plot(xs, [cur[str(m)] if str(m) in cur else cur[m] for m in xs],
                            ls, color=c, label=label, lw=1.4)
            for B2, R2 in W["budgets"].items():
                cur = R2["curves"].get("tvm_bucketing")
                if B2 != B and cur:
                    xs = sorted(int(m) for m in cur)
                    ax.plot(xs, [cur[str(m)] for m in xs], "-.", color="C5", lw=1.2,
                            label=f"TVM MetaSchedule, {B2} trials/shape + bucketing")
            u = W.get("untuned") or {}
            if u:
                xs = sorted(int(m) for m in u)
                ax.plot(xs, [u[str(m)] for m in xs], "o:", color="C4", label="TVM untuned (symbolic M)")
            if s.get("f32_peak_gflops"):
                ax.axhline(s["f32_peak_gflops"], color="k", ls=":", lw=1,
                           label=f"f32 FMA peak, measured ({s['f32_peak_gflops']:.0f})")
            for m in shapes:
                ax.axvline(m, color="0.85", lw=0.6, zorder=0)
            ax.set_xlabel("M (rows; grey lines: tuned shapes; bucketing: M runs the next "
                          "tuned M's kernel, padded)")
            ax.set_ylabel("GFLOP/s (higher is better)")
            ax.set_title(f"{names.get(w, w)}: {B} trials/shape, {cfg['threads']} thread(s), "
                         f"-mcpu={cfg['mcpu']}{' (SMOKE RUN)' if suffix else ''}", fontsize=10)
            ax.set_xlim(0, 129)
            ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.04)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
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
            for B2, l, c in [(b, l, c) for b in W["budgets"]
                             for l, c in (("on", "C3" if b == B else "C6"), ("off", "C5" if b == B else "C8"))]:
                for i, d in enumerate(sorted(glob.glob(os.path.join(out, w, f"ms-b{B2}-s*-layout-{l}")))):
                    pts = ms_curve(d, len(shapes))
                    pt = ms_point(d, shapes)
                    if pt:
                        pts.append(pt)
                    if pts:
                        ax.plot(*zip(*pts), color=c, lw=1.2, marker=".", drawstyle="steps-post",
                                label=f"MetaSchedule {B2}/shape, layout rewrite {l}" if i == 0 else None)
            ax.set_xlabel("tuning wall time (s, log scale)")
            ax.set_xscale("log")
            ax.set_ylabel("best objective: mean best time over tuned shapes (us)")
            ax.set_yscale("log")
            # plain numbers on the log axes, not 7x10^2
            for axis, digits in ((ax.xaxis, "25"), (ax.yaxis, "23456789")):
                axis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
                axis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
                    lambda v, _, d=digits: f"{v:g}" if str(int(v))[0] in d else ""))
            ax.set_title(f"{names.get(w, w)}: search progress, dtune {B} trials/shape, one line per seed"
                         f"{' (SMOKE RUN)' if suffix else ''}", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
            fig.tight_layout()
            fig.savefig(os.path.join(dst, f"tvm-search-{w}-b{B}{suffix}.png"))
            plt.close(fig)
    print("plots in", dst)


if __name__ == "__main__":
    main()
