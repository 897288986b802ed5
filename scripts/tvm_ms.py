#!/usr/bin/env python3
"""TVM side of scripts/bench_vs_tvm.sh; runs inside the pinned TVM venv.

Subcommands (each prints one JSON object on stdout, logs on stderr):

  tune     MetaSchedule on one workload: one task per shape (the shapes as
           constants), all tasks in one tune_tir call (MetaSchedule's
           multi-task mode, gradient task scheduler, B trials per task),
           with or without the layout rewrite of the constant weight.  Every
           measured trial is appended to WORK/trials.jsonl (wall time since
           the start, task, M, mean run seconds) by a measure callback.  Then
           each shape's best schedule is compiled and exported to
           WORK/kernels/m<M>.so; with the layout rewrite, the weight-packing
           block is split off (as Relax's SplitLayoutRewritePreproc does for
           a model): the exported kernel takes the packed weight, and the
           packing is done once, in numpy, from the block's index map.
  untuned  The workload as a PrimFunc with a symbolic M (T.int64 var),
           compiled with tvm.compile and nothing else: what a TVM user gets
           for a dynamic dim without tuning.  Exported to WORK/untuned.so.
  time     Load exported kernels, check each against numpy float64 on its
           shape, time it with time_evaluator (warm-up call, then REPEATS
           repeats of at least MIN_MS each, the minimum counts).  The shell
           script runs this in several processes and takes the median of the
           minima.
"""
import argparse
import json
import math
import os
import re
import sys
import time

import numpy as np

WORKLOADS = {
    # name: (N, K, epilogue)
    "dense": (768, 768, "none"),
    "ffn_up": (3072, 768, "bias+gelu"),
}


def log(*a):
    print("tvm_ms:", *a, file=sys.stderr, flush=True)


def make_target(mcpu, threads):
    import tvm

    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": int(threads)})


def prim_func(workload, M, layout_free):
    """Y = X·Wᵀ (+ b, then GELU in its erf form), fused in one te.compute."""
    from tvm import te, tirx

    N, K, epi = WORKLOADS[workload]
    X = te.placeholder((M, K), "float32", name="X")
    W = te.placeholder((N, K), "float32", name="W")
    k = te.reduce_axis((0, K), "k")
    args = [X, W]
    if epi == "none":
        Y = te.compute((M, N), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    else:
        B = te.placeholder((N,), "float32", name="B")
        args.append(B)
        D = te.compute((M, N), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="D")

        def gelu(i, j):
            v = D[i, j] + B[j]
            return 0.5 * v * (1.0 + tirx.erf(v * 0.7071067811865476))

        Y = te.compute((M, N), gelu, name="Y")
    f = te.create_prim_func(args + [Y])
    if layout_free:
        f = f.with_attr("layout_free_buffers", [1])
    return f


def inputs(workload, M, seed=1, w_scale=None):
    """x ~ U(-1, 1); w ~ U(-1, 1)·3/√K, so that X·Wᵀ has a standard deviation
    near 1, as a trained layer's pre-activations have.  The scale matters to
    TVM's GELU: its erf is libm's scalar erff, whose time depends on the
    value (MetaSchedule's ffn_up kernel at M = 128 runs at 50 GFLOP/s when
    the pre-activations have a deviation of 9, as with unscaled U(-1, 1)
    weights, 68 at 1 and 85 at 0.6).  dtune's and oneDNN's GELU are
    branch-free vector code; `dtune bench` keeps U(-1, 1) for both, the
    larger values (more exp underflow), so nothing here favours dtune.
    w_scale overrides 3/√K (`time --w-scale 1`: the unscaled weights)."""
    N, K, epi = WORKLOADS[workload]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (M, K)).astype("float32")
    w = (rng.uniform(-1, 1, (N, K)) * (w_scale or 3.0 / math.sqrt(K))).astype("float32")
    b = rng.uniform(-1, 1, (N,)).astype("float32") if epi != "none" else None
    return x, w, b


def reference(workload, x, w, b):
    import scipy.special

    y = x.astype(np.float64) @ w.astype(np.float64).T
    if WORKLOADS[workload][2] != "none":
        y = y + b.astype(np.float64)
        y = 0.5 * y * (1.0 + scipy.special.erf(y / math.sqrt(2.0)))
    return y


def flops(workload, M):
    N, K, _ = WORKLOADS[workload]
    return 2.0 * M * N * K


# ---------------------------------------------------------------- tune


def cmd_tune(a):
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.measure_callback import MeasureCallback, PyMeasureCallback
    from tvm.ir.utils import derived_object

    shapes = [int(s) for s in a.shapes.split()]
    layout = a.layout == "on"
    target = make_target(a.mcpu, a.threads)
    os.makedirs(a.work, exist_ok=True)
    trials_path = os.path.join(a.work, "trials.jsonl")
    trials_file = open(trials_path, "a" if a.export_only else "w")
    names = {f"m{M:04d}": M for M in shapes}
    mod = tvm.IRModule({n: prim_func(a.workload, M, layout) for n, M in names.items()})
    t0 = time.time()

    @derived_object
    class Recorder(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            now = time.time() - t0
            task = task_scheduler.tasks_[task_id].ctx.task_name
            for br, rr in zip(builder_results, runner_results):
                secs = None
                if br.error_msg is None and rr.error_msg is None and rr.run_secs:
                    v = [float(s) for s in rr.run_secs]
                    secs = sum(v) / len(v)
                trials_file.write(json.dumps({"t": now, "task": task, "M": names[task], "secs": secs}) + "\n")
            trials_file.flush()

    callbacks = MeasureCallback.create("default") + [Recorder()]
    if a.export_only:  # re-export from an existing tuning database
        prev = json.load(open(os.path.join(a.work, "tune.json")))
        db = ms.database.JSONDatabase(work_dir=os.path.join(a.work, "ms"))
        return finish(a, db, prev["seconds"], shapes, layout, target, trials_path, prev["num_trials_per_iter"])
    per_iter = min(a.per_iter, a.trials)
    log(f"MetaSchedule {a.workload} M={shapes} {a.trials} trials/shape, layout rewrite {a.layout}, "
        f"seed {a.seed}, target {target}")
    db = ms.tune_tir(
        mod, target, os.path.join(a.work, "ms"),
        max_trials_global=a.trials * len(shapes), max_trials_per_task=a.trials,
        num_trials_per_iter=per_iter, seed=a.seed, num_tuning_cores=a.tuning_cores,
        measure_callbacks=callbacks, task_scheduler="gradient",
        builder=ms.builder.LocalBuilder(max_workers=a.tuning_cores, timeout_sec=a.build_timeout),
    )
    wall = time.time() - t0
    trials_file.close()
    finish(a, db, wall, shapes, layout, target, trials_path, per_iter)


def finish(a, db, wall, shapes, layout, target, trials_path, per_iter):
    import tvm
    from tvm.s_tir import meta_schedule as ms

    with open(trials_path) as f:
        ntrials = sum(1 for _ in f)
    kdir = os.path.join(a.work, "kernels")
    os.makedirs(kdir, exist_ok=True)
    kernels = {}
    for M in shapes:
        sch = ms.tir_integration.compile_tir(db, prim_func(a.workload, M, layout), target)
        if sch is None:
            log(f"no schedule for M={M}")
            continue
        kernels[M] = export_kernel(sch.mod, a.workload, M, target, kdir)
    out = {"workload": a.workload, "shapes": shapes, "trials_per_shape": a.trials,
           "trials_recorded": ntrials, "seconds": wall, "seed": a.seed,
           "layout_rewrite": layout, "num_trials_per_iter": per_iter,
           "task_scheduler": "gradient", "strategy": "evolutionary", "cost_model": "xgb",
           "builder": f"LocalBuilder(max_workers={a.tuning_cores}, timeout_sec={a.build_timeout})",
           "runner": "LocalRunner (defaults: number=3, repeat=1, min_repeat_ms=100)",
           "space": "post-order-apply", "target": str(target), "kernels": kernels,
           "tvm": tvm.__version__}
    json.dump(out, open(os.path.join(a.work, "tune.json"), "w"), indent=1)
    print(json.dumps(out))


def export_kernel(mod, workload, M, target, kdir):
    """Export the compute kernel; with a layout-rewrite block, split the
    weight packing off: the kernel takes the packed weight, and the block's
    index map is saved so that the packing runs once (numpy) before timing."""
    import tvm
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    func = mod["main"]
    packing = find_packing(func)
    if packing is not None:
        mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    lib = tvm.compile(mod, target=target)
    path = os.path.join(kdir, f"m{M}.so")
    lib.export_library(path)
    meta = {"so": path, "M": M, "packing": packing}
    json.dump(meta, open(path + ".json", "w"))
    return meta


def find_packing(func):
    """The layout-rewrite block's write index map, as Python expressions of
    the weight's index variables, or None.  Read from the TVMScript text of
    the scheduled function (the Python statement-visitor API moves between
    TVM releases; the printed form is stable): the block annotated
    meta_schedule.layout_rewrite_preproc reads W[v0, v1] and writes
    NAME[f(v0, v1), ...] into NAME = T.sblock_alloc_buffer((shape)).  The
    packed weight is checked end to end: a wrong map fails verification."""
    text = func.script()
    pos = text.find("meta_schedule.layout_rewrite_preproc")
    if pos < 0:
        return None
    head = text[:pos]
    rd = list(re.finditer(r"T\.reads\(W\[([^\]]*)\]\)", head))[-1]
    wr = list(re.finditer(r"T\.writes\((\w+)\[(.*)\]\)", head))[-1]
    names = [v.strip() for v in rd.group(1).split(",")]
    name, body = wr.group(1), wr.group(2)
    idx, depth, cur = [], 0, ""
    for ch in body:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            idx.append(cur.strip())
            cur = ""
        else:
            cur += ch
    idx.append(cur.strip())
    shp = re.search(re.escape(name) + r" = T\.sblock_alloc_buffer\(\(([0-9, ]+)\)", text)
    shape = [int(v) for v in shp.group(1).split(",") if v.strip()]
    wsh = re.search(r"W: T\.Buffer\(\(([0-9, ]+)\)", text)
    extents = [int(v) for v in wsh.group(1).split(",") if v.strip()]
    return {"vars": names, "extents": extents, "index": idx, "shape": shape}


def pack(packing, w):
    if packing is None:
        return w
    grids = np.meshgrid(*[np.arange(e, dtype=np.int64) for e in packing["extents"]], indexing="ij")
    env = dict(zip(packing["vars"], grids))
    idx = []
    for e in packing["index"]:
        if not re.fullmatch(r"[A-Za-z0-9_ ()+*%/-]+", e):
            raise ValueError(f"unexpected index expression {e!r}")
        v = eval(e, {"__builtins__": {}}, env)  # floordiv/floormod on non-negative ints
        idx.append(np.broadcast_to(np.asarray(v, dtype=np.int64), grids[0].shape))
    out = np.zeros(packing["shape"], dtype=w.dtype)
    out[tuple(idx)] = w
    return out


# ---------------------------------------------------------------- untuned


def cmd_untuned(a):
    import tvm
    from tvm import te, tirx

    N, K, epi = WORKLOADS[a.workload]
    M = tirx.Var("M", "int64")
    X = te.placeholder((M, K), "float32", name="X")
    W = te.placeholder((N, K), "float32", name="W")
    k = te.reduce_axis((0, K), "k")
    args = [X, W]
    D = te.compute((M, N), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="D")
    if epi == "none":
        Y = D
    else:
        B = te.placeholder((N,), "float32", name="B")
        args.append(B)
        Y = te.compute((M, N), lambda i, j: 0.5 * (D[i, j] + B[j]) *
                       (1.0 + tirx.erf((D[i, j] + B[j]) * 0.7071067811865476)), name="Y")
    f = te.create_prim_func(args + [Y])
    target = make_target(a.mcpu, a.threads)
    t0 = time.time()
    lib = tvm.compile(tvm.IRModule({"main": f}), target=target)
    os.makedirs(a.work, exist_ok=True)
    path = os.path.join(a.work, "untuned.so")
    lib.export_library(path)
    json.dump({"so": path, "M": None, "packing": None}, open(path + ".json", "w"))
    print(json.dumps({"so": path, "compile_seconds": time.time() - t0, "target": str(target)}))


# ---------------------------------------------------------------- time


def cmd_time(a):
    import tvm

    dev = tvm.cpu(0)
    results = []
    for spec in a.kernel:
        so, ms_ = spec.split("@")
        meta = json.load(open(so + ".json"))
        lib = tvm.runtime.load_module(so)
        for M in [int(m) for m in ms_.split(",")]:
            x, w, b = inputs(a.workload, M, w_scale=a.w_scale)
            N = WORKLOADS[a.workload][0]
            wp = pack(meta["packing"], w)
            args = [tvm.runtime.tensor(x, dev), tvm.runtime.tensor(wp, dev)]
            if b is not None:
                args.append(tvm.runtime.tensor(b, dev))
            y = tvm.runtime.tensor(np.zeros((M, N), "float32"), dev)
            args.append(y)
            fn = lib["main"]
            fn(*args)
            ref = reference(a.workload, x, w, b)
            err = float(np.max(np.abs(y.numpy() - ref) / (1.0 + np.abs(ref))))
            ok = err < 1e-4
            ev = lib.time_evaluator("main", dev, number=1, repeat=a.repeats, min_repeat_ms=int(a.min_ms))
            t = min(ev(*args).results) if ok else None
            results.append({"so": so, "M": M, "seconds": t, "max_rel_err": err, "verified": ok,
                            "gflops": flops(a.workload, M) / t / 1e9 if t else None})
            log(f"{os.path.basename(so)} M={M}: {'%.1f us' % (t * 1e6) if t else 'WRONG'} (err {err:.1e})")
    print(json.dumps({"workload": a.workload, "threads": os.environ.get("TVM_NUM_THREADS"),
                      "repeats": a.repeats, "min_ms": a.min_ms, "w_scale": a.w_scale,
                      "results": results}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune")
    t.add_argument("--workload", choices=WORKLOADS, required=True)
    t.add_argument("--shapes", required=True)
    t.add_argument("--trials", type=int, required=True, help="trials per shape (task)")
    t.add_argument("--per-iter", type=int, default=64, help="num_trials_per_iter")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--tuning-cores", type=int, default=1, help="builder processes")
    t.add_argument("--build-timeout", type=float, default=120, help="LocalBuilder timeout, s")
    t.add_argument("--mcpu", required=True)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--layout", choices=["on", "off"], default="on")
    t.add_argument("--work", required=True)
    t.add_argument("--export-only", action="store_true", help="re-export kernels of WORK's database")
    u = sub.add_parser("untuned")
    u.add_argument("--workload", choices=WORKLOADS, required=True)
    u.add_argument("--threads", type=int, default=1)
    u.add_argument("--mcpu", required=True)
    u.add_argument("--work", required=True)
    m = sub.add_parser("time")
    m.add_argument("--workload", choices=WORKLOADS, required=True)
    m.add_argument("--kernel", action="append", required=True, help="SO@M1,M2,...")
    m.add_argument("--repeats", type=int, default=5)
    m.add_argument("--min-ms", type=int, default=50)
    m.add_argument("--w-scale", type=float, help="weights U(-1, 1) times this (default 3/sqrt(K))")
    a = p.parse_args()
    {"tune": cmd_tune, "untuned": cmd_untuned, "time": cmd_time}[a.cmd](a)


if __name__ == "__main__":
    main()
