#!/usr/bin/env python3
"""Summary of scripts/bench_vs_tvm.sh's results directory: prints tables and
writes OUT/summary.json (read by scripts/plot_vs_tvm.py).  Plain Python 3
(numpy not needed), so it also runs outside the TVM venv.

Per system and budget, over the seeds: median [min..max] of the geometric-mean
GFLOP/s on the tuned shapes and on M = 1..128, of the tuning wall time and of
the trials.  Every kernel time is the median over processes of each process's
minimum.  MetaSchedule counts, per shape, the faster of its runs with and
without the layout rewrite (its tuning time: both runs' sum, and each apart);
a variant run for only some of the seeds at a budget gets its own row and a
line saying what it would change, but stays out of the best-of row.
TVM bucketing: M runs the tuned kernel of the next tuned shape up.
When OUT/peaks.json (`dtune info --peaks --json`, measured in the same run)
exists, the f32 FMA peak at the run's thread count is printed and every
GFLOP/s cell gets its share of it: the ceiling every system is under.  The
issue's headline ratios follow each table: dtune joint over MetaSchedule at
each budget (GFLOP/s on the tuned shapes) and the tuning-time fraction; then
dtune joint at the smallest budget over MetaSchedule at each larger one.

The budgets, seeds and layouts reported are every one found in OUT (runs
added by later `bench_vs_tvm.sh --budgets/--seeds` calls into the same OUT
included, whatever its config.json says); --budgets, --seeds and --layout
restrict them.

  python3 scripts/tvm_report.py OUT [--budgets "64 512"] [--seeds "1 2"] [--layout on]
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

DIMS = {"dense": (768, 768), "ffn_up": (3072, 768)}


def flops(w, M):
    N, K = DIMS[w]
    return 2.0 * M * N * K


def geo(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def spread(v):
    v = [x for x in v if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def fmt(s, spec=".1f"):
    if not s:
        return "n/a"
    if s["n"] == 1:
        return format(s["median"], spec)
    return f"{format(s['median'], spec)} [{format(s['min'], spec)}..{format(s['max'], spec)}]"


def tvm_times(path):
    """{(so basename, M): median over processes of the minimum seconds}; None if wrong."""
    per = {}
    bad = set()
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        for r in json.loads(line)["results"]:
            k = (os.path.basename(r["so"]), r["M"])
            if not r["verified"]:
                bad.add(k)
            elif r["seconds"]:
                per.setdefault(k, []).append(r["seconds"])
    return {k: (None if k in bad else statistics.median(v)) for k, v in per.items()}, bad


def dtune_bench(path):
    """{M: (dtune GFLOP/s, oneDNN GFLOP/s)}, medians over processes; all verified?"""
    g, o, ok = {}, {}, True
    for line in open(path):
        if not line.strip():
            continue
        rep = json.loads(line)
        ok = ok and rep.get("all_verified", True) is not False
        for sh in rep["shapes"]:
            m = int(str(sh["shape"]).split("=")[1])
            g.setdefault(m, []).append(sh.get("gflops"))
            o.setdefault(m, []).append(sh.get("onednn_best"))
    med = lambda v: statistics.median([x for x in v if x]) if any(v) else None
    return {m: (med(g[m]), med(o[m])) for m in g}, ok


def f32_peak(out, threads):
    """The measured 1..T-thread f32 FMA peak (GFLOP/s) of OUT/peaks.json, or None."""
    try:
        j = json.load(open(os.path.join(out, "peaks.json")))
        th = j["peaks"]["threads"]
        return j["peaks"]["f32"]["values"][th.index(int(threads))]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def joint_over_ms(jr, mr):
    """dtune joint's rows against MetaSchedule's: the ratio of the median
    GFLOP/s on the tuned shapes, the fraction of the median tuning time, and
    the line that says both."""
    j8 = spread([r.get("g8") for r in jr])["median"]
    m8 = spread([r.get("g8") for r in mr])["median"]
    jt = spread([r.get("tune_s") for r in jr])["median"]
    mt = spread([r.get("tune_s") for r in mr])["median"]
    return (j8 / m8 if m8 else None, jt / mt if mt else None,
            f"(GFLOP/s, tuned shapes, medians): {j8 / m8:.3f}; "
            f"tuning time {jt:.1f} s / {mt:.1f} s = 1/{mt / jt:.0f}")


def found_runs(out, workloads):
    """(budgets, seeds, layouts) of the run directories present in OUT."""
    budgets, seeds, layouts = set(), set(), set()
    for w in workloads:
        for d in glob.glob(os.path.join(out, w, "*-b*-s*")):
            m = re.search(r"-b(\d+)-s(\d+)(?:-layout-(\w+))?$", os.path.basename(d))
            if m:
                budgets.add(int(m.group(1)))
                seeds.add(int(m.group(2)))
                if m.group(3):
                    layouts.add(m.group(3))
    return budgets, seeds, layouts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="bench_vs_tvm.sh's --out directory")
    ap.add_argument("--budgets", help='only these trials-per-shape budgets, e.g. "64 512"')
    ap.add_argument("--seeds", help='only these seeds, e.g. "1 2 3"')
    ap.add_argument("--layout", help='only these MetaSchedule layout variants, "on off"')
    args = ap.parse_args()
    out = args.out
    cfg = json.load(open(os.path.join(out, "config.json")))
    # every workload with results (a later call may have named only one)
    cfg["workloads"] = " ".join(w for w in DIMS if w in cfg["workloads"].split()
                                or os.path.isdir(os.path.join(out, w)))
    fb, fs, fl = found_runs(out, cfg["workloads"].split())
    # the config's values and every run found on disk, numerically ordered
    cfg["budgets"] = args.budgets or " ".join(
        map(str, sorted(fb | {int(b) for b in cfg["budgets"].split()})))
    cfg["seeds"] = args.seeds or " ".join(map(str, sorted(fs | {int(x) for x in cfg["seeds"].split()})))
    cfg["layout"] = args.layout or " ".join(sorted(fl | set(cfg["layout"].split()), reverse=True))
    peak = f32_peak(out, cfg["threads"])
    shapes = [int(s) for s in cfg["shapes"].split()]
    summary = {"config": cfg, "workloads": {}}
    lines = []
    p = lines.append
    p(f"dtune vs TVM MetaSchedule: -mcpu={cfg['mcpu']}, {cfg['threads']} thread(s), tuned shapes "
      f"M in {shapes}, seeds {cfg['seeds']}, {cfg['procs']} timing processes (median of minima)")
    p("cells: median [min..max] over seeds; GFLOP/s are geometric means over the shapes named")
    if peak:
        p(f"f32 FMA peak measured in this run (dtune info --peaks): {peak:.1f} GFLOP/s at "
          f"{cfg['threads']} thread(s); (x%) = share of it")
    summary["f32_peak_gflops"] = peak
    for w in cfg["workloads"].split():
        W = {"untuned": {}, "budgets": {}}
        summary["workloads"][w] = W
        ut = os.path.join(out, w, "untuned", "time.jsonl")
        if os.path.exists(ut):
            t, _ = tvm_times(ut)
            W["untuned"] = {M: flops(w, M) / s / 1e9 for (_, M), s in t.items() if s}
        for B in cfg["budgets"].split():
            rows = {}
            curves = {}
            ratio8, ratio_all = [], []
            ms_seeds, js_seeds = [], {"joint": [], "per-shape": []}
            # A layout variant run for only some of MetaSchedule's seeds gets
            # its own row but stays out of the best-of row, whose tuning time
            # would otherwise mix one run per seed with two.
            ran = {l: [x for x in cfg["seeds"].split() if os.path.exists(
                       os.path.join(out, w, f"ms-b{B}-s{x}-layout-{l}", "time.jsonl"))]
                   for l in cfg["layout"].split()}
            ms_any = {x for v in ran.values() for x in v}
            partial = [l for l, v in ran.items() if v and len(v) < len(ms_any)]
            extra = []  # (seed, layout, shapes where it was faster, best-of g8 with it)
            for seed in cfg["seeds"].split():
                # MetaSchedule, best of the layout variants per shape
                best, tune_s, trials, variant = {}, 0.0, 0, {}
                have = False
                for l in sorted(cfg["layout"].split(), key=lambda l: l in partial):
                    d = os.path.join(out, w, f"ms-b{B}-s{seed}-layout-{l}")
                    if not os.path.exists(os.path.join(d, "time.jsonl")):
                        continue
                    tj = json.load(open(os.path.join(d, "tune.json")))
                    t = {M: s for (_, M), s in tvm_times(os.path.join(d, "time.jsonl"))[0].items() if s}
                    name = f"MetaSchedule layout rewrite {l}"
                    if l in partial:
                        name += f", seed{'s' if len(ran[l]) > 1 else ''} {', '.join(ran[l])} only"
                    rows.setdefault(name, []).append(
                        {"tune_s": tj["seconds"], "trials": tj["trials_recorded"],
                         "g8": geo([flops(w, M) / s / 1e9 for M, s in t.items()])})
                    if l in partial:
                        if have:
                            faster = sorted(M for M, s in t.items() if M in best and s < best[M])
                            both = {M: min(s, t.get(M, s)) for M, s in best.items()}
                            extra.append((seed, l, faster, geo([flops(w, M) / s / 1e9 for M, s in both.items()])))
                        continue
                    have = True
                    tune_s += tj["seconds"]
                    trials += tj["trials_recorded"]
                    for M, s in t.items():
                        if M not in best or s < best[M]:
                            best[M], variant[M] = s, l
                if have:
                    ms_seeds.append(seed)
                    ms_g = {M: flops(w, M) / s / 1e9 for M, s in best.items()}
                    bucket = {}
                    for M in range(1, 129):
                        up = [S for S in sorted(best) if S >= M]
                        if up:
                            bucket[M] = flops(w, M) / best[up[0]] / 1e9
                    rows.setdefault("MetaSchedule (best layout per shape)", []).append(
                        {"tune_s": tune_s, "trials": trials, "g8": geo(ms_g.values()),
                         "gall": geo(bucket.values()), "variant": variant, "seed": seed})
                    curves.setdefault("tvm_bucketing", []).append(bucket)
                # dtune
                js = {}
                for st in ("joint", "per-shape"):
                    d = os.path.join(out, w, f"dtune-{st}-b{B}-s{seed}")
                    if not os.path.exists(os.path.join(d, "bench.jsonl")):
                        continue
                    tj = json.load(open(os.path.join(d, "tune.json")))
                    g, ok = dtune_bench(os.path.join(d, "bench.jsonl"))
                    js[st] = g
                    js_seeds[st].append(seed)
                    rows.setdefault(f"dtune {st}", []).append(
                        {"tune_s": tj.get("seconds"), "trials": tj.get("trials_total"),
                         "g8": geo([g[M][0] for M in shapes if M in g]),
                         "gall": geo([v[0] for v in g.values()]), "verified": ok})
                    rows.setdefault(f"oneDNN (in dtune {st}'s bench)", []).append(
                        {"g8": geo([g[M][1] for M in shapes if M in g]),
                         "gall": geo([v[1] for v in g.values()])})
                    curves.setdefault(f"dtune_{st}", []).append({M: v[0] for M, v in g.items()})
                    curves.setdefault("onednn", []).append({M: v[1] for M, v in g.items()})
                if len(js) == 2:
                    j, ps = js["joint"], js["per-shape"]
                    ratio8.append(geo([j[M][0] / ps[M][0] for M in shapes if M in j and M in ps]))
                    ratio_all.append(geo([j[M][0] / ps[M][0] for M in j if M in ps]))
            # per-M medians over seeds (and processes) for the plots
            med_curves = {}
            for name, lst in curves.items():
                ms_ = sorted(set().union(*[set(c) for c in lst]))
                med_curves[name] = {M: statistics.median([c[M] for c in lst if c.get(M)])
                                    for M in ms_ if any(c.get(M) for c in lst)}
            W["budgets"][B] = {"curves": med_curves, "rows": rows,
                               "joint_over_per_shape_8": spread(ratio8),
                               "joint_over_per_shape_all": spread(ratio_all)}
            p("")
            p(f"== {w}, B = {B} trials per shape ({len(shapes) * int(B)} in total for every system)")
            p("seeds with results: " + "; ".join(
                f"{k} {','.join(v) if v else '-'}" for k, v in (
                    ("MetaSchedule", ms_seeds), ("dtune joint", js_seeds["joint"]),
                    ("per-shape", js_seeds["per-shape"]))))
            p(f"{'system':46} {'trials':>14} {'tuning s':>22} {'GFLOP/s tuned shapes':>24} {'GFLOP/s M=1..128':>24}")
            def pk(sp):
                return fmt(sp) + (f" ({100 * sp['median'] / peak:.0f}%)" if sp and peak else "")
            for name, rs in rows.items():
                p(f"{name:46} {fmt(spread([r.get('trials') for r in rs]), '.0f'):>14} "
                  f"{fmt(spread([r.get('tune_s') for r in rs])):>22} "
                  f"{pk(spread([r.get('g8') for r in rs])):>24} {pk(spread([r.get('gall') for r in rs])):>24}")
            if W["untuned"]:
                u = W["untuned"]
                p(f"{'TVM untuned (symbolic M), no tuning':46} {'-':>14} {'-':>22} "
                  f"{fmt(spread([geo([u[M] for M in shapes if M in u])])):>24} "
                  f"{'(M=' + ','.join(map(str, sorted(u))) + ')':>24}")
            p(f"joint / per-shape (dtune, same trials): {fmt(spread(ratio8), '.3f')} on the tuned shapes, "
              f"{fmt(spread(ratio_all), '.3f')} over M=1..128")
            W["budgets"][B]["headline"] = hl = {}
            jr, mr = rows.get("dtune joint", []), rows.get("MetaSchedule (best layout per shape)", [])
            if jr and mr:
                g, t, text = joint_over_ms(jr, mr)
                hl.update({"joint_over_ms_8": g, "joint_time_fraction": t})
                p(f"dtune joint / MetaSchedule-{B} {text}")
            for r in rows.get("MetaSchedule (best layout per shape)", []):
                p(f"MetaSchedule layout chosen per shape, seed {r['seed']}: " +
                  ", ".join(f"M={M}:{v}" for M, v in sorted(r["variant"].items())))
            for seed, l, faster, g in extra:
                r = next(r for r in rows["MetaSchedule (best layout per shape)"] if r["seed"] == seed)
                p(f"MetaSchedule layout rewrite {l}, seed {seed} (not in best-of): faster on "
                  + (", ".join(f"M={M}" for M in faster) if faster else "no shape")
                  + f"; counted, seed {seed}'s best-of would be {g:.1f} GFLOP/s instead of {r['g8']:.1f}")
        # the cross-budget figure: dtune joint at the smallest budget
        # against MetaSchedule with more trials
        bs = sorted(W["budgets"], key=int)
        jr = W["budgets"][bs[0]]["rows"].get("dtune joint", []) if bs else []
        for B in bs[1:]:
            mr = W["budgets"][B]["rows"].get("MetaSchedule (best layout per shape)", [])
            if jr and mr:
                g, t, text = joint_over_ms(jr, mr)
                W["budgets"][B]["headline"]["joint_b%s_over_ms_8" % bs[0]] = g
                W["budgets"][B]["headline"]["joint_b%s_time_fraction" % bs[0]] = t
                p(f"{w}: dtune joint at B = {bs[0]} / MetaSchedule-{B} {text}")
    print("\n".join(lines))
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
