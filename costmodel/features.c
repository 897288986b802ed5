/* Micro-kernel features; see features.h and docs/cost-model.md. */
#include "costmodel/features.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/unit.h"
#include "ops/op.h"

static const char *const names[DT_CMF_OP_FIRST] = {
    "mr",          "nr",          "nr_vec",         "acc",           "reg_pressure",
    "kc",          "mc",          "nc",             "unroll",        "prefetch",
    "b_panel_l1",  "a_block_l2",  "b_block_l2",     "b_block_l3",    "ai_reg",
    "vec_floats",  "sketch_blocked", "sketch_stream", "par_n",       "par_m",
    "par_mn",      "order",       "store",          "threads",       "threads_frac",
    "unit_amx",    "sketch_channel",
};

/* "op_<name>" of the registry's ops, made once */
static char op_names[DT_CM_OPS][40];
static pthread_once_t op_names_once = PTHREAD_ONCE_INIT;

static void make_op_names(void)
{
    for (int i = 0; i < DT_CM_OPS; i++) {
        const dt_op_desc *op = dt_op_at(i);
        snprintf(op_names[i], sizeof op_names[i], "op_%s", op ? op->name : "?");
    }
}

const char *dt_cm_feature_name(int i)
{
    if (i >= DT_CMF_OP_FIRST && i < DT_NFEATURES) {
        pthread_once(&op_names_once, make_op_names);
        return op_names[i - DT_CMF_OP_FIRST];
    }
    return i >= 0 && i < DT_CMF_OP_FIRST ? names[i] : "?";
}

/* bytes / cache size, 0 for an absent level */
static float ratio(double bytes, uint64_t size)
{
    return size ? (float)(bytes / (double)size) : 0.0f;
}

int dt_features(const dt_annotation *a, const dt_target *t, const char *op_name, float *out,
                int n)
{
    if (!a || !t || !op_name || !out || n < DT_NFEATURES || a->mr <= 0 || a->nr <= 0 ||
        (unsigned)a->unit >= DT_UNIT_COUNT)
        return DT_EINVAL;
    const dt_op_desc *op = dt_op_find(op_name);
    int column = op ? dt_op_index(op) : -1;
    if (column < 0 || column >= DT_CM_OPS)
        return DT_EINVAL;
    int vl = dt_isa_vec_floats(a->isa);
    int regs = dt_isa_vec_regs(a->isa, t->arch);
    if (vl <= 0 || regs <= 0)
        return DT_EINVAL;
    double mr = a->mr, nr = a->nr, kc = a->kc > 0 ? a->kc : 0, mc = a->mc > 0 ? a->mc : 0;
    double nc = a->nc > 0 ? a->nc : 0;
    double nrv = nr / vl, acc = mr * nr / vl;

    memset(out, 0, sizeof(float) * DT_NFEATURES);
    out[DT_CMF_MR] = (float)mr;
    out[DT_CMF_NR] = (float)nr;
    out[DT_CMF_NR_VEC] = (float)nrv;
    out[DT_CMF_ACC] = (float)acc;
    const dt_unit_hooks *unit = dt_unit_hooks_of(a->unit);
    if (unit->tile) { /* the unit's own registers (AMX: tiles of 8) */
        out[DT_CMF_REG_PRESSURE] = (float)unit->reg_pressure(a);
    } else {
        out[DT_CMF_REG_PRESSURE] = (float)((acc + nrv + 1) / regs);
    }
    out[DT_CMF_KC] = (float)kc;
    out[DT_CMF_MC] = (float)mc;
    out[DT_CMF_NC] = (float)nc;
    out[DT_CMF_UNROLL] = (float)a->unroll;
    out[DT_CMF_PREFETCH] = (float)a->prefetch;
    out[DT_CMF_B_PANEL_L1] = ratio(kc * nr * 4, t->l1d.size);
    out[DT_CMF_A_BLOCK_L2] = ratio(mc * kc * 4, t->l2.size);
    out[DT_CMF_B_BLOCK_L2] = ratio(kc * nc * 4, t->l2.size);
    out[DT_CMF_B_BLOCK_L3] = ratio(kc * nc * 4, t->l3.size);
    out[DT_CMF_AI_REG] = (float)(2 * mr * nr / (4 * (mr + nr)));
    out[DT_CMF_VEC_FLOATS] = (float)vl;
    out[DT_CMF_SKETCH_BLOCKED] = a->sketch == DT_SKETCH_BLOCKED;
    out[DT_CMF_SKETCH_STREAM] = a->sketch == DT_SKETCH_STREAM;
    out[DT_CMF_PAR_N] = a->par == DT_PAR_N;
    out[DT_CMF_PAR_M] = a->par == DT_PAR_M;
    out[DT_CMF_PAR_MN] = a->par == DT_PAR_MN;
    out[DT_CMF_ORDER] = (float)a->order;
    out[DT_CMF_STORE] = (float)a->store;
    out[DT_CMF_THREADS] = (float)a->threads;
    out[DT_CMF_THREADS_FRAC] = t->cores > 0 ? (float)a->threads / (float)t->cores : 0.0f;
    out[DT_CMF_UNIT_AMX] = unit->tile;
    out[DT_CMF_SKETCH_CHANNEL] = a->sketch == DT_SKETCH_CHANNEL;
    out[DT_CMF_OP_FIRST + column] = 1.0f;
    return DT_NFEATURES;
}
