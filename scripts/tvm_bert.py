#!/usr/bin/env python3
"""TVM side of scripts/bench_bert_tvm.sh: a BERT-base encoder layer in Relax,
run three ways (docs/results/tvm-bert-layer.md).  Runs inside the pinned
TVM venv (apache-tvm 0.27.0.post1).

The layer: batch 1, a symbolic sequence length `seq`, float32, hidden 768,
12 heads of 64, FFN 3072, post-LayerNorm (BERT); its weights are constants
of the module (bound with BindParams, as a deployed model's are), dense
weights stored N×K (out×in) and used as Y = X·Wᵀ + b, the form frontends
emit (R.matmul(x, R.permute_dims(w)) + b).  Inputs: x (1, seq, 768) and an
additive mask (1, seq): 0 for a real token, -10000 for a padded one.

Systems:
  a  TVM's default for a dynamic seq: the symbolic module through the CPU
     pipeline of relax.get_default_pipeline(target) (LegalizeOps, FoldConstant,
     FuseOps, FuseTIR, then lowering) with dlight's CPU rules (GEMV,
     Reduction) applied after FuseTIR, as the GPU pipelines apply theirs
     (--default-pipeline says which; `info` prints what each variant does).
  b  MetaSchedule with bucketing: per bucket the layer with seq fixed, tuned
     as relax.pipeline.static_shape_tuning_pipeline does (ours is the same
     sequence with a seed and a trial budget per task); at run time seq is
     zero-padded to the next bucket (mask -10000 on the padding, so the real
     rows are unchanged) and rows [0, seq) are taken.  The padding copy is
     not timed (as in docs/results/tvm-comparison.md's bucketing).
  c  dtune: module (a) with every dense (+ bias, + GELU) and both attention
     batch matmuls rewritten by a dataflow-pattern pass (relax.dpl
     rewrite_call) into R.call_dps_packed("dtune.dense" | "dtune.batch_matmul",
     (R.str(key), ...)), then the same pipeline as (a) for the rest.

Subcommands (each prints one JSON object on stdout, logs on stderr, but
summary, which prints text):
  info     what system (a)'s pipeline variants apply (which fused functions
           dlight schedules), what (c)'s rewrite replaces; --show prints the
           Relax of (a) and (c)
  ref      compile (a), run it on every seq once, check it against numpy
           float64 (GELU via scipy's erf), save the outputs (the reference
           every timed system is checked against)
  tune-ms  system (b) for one bucket: tune, compile, export the executable
  time     one system at one thread count: check every seq against the
           reference (max |y - ref| / (1 + |ref|) < --tol), then time it
           with the VM's time_evaluator (warm call, REPEATS repeats of
           >= MIN_MS, the minimum counts); a wrong seq is never timed and
           makes the command fail after its JSON is written
  summary  OUT of bench_bert_tvm.sh: geometric means over seq of (a)/(c) and
           (b)/(c) per thread count and seed, tuning times (summary.json)

Threads: --threads T sets TVM_NUM_THREADS and OMP_NUM_THREADS before TVM is
imported and the target's num-cores; dtune.open gets T too.  --spin-count
sets TVM_THREAD_POOL_SPIN_COUNT (bench_bert_tvm.sh gives (c) 0: see
set_threads).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

HIDDEN, HEADS, HEAD_DIM, FFN = 768, 12, 64, 3072
LN_EPS = 1e-12
MASK_NEG = -10000.0
# the dense weights, N×K, and their biases, in the order of the layer
DENSES = {"qkv": (3 * HIDDEN, HIDDEN), "attn_out": (HIDDEN, HIDDEN),
          "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}


def log(*a):
    print("tvm_bert:", *a, file=sys.stderr, flush=True)


def set_threads(threads, spin_count=None):
    """Before TVM is imported: its thread pool reads TVM_NUM_THREADS (and
    TVM_THREAD_POOL_SPIN_COUNT) once.  The spin count matters to (c) at 2
    threads: after a parallel TVM op (dlight's softmax, LayerNorm), TVM's
    idle worker spins (300000 iterations by default) on one of the two
    cores while dtune's next kernel wants both; BERT's layer at seq 33 took
    11.2 ms instead of 2.6 ms on a 2-core Xeon.  With 0 the worker sleeps
    at once."""
    os.environ["TVM_NUM_THREADS"] = str(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if spin_count is not None:
        os.environ["TVM_THREAD_POOL_SPIN_COUNT"] = str(spin_count)


def make_target(mcpu, threads):
    import tvm

    if not mcpu:
        from tvm.target import codegen

        mcpu = codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": int(threads)})


# ---------------------------------------------------------------- the layer


def weights(seed):
    """Deterministic weights.  Dense weights U(-1, 1)·√(3/K) (deviation
    1/√K), so that every projection of a unit-variance input has a
    deviation near 1, as a trained layer's pre-activations do; the inputs x
    are N(0, 1), LayerNorm's outputs have unit variance too.  The scale
    matters to TVM alone: its GELU calls libm's scalar erff, whose time
    depends on the value (docs/results/tvm-comparison.md, "Inputs")."""
    rng = np.random.default_rng(seed)
    p = {}
    for name, (n, k) in DENSES.items():
        p[f"{name}_w"] = (rng.uniform(-1, 1, (n, k)) * math.sqrt(3.0 / k)).astype("float32")
        p[f"{name}_b"] = rng.uniform(-0.1, 0.1, (n,)).astype("float32")
    for ln in ("ln1", "ln2"):
        p[f"{ln}_g"] = (1.0 + rng.uniform(-0.1, 0.1, (HIDDEN,))).astype("float32")
        p[f"{ln}_b"] = rng.uniform(-0.1, 0.1, (HIDDEN,)).astype("float32")
    return p


def inputs(seed, seq, rows=None):
    """x (1, rows, 768) and mask (1, rows): the first seq rows are the real
    tokens (a prefix of one N(0, 1) draw per seed, so every seq sees the same
    tokens), the rest zero with mask -10000 (rows > seq: a padded bucket)."""
    rows = rows or seq
    rng = np.random.default_rng(seed + 1000)
    # (the generator fills row by row: a longer draw has the same prefix)
    full = rng.standard_normal((max(rows, 128), HIDDEN)).astype("float32")
    x = np.zeros((1, rows, HIDDEN), "float32")
    x[0, :seq] = full[:seq]
    mask = np.zeros((1, rows), "float32")
    mask[0, seq:] = MASK_NEG
    return x, mask


def build_layer():
    """The layer as a Relax IRModule with a symbolic T.int64 dim "seq"
    (BindSymbolicVars fixes it for a bucket).  Parameters: x, mask
    (num_input = 2), then the weights by name (bind_weights makes them
    constants)."""
    from tvm import relax, tirx
    from tvm.relax import op

    S = tirx.Var("seq", "int64")
    f32 = "float32"

    def tensor(name, shape):
        return relax.Var(name, relax.TensorType(shape, f32))

    x = tensor("x", (1, S, HIDDEN))
    mask = tensor("mask", (1, S))
    w = {}
    for name, (n, k) in DENSES.items():
        w[f"{name}_w"] = tensor(f"{name}_w", (n, k))
        w[f"{name}_b"] = tensor(f"{name}_b", (n,))
    for ln in ("ln1", "ln2"):
        w[f"{ln}_g"] = tensor(f"{ln}_g", (HIDDEN,))
        w[f"{ln}_b"] = tensor(f"{ln}_b", (HIDDEN,))

    bb = relax.BlockBuilder()

    def dense(h, name):
        # Y = X·Wᵀ + b, as frontends emit a linear layer
        return op.add(op.matmul(h, op.permute_dims(w[f"{name}_w"])), w[f"{name}_b"])

    def heads(t):
        # (1, seq, 768) -> (12, seq, 64)
        return bb.emit(op.permute_dims(op.reshape(t, (S, HEADS, HEAD_DIM)), [1, 0, 2]))

    with bb.function("main", [x, mask] + list(w.values()), attrs={"num_input": 2}):
        with bb.dataflow():
            qkv = bb.emit(dense(x, "qkv"))
            parts = bb.emit(op.split(qkv, 3, axis=2))
            q, k, v = (heads(bb.emit(relax.TupleGetItem(parts, i))) for i in range(3))
            scores = bb.emit(op.matmul(q, op.permute_dims(k, [0, 2, 1])))  # NT, (12, seq, seq)
            scores = bb.emit(op.add(op.multiply(scores, relax.const(1.0 / math.sqrt(HEAD_DIM), f32)),
                                    op.reshape(mask, (1, 1, S))))
            probs = bb.emit(op.nn.softmax(scores, axis=-1))
            ctx = bb.emit(op.matmul(probs, v))  # NN, (12, seq, 64)
            ctx = bb.emit(op.reshape(op.permute_dims(ctx, [1, 0, 2]), (1, S, HIDDEN)))
            attn = bb.emit(dense(ctx, "attn_out"))
            ln1 = bb.emit(op.nn.layer_norm(op.add(x, attn), w["ln1_g"], w["ln1_b"], axes=[-1], epsilon=LN_EPS))
            h = bb.emit(op.nn.gelu(dense(ln1, "ffn_up")))
            out = bb.emit(dense(h, "ffn_down"))
            y = bb.emit_output(op.nn.layer_norm(op.add(ln1, out), w["ln2_g"], w["ln2_b"],
                                                axes=[-1], epsilon=LN_EPS))
        bb.emit_func_output(y)
    return bb.get()  # (the builder binds every nested call on its own: one op per binding)


def bind_weights(mod, params):
    """The weights become constants of the module (a deployed model)."""
    import tvm
    from tvm import relax

    consts = {k: tvm.runtime.tensor(v) for k, v in params.items()}
    return relax.transform.BindParams("main", consts)(mod)


def reference(x, mask, p):
    """The layer in numpy float64."""
    import scipy.special

    def ln(t, g, b):
        mu = t.mean(-1, keepdims=True)
        var = ((t - mu) ** 2).mean(-1, keepdims=True)
        return (t - mu) / np.sqrt(var + LN_EPS) * g + b

    d = {k: v.astype(np.float64) for k, v in p.items()}
    x = x[0].astype(np.float64)
    seq = x.shape[0]
    qkv = x @ d["qkv_w"].T + d["qkv_b"]
    q, k, v = (qkv[:, i * HIDDEN:(i + 1) * HIDDEN].reshape(seq, HEADS, HEAD_DIM).transpose(1, 0, 2)
               for i in range(3))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD_DIM) + mask.astype(np.float64)[0][None, None, :]
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    ctx = (s @ v).transpose(1, 0, 2).reshape(seq, HIDDEN)
    ln1 = ln(x + ctx @ d["attn_out_w"].T + d["attn_out_b"], d["ln1_g"], d["ln1_b"])
    h = ln1 @ d["ffn_up_w"].T + d["ffn_up_b"]
    h = 0.5 * h * (1.0 + scipy.special.erf(h / math.sqrt(2.0)))
    out = ln(ln1 + h @ d["ffn_down_w"].T + d["ffn_down_b"], d["ln2_g"], d["ln2_b"])
    return out[None]


def rel_err(y, ref):
    return float(np.max(np.abs(y.astype(np.float64) - ref) / (1.0 + np.abs(ref))))


# ---------------------------------------------------------------- system (a)

# --default-pipeline variants
PIPELINES = {
    "cpu+dlight": "relax.get_default_pipeline(llvm)'s passes (backend.cpu_generic: DispatchSampling, "
                  "DispatchSortScan; LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR; "
                  "then RewriteDataflowReshape ... VMShapeLower, AttachGlobalSymbol) with "
                  "dlight.ApplyDefaultSchedule(dlight.cpu.GEMV(), dlight.cpu.Reduction()) after FuseTIR",
    "cpu": "relax.get_default_pipeline(llvm) as it is (backend.cpu_generic): no schedule at all",
    "build": "tvm.compile(mod, target)'s own default for CPU, relax.pipeline.default_build_pipeline: "
             "LegalizeOps without fusion (and without FoldConstant: the weight transposes run per call)",
}


def default_pipeline(target, variant):
    """System (a)'s Relax pipeline.  In 0.27, tvm.compile / relax.build with
    relax_pipeline="default" use relax.pipeline.default_build_pipeline on
    CPU (no fusion; the target's pipeline only for GPUs), while
    relax.get_default_pipeline(llvm) is backend.cpu_generic's (fusion, no
    schedule).  dlight has CPU rules (dlight.cpu: GEMV, Reduction) that no
    CPU pipeline applies; "cpu+dlight" applies them where the GPU pipelines
    apply theirs (after FuseTIR), so a dynamic model gets every schedule
    0.27 has for it without tuning."""
    import tvm
    from tvm import relax

    if variant == "build":
        return relax.pipeline.default_build_pipeline()
    if variant == "cpu":
        return relax.get_default_pipeline(target)
    # the module, not the package: 0.27's backend.cpu_generic does not export
    # dataflow_lower_passes (so relax.pipeline.dataflow_lower_passes(llvm)
    # raises AttributeError)
    from tvm.relax.backend.cpu_generic import pipeline as P
    from tvm.s_tir import dlight as dl

    # the pieces get_default_pipeline(llvm) assembles, dlight inserted
    passes = (P.library_dispatch_passes(target) + P.legalize_passes(target)
              + [dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Reduction())]
              + P.dataflow_lower_passes(target) + P.finalize_passes(target))

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod, _ctx):
        with target:
            return tvm.transform.Sequential(passes)(mod)

    return _pipeline


def dlight_report(mod, target):
    """Which fused PrimFuncs dlight's CPU rules schedule (by name)."""
    import tvm
    from tvm.relax.backend.cpu_generic import pipeline as P
    from tvm.s_tir import dlight as dl

    with target:
        fused = tvm.transform.Sequential(P.library_dispatch_passes(target) + P.legalize_passes(target))(mod)
        done = dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Reduction())(fused)
    out = {}
    for gv, f in done.functions_items():
        if isinstance(f, tvm.tirx.PrimFunc):
            out[gv.name_hint] = bool(f.attrs and f.attrs.get("tirx.is_scheduled", False))
    return out


def compile_a(mod, target, variant):
    from tvm import relax

    return relax.build(mod, target=target, relax_pipeline=default_pipeline(target, variant))


# ---------------------------------------------------------------- system (c)


def dtune_rewrite(mod, max_seq):
    """Every dense (+ bias, + GELU) and both attention batch matmuls of
    `main` into R.call_dps_packed to dtune's TVM FFI functions, by relax.dpl
    patterns (rewrite_call looks through the dataflow bindings; the bindings
    the matched chain leaves unused are removed).  The key names the
    workload as models/bert-base.json's tune stores it: dims that are seq
    become a variable (`M=seq;seq=1..MAX`), a dense's M (the product of X's
    leading dims) a range 1..MAX.  Returns (module, {key: count})."""
    from tvm import relax, tirx
    from tvm.ir import StringImm
    from tvm.relax.dpl import is_op, rewrite_call, wildcard

    counts = {}

    def shape_of(e):
        return list(e.ty.shape.values)

    def dim(d):
        if isinstance(d, tirx.IntImm):
            return str(int(d))
        if isinstance(d, tirx.Var):
            return d.name
        return None  # an expression: not a key dim this pass writes

    def call(fn, key, args, orig):
        counts[key] = counts.get(key, 0) + 1
        return relax.call_dps_packed(fn, [StringImm(key)] + args, out_ty=orig.ty)

    X, W, B = wildcard(), wildcard(), wildcard()
    perm_w = is_op("relax.permute_dims")(W)
    linear = is_op("relax.add")(is_op("relax.matmul")(X, perm_w), B)
    linear_gelu = is_op("relax.nn.gelu")(linear)

    def dense_rewriter(epilogue):
        def rewrite(orig, m):
            w, b = m[W], m[B]
            wsh, bsh = shape_of(w), shape_of(b)
            axes = m[perm_w].attrs.axes
            if (len(wsh) != 2 or len(bsh) != 1 or int(bsh[0]) != int(wsh[0])
                    or (axes is not None and [int(a) for a in axes] != [1, 0])):
                return orig
            n, k = int(wsh[0]), int(wsh[1])
            key = f"dense(M=1..{max_seq},N={n},K={k},epilogue={epilogue})"
            return call("dtune.dense", key, [m[X], w, b], orig)
        return rewrite

    def is_transpose_nt(e):
        return (isinstance(e, relax.Call) and getattr(e.op, "name", "") == "relax.permute_dims"
                and e.attrs.axes is not None and [int(v) for v in e.attrs.axes] == [0, 2, 1])

    A, Bm = wildcard(), wildcard()
    perm_b = is_op("relax.permute_dims")(Bm)
    bmm_nt = is_op("relax.matmul")(A, perm_b)
    bmm_nn = is_op("relax.matmul")(A, Bm)

    def bmm_rewriter(layout):
        def rewrite(orig, m):
            a, b = m[A], m[Bm]
            ash, bsh = shape_of(a), shape_of(b)
            if len(ash) != 3 or len(bsh) != 3 or dim(ash[0]) != dim(bsh[0]):
                return orig
            if layout == "NT":
                axes = m[perm_b].attrs.axes
                if axes is None or [int(v) for v in axes] != [0, 2, 1]:
                    return orig
                n = bsh[1]
            else:
                # (the wildcard sees through bindings: b may be any call,
                # but not the transpose the NT pattern takes)
                if is_transpose_nt(b) or dim(ash[2]) != dim(bsh[1]):
                    return orig
                n = bsh[2]
            dims = {"B": dim(ash[0]), "M": dim(ash[1]), "N": dim(n), "K": dim(ash[2])}
            if None in dims.values() or not dims["B"].isdigit():
                return orig
            var = sorted({v for v in dims.values() if not v.isdigit()})
            key = (f"batch_matmul(B={dims['B']},M={dims['M']},N={dims['N']},K={dims['K']},layout={layout}"
                   + "".join(f";{v}=1..{max_seq}" for v in var) + ")")
            return call("dtune.batch_matmul", key, [a, b], orig)
        return rewrite

    f = mod["main"]
    # GELU first (it contains the plain linear), NT before NN (NN's
    # wildcard B would also match a permute_dims)
    f = rewrite_call(linear_gelu, dense_rewriter("bias+gelu"), f)
    f = rewrite_call(linear, dense_rewriter("bias"), f)
    f = rewrite_call(bmm_nt, bmm_rewriter("NT"), f)
    f = rewrite_call(bmm_nn, bmm_rewriter("NN"), f)
    mod = mod.clone()
    mod["main"] = f
    return mod, counts


def register_standin():
    """numpy stand-ins for dtune.open/dense/batch_matmul/stats (--standin):
    proves the Relax side (the rewrite, the string key through the VM, the
    DPS calling convention) without libdtune_tvm.so."""
    import scipy.special
    import tvm_ffi

    calls = {"calls": 0}

    def dense(key, x, w, *rest):
        b, y = (rest[0], rest[1]) if len(rest) == 2 else (None, rest[0])
        xa = x.numpy()
        r = xa.reshape(-1, xa.shape[-1]) @ w.numpy().T
        if "bias" in key:
            r = r + b.numpy()
        if "gelu" in key:
            r = 0.5 * r * (1.0 + scipy.special.erf(r / math.sqrt(2.0)))
        y.copyfrom(r.reshape(y.shape).astype("float32"))
        calls["calls"] += 1

    def batch_matmul(key, a, b, c):
        bb = b.numpy()
        if "layout=NT" in key:
            bb = bb.transpose(0, 2, 1)
        c.copyfrom((a.numpy() @ bb).astype("float32"))
        calls["calls"] += 1

    tvm_ffi.register_global_func("dtune.open", lambda db, threads: None, override=True)
    tvm_ffi.register_global_func("dtune.dense", dense, override=True)
    tvm_ffi.register_global_func("dtune.batch_matmul", batch_matmul, override=True)
    tvm_ffi.register_global_func("dtune.stats", lambda: json.dumps({"standin": True, **calls}), override=True)


def load_client(path):
    """Load libdtune_tvm.so: it registers the dtune.* global functions."""
    import tvm  # noqa: F401  (TVM FFI first: the client shares its libtvm_ffi)
    import tvm_ffi

    if not os.path.exists(path):
        raise SystemExit(f"tvm_bert: {path} not found (build the TVM client, docs/tvm.md, or pass --standin)")
    return tvm_ffi.load_module(path)


def compile_c(mod, target, variant, max_seq):
    from tvm import relax

    mod, counts = dtune_rewrite(mod, max_seq)
    return relax.build(mod, target=target, relax_pipeline=default_pipeline(target, variant)), counts


# ---------------------------------------------------------------- system (b)


def ms_prepare(mod, target, layout):
    """relax.pipeline.static_shape_tuning_pipeline's steps before tuning:
    DecomposeOpsForInference, CanonicalizeBindings, the zero pipeline's
    LegalizeOps / AnnotateTIROpPattern / FoldConstant / FuseOps / FuseTIR,
    and with the layout rewrite AttachAttrLayoutFreeBuffers (the constant
    weights may be packed by MetaSchedule's RewriteLayout)."""
    import tvm
    from tvm import relax

    T = relax.transform
    passes = [T.DecomposeOpsForInference(), T.CanonicalizeBindings(), T.LegalizeOps(),
              T.AnnotateTIROpPattern(), T.FoldConstant(), T.FuseOps(), T.FuseTIR()]
    if layout:
        passes.append(T.AttachAttrLayoutFreeBuffers())
    with target:
        return tvm.transform.Sequential(passes)(mod)


def ms_finish(mod, target, db, layout):
    """static_shape_tuning_pipeline's steps after tuning, then the build:
    MetaScheduleApplyDatabase, and with the layout rewrite
    SplitLayoutRewritePreproc + LiftTransformParams + FoldConstant (the
    weights are constants, so the packing is folded at compile time)."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms  # noqa: F401

    T = relax.transform
    with target, db, tvm.transform.PassContext(opt_level=3):
        passes = [T.MetaScheduleApplyDatabase(enable_warning=True)]
        if layout:
            passes += [T.SplitLayoutRewritePreproc(), T.LiftTransformParams(), T.FoldConstant()]
        mod = tvm.transform.Sequential(passes)(mod)
        return relax.build(mod, target=target)


def cmd_tune_ms(a):
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    target = make_target(a.mcpu, a.threads)
    os.makedirs(a.work, exist_ok=True)
    mod = build_layer()
    mod = relax.transform.BindSymbolicVars({"seq": a.bucket})(mod)
    mod = bind_weights(mod, weights(a.seed_weights))
    layout = a.layout == "on"
    prepared = ms_prepare(mod, target, layout)
    tasks = ms.relax_integration.extract_tasks(prepared, target)
    names = [t.task_name for t in tasks]
    log(f"bucket {a.bucket}: {len(tasks)} tasks ({', '.join(names)}), {a.trials} trials each, "
        f"seed {a.seed}, layout rewrite {a.layout}, target {target}")
    per_iter = min(a.per_iter, a.trials)
    if a.export_only:  # compile again from the tuning database of an earlier run
        wall = json.load(open(os.path.join(a.work, "tune.json")))["seconds"]
        db = ms.database.JSONDatabase(work_dir=os.path.join(a.work, "ms"))
    else:
        t0 = time.time()
        db = ms.relax_integration.tune_relax(
            prepared, {}, target, os.path.join(a.work, "ms"),
            max_trials_global=a.trials * len(tasks), max_trials_per_task=a.trials,
            num_trials_per_iter=per_iter, seed=a.seed, task_scheduler="gradient",
            builder=ms.builder.LocalBuilder(max_workers=a.tuning_cores, timeout_sec=a.build_timeout))
        wall = time.time() - t0
        # the tuning time is kept at once (--export-only reads it)
        json.dump({"bucket": a.bucket, "seconds": wall}, open(os.path.join(a.work, "tune.json"), "w"))
    ntrials = len(db.get_all_tuning_records())
    t1 = time.time()
    ex = ms_finish(prepared, target, db, layout)
    so = os.path.join(a.work, f"layer-seq{a.bucket}.so")
    ex.export_library(so)
    out = {"bucket": a.bucket, "tasks": names, "trials_per_task": a.trials,
           "trials_recorded": ntrials, "seconds": wall, "compile_seconds": time.time() - t1,
           "seed": a.seed, "layout_rewrite": layout, "num_trials_per_iter": per_iter,
           "task_scheduler": "gradient", "strategy": "evolutionary", "cost_model": "xgb",
           "builder": f"LocalBuilder(max_workers={a.tuning_cores}, timeout_sec={a.build_timeout})",
           "runner": "LocalRunner (defaults: number=3, repeat=1, min_repeat_ms=100)",
           "space": "post-order-apply", "target": str(target), "so": so, "tvm": tvm.__version__}
    json.dump(out, open(os.path.join(a.work, "tune.json"), "w"), indent=1)
    log(f"bucket {a.bucket}: tuned in {wall:.1f} s ({ntrials} records), compiled in {out['compile_seconds']:.1f} s")
    print(json.dumps(out))


# ---------------------------------------------------------------- ref / time / info


def parse_seqs(text):
    """"1..16 20 24" -> [1, ..., 16, 20, 24]; "1..128/4" steps by 4."""
    out = []
    for tok in text.replace(",", " ").split():
        if ".." in tok:
            rng, _, step = tok.partition("/")
            lo, hi = (int(v) for v in rng.split(".."))
            out += range(lo, hi + 1, int(step or 1))
        else:
            out.append(int(tok))
    return sorted(set(out))


def vm_of(ex, dev):
    from tvm import relax

    return relax.VirtualMachine(ex, dev)


def cmd_ref(a):
    import tvm

    target = make_target(a.mcpu, a.threads)
    p = weights(a.seed_weights)
    t0 = time.time()
    ex = compile_a(bind_weights(build_layer(), p), target, a.default_pipeline)
    log(f"(a) compiled in {time.time() - t0:.1f} s")
    vm = vm_of(ex, tvm.cpu(0))
    outs, errs = {}, {}
    for s in parse_seqs(a.seqs):
        x, mask = inputs(a.seed_weights, s)
        y = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(mask)).numpy()
        errs[s] = rel_err(y, reference(x, mask, p))
        outs[f"s{s}"] = y
        if errs[s] >= a.tol:
            log(f"(a) seq {s}: WRONG against numpy float64 (err {errs[s]:.1e})")
    np.savez(a.out, **outs)
    bad = [s for s, e in errs.items() if e >= a.tol]
    print(json.dumps({"ref": a.out, "seqs": sorted(errs), "max_rel_err_vs_numpy": max(errs.values()),
                      "tol": a.tol, "wrong": bad, "default_pipeline": a.default_pipeline}))
    if bad:
        sys.exit(1)


def cmd_time(a):
    import tvm

    target = make_target(a.mcpu, a.threads)
    dev = tvm.cpu(0)
    seqs = parse_seqs(a.seqs)
    ref = np.load(a.ref)
    p = weights(a.seed_weights)
    info = {"system": a.system, "threads": a.threads, "target": str(target),
            "tvm_thread_pool_spin_count": os.environ.get("TVM_THREAD_POOL_SPIN_COUNT"),
            "repeats": a.repeats, "min_ms": a.min_ms, "tol": a.tol, "tvm": tvm.__version__}
    t0 = time.time()
    vms = {}  # bucket (None: any seq) -> VM
    if a.system == "a":
        vms[None] = vm_of(compile_a(bind_weights(build_layer(), p), target, a.default_pipeline), dev)
        info["pipeline"] = a.default_pipeline
    elif a.system == "b":
        for d in sorted(os.listdir(a.ms_dir)):
            tj = os.path.join(a.ms_dir, d, "tune.json")
            if os.path.isfile(tj):
                t = json.load(open(tj))
                if "so" not in t:  # an interrupted tune-ms
                    continue
                # beside its tune.json, wherever OUT has moved
                so = os.path.join(a.ms_dir, d, os.path.basename(t["so"]))
                vms[t["bucket"]] = vm_of(tvm.runtime.load_module(so), dev)
        if not vms:
            raise SystemExit(f"tvm_bert: no tuned bucket in {a.ms_dir}")
        info["buckets"] = sorted(vms)
    else:
        if a.standin:
            register_standin()
        else:
            load_client(a.client)
        tvm.get_global_func("dtune.open")(a.db or "", int(a.threads))
        ex, counts = compile_c(bind_weights(build_layer(), p), target, a.default_pipeline, a.max_seq)
        vms[None] = vm_of(ex, dev)
        info.update({"pipeline": a.default_pipeline, "rewritten": counts, "db": a.db,
                     "client": "numpy stand-in" if a.standin else a.client})
    info["compile_seconds"] = time.time() - t0
    results, wrong = [], []
    for s in seqs:
        bucket = None
        if a.system == "b":
            bucket = next((b for b in sorted(vms) if b >= s), None)
            if bucket is None:
                log(f"seq {s}: no bucket >= {s}; not timed")
                results.append({"seq": s, "seconds": None, "error": "no bucket"})
                wrong.append(s)
                continue
        x, mask = inputs(a.seed_weights, s, bucket)
        args = [tvm.runtime.tensor(x), tvm.runtime.tensor(mask)]
        vm = vms[bucket]
        y = vm["main"](*args).numpy()[:, :s]
        err = rel_err(y, ref[f"s{s}"].astype(np.float64))
        r = {"seq": s, "bucket": bucket, "max_rel_err": err, "verified": err < a.tol, "seconds": None}
        if r["verified"]:
            # time_evaluator of the VM's "main" wants the inputs set first
            vm.set_input("main", *args)
            ev = vm.time_evaluator("invoke_stateful", dev, number=1, repeat=a.repeats, min_repeat_ms=a.min_ms)
            r["seconds"] = min(ev("main").results)
            log(f"({a.system}) T={a.threads} seq {s}{'' if bucket is None else f' (bucket {bucket})'}: "
                f"{r['seconds'] * 1e3:.3f} ms (err {err:.1e})")
        else:
            wrong.append(s)
            log(f"({a.system}) T={a.threads} seq {s}: WRONG (err {err:.1e} >= {a.tol}); not timed")
        results.append(r)
    if a.system == "c":
        info["dtune_stats"] = json.loads(str(tvm.get_global_func("dtune.stats")()))
    info.update({"results": results, "wrong": wrong})
    text = json.dumps(info)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)
    if wrong:
        sys.exit(1)


def cmd_info(a):
    target = make_target(a.mcpu, a.threads)
    p = weights(a.seed_weights)
    mod = bind_weights(build_layer(), p)
    rewritten, counts = dtune_rewrite(mod, a.max_seq)
    if a.show:  # without the bound weights: the Relax of (a), then of (c)
        plain = build_layer()
        plain.show()
        dtune_rewrite(plain, a.max_seq)[0].show()
    out = {"target": str(target), "pipelines": PIPELINES,
           "dlight_cpu_rules_scheduled": dlight_report(mod, target),
           "dtune_rewrite": counts}
    print(json.dumps(out, indent=1))


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def median(v):
    v = sorted(v)
    n = len(v)
    return None if not n else (v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2]))


def load_times(out):
    """{(system, threads, seed or None): {seq: median over processes of the
    per-process minimum, s}} from OUT/time/<sys>-t<T>[-s<S>]-p<P>.json."""
    import glob
    import re

    per = {}
    for f in glob.glob(os.path.join(out, "time", "*-p*.json")):
        m = re.fullmatch(r"([abc])-t(\d+)(?:-s(\d+))?-p\d+\.json", os.path.basename(f))
        if not m:
            continue
        key = (m.group(1), int(m.group(2)), int(m.group(3)) if m.group(3) else None)
        for r in json.load(open(f))["results"]:
            if r.get("seconds"):
                per.setdefault(key, {}).setdefault(r["seq"], []).append(r["seconds"])
    return {k: {q: median(v) for q, v in d.items()} for k, d in per.items()}


def tuning_times(out, threads, seed):
    """(b): the buckets' MetaSchedule wall times and records; (c): dtune
    tune's wall time (the shell's clock around the command)."""
    import glob

    b = {}
    for f in sorted(glob.glob(os.path.join(out, f"ms-t{threads}-s{seed}", "b*", "tune.json"))):
        t = json.load(open(f))
        if "tasks" not in t:  # an interrupted run
            continue
        b[t["bucket"]] = {"seconds": t["seconds"], "trials": t["trials_recorded"], "tasks": len(t["tasks"])}
    c = None
    w = os.path.join(out, f"dtune-t{threads}-s{seed}", "wall.json")
    if os.path.exists(w):
        c = json.load(open(w))
        try:
            tj = json.load(open(os.path.join(out, f"dtune-t{threads}-s{seed}", "tune.json")))
            c["trials"] = tj.get("trials_total")
        except (OSError, ValueError):
            pass
    return b, c


def cmd_summary(a):
    """Geometric means over seq of (a)/(c) and (b)/(c) per thread count and
    seed, on the seqs every system has a time for; tuning times."""
    out = a.dir
    cfg = json.load(open(os.path.join(out, "config.json")))
    times = load_times(out)
    lines = [f"BERT-base encoder layer in TVM Relax (symbolic seq): -mcpu={cfg['mcpu']}, seqs {cfg['seqs']}, "
             f"buckets {cfg['buckets']}, MetaSchedule {cfg['trials']} trials/task (layout rewrite "
             f"{cfg['layout']}), dtune tune --time {cfg['dtune_time']}"
             + (f" (db {cfg['dtune_db']})" if cfg.get("dtune_db") else "")
             + f", (a) pipeline {cfg['default_pipeline']}" + (", (c) NUMPY STAND-IN" if cfg.get("standin") else "")]
    rows = []
    for t in sorted({k[1] for k in times}):
        for seed in sorted({k[2] for k in times if k[1] == t and k[2] is not None}) or [None]:
            la, lb, lc = times.get(("a", t, None), {}), times.get(("b", t, seed), {}), times.get(("c", t, seed), {})
            row = {"threads": t, "seed": seed}
            for name, other in (("a", la), ("b", lb)):
                common = sorted(set(other) & set(lc))
                row[f"{name}_over_c"] = geomean([other[q] / lc[q] for q in common])
                row[f"{name}_over_c_seqs"] = len(common)
            for name, d in (("a", la), ("b", lb), ("c", lc)):
                row[f"{name}_geomean_ms"] = geomean([v * 1e3 for v in d.values()])
                row[f"{name}_seqs"] = len(d)
            tb, tc = tuning_times(out, t, seed) if seed is not None else ({}, None)
            row["b_tuning"] = tb
            row["b_tuning_seconds"] = sum(v["seconds"] for v in tb.values()) if tb else None
            row["b_trials"] = sum(v["trials"] for v in tb.values()) if tb else None
            row["c_tuning_seconds"] = tc["seconds"] if tc else None
            row["c_trials"] = tc.get("trials") if tc else None
            row["tuning_b_over_c"] = (row["b_tuning_seconds"] / row["c_tuning_seconds"]
                                      if row["b_tuning_seconds"] and row["c_tuning_seconds"] else None)
            rows.append(row)

            def f(v, fmt):
                return "-" if v is None else format(v, fmt)

            lines.append(f"threads {t}, seed {seed}:")
            lines.append(f"  latency, geometric mean over seq: (a) {f(row['a_geomean_ms'], '.3f')} ms "
                         f"[{row['a_seqs']} seqs], (b) {f(row['b_geomean_ms'], '.3f')} ms [{row['b_seqs']}], "
                         f"(c) {f(row['c_geomean_ms'], '.3f')} ms [{row['c_seqs']}]")
            lines.append(f"  (a)/(c) {f(row['a_over_c'], '.2f')}x over {row['a_over_c_seqs']} seqs (goal >= 2); "
                         f"(b)/(c) {f(row['b_over_c'], '.2f')}x over {row['b_over_c_seqs']} seqs (goal >= 1.2)")
            per_b = ", ".join(f"{k}: {v['seconds']:.0f} s" for k, v in sorted(tb.items()))
            lines.append(f"  tuning: (b) {f(row['b_tuning_seconds'], '.1f')} s, {f(row['b_trials'], 'd')} trials "
                         f"({per_b or 'no bucket'}); (c) {f(row['c_tuning_seconds'], '.1f')} s, "
                         f"{f(row['c_trials'], 'd')} trials; (b)/(c) {f(row['tuning_b_over_c'], '.1f')} (goal >= 50)")
    summary = {"config": cfg, "rows": rows,
               "goals": {"a_over_c": 2.0, "b_over_c": 1.2, "tuning_b_over_c": 50.0}}
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
    print("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(s):
        s.add_argument("--threads", type=int, default=1)
        s.add_argument("--mcpu", help="LLVM -mcpu (default: LLVM's host detection)")
        s.add_argument("--seed-weights", type=int, default=1, help="seed of the weights and inputs")
        s.add_argument("--default-pipeline", choices=PIPELINES, default="cpu+dlight",
                       help="system (a)'s pipeline, also (c)'s for what dtune does not run")
        s.add_argument("--max-seq", type=int, default=128, help="seq range of dtune's keys, 1..MAX")
        s.add_argument("--spin-count", type=int,
                       help="TVM_THREAD_POOL_SPIN_COUNT (default: TVM's own, 300000); see set_threads")

    i = sub.add_parser("info", help="what the pipelines apply; --show prints the Relax of (a) and (c)")
    common(i)
    i.add_argument("--show", action="store_true")
    r = sub.add_parser("ref", help="(a)'s outputs, checked against numpy float64, into an .npz")
    common(r)
    r.add_argument("--seqs", default="1..128")
    r.add_argument("--tol", type=float, default=1e-3)
    r.add_argument("--out", required=True, help="the .npz to write")
    t = sub.add_parser("tune-ms", help="system (b): one bucket")
    common(t)
    t.add_argument("--bucket", type=int, required=True)
    t.add_argument("--trials", type=int, required=True, help="trials per task")
    t.add_argument("--seed", type=int, default=1, help="MetaSchedule's seed")
    t.add_argument("--per-iter", type=int, default=64, help="num_trials_per_iter (at most --trials)")
    t.add_argument("--tuning-cores", type=int, default=os.cpu_count(), help="builder processes")
    t.add_argument("--build-timeout", type=float, default=120, help="LocalBuilder timeout, s")
    t.add_argument("--layout", choices=["on", "off"], default="on", help="MetaSchedule's weight layout rewrite")
    t.add_argument("--work", required=True)
    t.add_argument("--export-only", action="store_true", help="compile from WORK's tuning database")
    m = sub.add_parser("time", help="check and time one system")
    common(m)
    m.add_argument("--system", choices=["a", "b", "c"], required=True)
    m.add_argument("--seqs", default="1..128")
    m.add_argument("--ref", required=True, help="the .npz of `ref`")
    m.add_argument("--tol", type=float, default=1e-3)
    m.add_argument("--repeats", type=int, default=5)
    m.add_argument("--min-ms", type=int, default=50)
    m.add_argument("--ms-dir", help="(b) the directory of tune-ms's bucket directories")
    m.add_argument("--client", default="build/libdtune_tvm.so", help="(c) the TVM client library")
    m.add_argument("--db", help="(c) the dtune database")
    m.add_argument("--standin", action="store_true", help="(c) numpy stand-ins instead of the client")
    m.add_argument("--out", help="also write the JSON here")
    y = sub.add_parser("summary", help="ratios and tuning times of a bench_bert_tvm.sh OUT (summary.json)")
    y.add_argument("dir")
    a = p.parse_args()
    if a.cmd == "summary":
        return cmd_summary(a)
    set_threads(a.threads, a.spin_count)
    {"info": cmd_info, "ref": cmd_ref, "tune-ms": cmd_tune_ms, "time": cmd_time}[a.cmd](a)


if __name__ == "__main__":
    main()
