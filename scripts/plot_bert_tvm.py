#!/usr/bin/python3
"""Plot of scripts/bench_bert_tvm.sh's results (Debian's python3-matplotlib:
run with /usr/bin/python3; `apt-get install python3-matplotlib` if missing).

  /usr/bin/python3 scripts/plot_bert_tvm.py OUT [PNG]     (default docs/results/tvm-bert-layer.png)

One column per thread count: the BERT-base layer's latency against seq for
(a) TVM's default pipeline, (b) MetaSchedule with bucketing and (c) dtune
(top, log scale), and the ratios (a)/(c) and (b)/(c) with the issue's goals
(bottom).  Each point is the median over timing processes of the minima;
with several seeds, (b) and (c) are the median over seeds.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tvm_bert import load_times, median  # noqa: E402  (plain Python + numpy)

STYLE = {"a": ("TVM default (dlight CPU rules)", "tab:gray", "o"),
         "b": ("MetaSchedule + bucketing", "tab:blue", "s"),
         "c": ("dtune (call_dps_packed)", "tab:red", "^")}


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 1)
    out = sys.argv[1]
    png = sys.argv[2] if len(sys.argv) > 2 else "docs/results/tvm-bert-layer.png"
    cfg = json.load(open(os.path.join(out, "config.json")))
    times = load_times(out)
    if not times:
        sys.exit(f"plot_bert_tvm: no timing results in {out}/time")
    # per system and threads: seq -> median over seeds
    lat = {}
    for (sysname, t, _seed), d in times.items():
        for q, v in d.items():
            lat.setdefault((sysname, t), {}).setdefault(q, []).append(v)
    lat = {k: {q: median(v) for q, v in d.items()} for k, d in lat.items()}
    threads = sorted({t for _, t in lat})
    fig, axes = plt.subplots(2, len(threads), figsize=(max(7.0, 6.2 * len(threads)), 7.5), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    label_a = cfg.get("default_pipeline", "cpu+dlight")
    for col, t in enumerate(threads):
        top, bot = axes[0][col], axes[1][col]
        for s in "abc":
            d = lat.get((s, t))
            if not d:
                continue
            name, color, marker = STYLE[s]
            if s == "a" and label_a != "cpu+dlight":
                name = f"TVM default ({label_a})"
            if s == "c" and cfg.get("standin"):
                name += " [numpy stand-in]"
            q = sorted(d)
            # (b) is constant within a bucket: the value at a seq holds back to the previous seq
            top.plot(q, [d[x] * 1e3 for x in q], marker=marker, ms=3, lw=1.2, color=color, label=name,
                     drawstyle="steps-pre" if s == "b" else "default")
        top.set_yscale("log")
        top.set_title(f"{t} thread{'s' if t > 1 else ''}")
        top.set_ylabel("latency per layer (ms)")
        top.grid(True, which="both", alpha=0.3)
        top.legend(fontsize=8)
        c = lat.get(("c", t), {})
        for s, goal in (("a", 2.0), ("b", 1.2)):
            d = lat.get((s, t), {})
            q = sorted(set(d) & set(c))
            if not q:
                continue
            name, color, marker = STYLE[s]
            bot.plot(q, [d[x] / c[x] for x in q], marker=marker, ms=3, lw=1.2, color=color,
                     label=f"({s}) / dtune")
            bot.axhline(goal, color=color, ls="--", lw=0.8, alpha=0.7)
        bot.set_yscale("log")
        bot.set_xlabel("seq")
        bot.set_ylabel("speed-up of dtune")
        bot.grid(True, which="both", alpha=0.3)
        bot.legend(fontsize=8, title="dashed: goals 2x, 1.2x", title_fontsize=7)
    dt = f"db {os.path.basename(cfg['dtune_db'])}" if cfg.get("dtune_db") else f"tune --time {cfg.get('dtune_time')}"
    fig.suptitle(f"BERT-base encoder layer in TVM Relax, symbolic seq, -mcpu={cfg.get('mcpu')}\n"
                 f"MetaSchedule {cfg.get('trials')} trials/task, buckets {cfg.get('buckets')}, "
                 f"layout rewrite {cfg.get('layout')}; dtune {dt}", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
    fig.savefig(png, dpi=110)
    print(png)


if __name__ == "__main__":
    main()
