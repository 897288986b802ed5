/* The dtype table (dtypes/dtype.h): every row consistent with the others
 * and with the functions implemented from it, and the numerics the shared
 * layers read from it — tolerances, time ceilings, cost-model names,
 * operands — as they were before the rows carried them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtypes/dtype.h"
#include "measure/trial.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"
#include "tests/dt_test.h"
#include "tuner/predictor.h"

static const dt_dtype_row *row(int d) { return dt_dtype_info((dt_dtype)d); }

/* A row per dtype at its own index, names unique and found again; out of
 * range: no row, and the functions' neutral answers. */
static void test_rows(void)
{
    int empty_keys = 0;
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_EQUAL((int)r->id, d);
        CU_ASSERT_TRUE(r->name && r->name[0]);
        CU_ASSERT_STRING_EQUAL(dt_dtype_name((dt_dtype)d), r->name);
        dt_dtype back = DT_DTYPE_COUNT;
        CU_ASSERT_EQUAL(dt_dtype_from_name(r->name, &back), 0);
        CU_ASSERT_EQUAL((int)back, d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r->key);
        empty_keys += r->key[0] == 0;
        for (int o = 0; o < d; o++) {
            CU_ASSERT_STRING_NOT_EQUAL(r->name, row(o)->name);
            CU_ASSERT_STRING_NOT_EQUAL(r->key, row(o)->key);
        }
    }
    /* one dtype is the default keys omit: f32 (docs/workload-keys.md) */
    CU_ASSERT_EQUAL(empty_keys, 1);
    CU_ASSERT_STRING_EQUAL(row(DT_DTYPE_F32)->key, "");
    CU_ASSERT_PTR_NULL(dt_dtype_info(DT_DTYPE_COUNT));
    CU_ASSERT_PTR_NULL(dt_dtype_info((dt_dtype)-1));
    CU_ASSERT_STRING_EQUAL(dt_dtype_name(DT_DTYPE_COUNT), "?");
    CU_ASSERT_EQUAL(dt_dtype_a_size(DT_DTYPE_COUNT), 0);
    CU_ASSERT_EQUAL(dt_dtype_quantized(DT_DTYPE_COUNT), 0);
    CU_ASSERT_PTR_NULL(dt_dtype_math(DT_DTYPE_COUNT));
    dt_dtype x;
    CU_ASSERT_EQUAL(dt_dtype_from_name("f16", &x), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_dtype_from_name(NULL, &x), DT_EINVAL);
}

/* Element sizes > 0 and the size functions the rows' elements; C is f32
 * in every dtype (the reference and the epilogues write floats). */
static void test_sizes(void)
{
    for (int e = 0; e < DT_ELEM_COUNT; e++)
        CU_ASSERT_TRUE(dt_elem_size((dt_elem)e) > 0);
    CU_ASSERT_EQUAL(dt_elem_size(DT_ELEM_COUNT), 0);
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        CU_ASSERT_EQUAL(dt_dtype_a_size((dt_dtype)d), dt_elem_size(r->a));
        CU_ASSERT_EQUAL(dt_dtype_b_size((dt_dtype)d), dt_elem_size(r->b));
        CU_ASSERT_EQUAL(dt_dtype_c_size((dt_dtype)d), dt_elem_size(r->c));
        CU_ASSERT_TRUE(dt_dtype_a_size((dt_dtype)d) > 0 && dt_dtype_b_size((dt_dtype)d) > 0);
        CU_ASSERT_EQUAL(r->c, DT_ELEM_F32);
    }
    /* the sizes as they were before the table */
    static const int want[DT_DTYPE_COUNT][3] = {
        [DT_DTYPE_F32] = {4, 4, 4},      [DT_DTYPE_BF16] = {2, 2, 4},
        [DT_DTYPE_INT8] = {1, 1, 4},     [DT_DTYPE_W8A32] = {4, 1, 4},
        [DT_DTYPE_F32_BF16] = {4, 4, 4}, [DT_DTYPE_W8A32_BF16] = {4, 1, 4}};
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        CU_ASSERT_EQUAL(dt_dtype_a_size((dt_dtype)d), want[d][0]);
        CU_ASSERT_EQUAL(dt_dtype_b_size((dt_dtype)d), want[d][1]);
        CU_ASSERT_EQUAL(dt_dtype_c_size((dt_dtype)d), want[d][2]);
    }
}

/* Storage and math: the storage of a storage is itself and runs its own
 * arithmetic; a math dtype is a plain dtype (its own storage and math); a
 * dtype of another math stores exactly what its storage stores. */
static void test_storage_math(void)
{
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d), *s = row(r->storage), *m = row(r->math);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL(s->storage, r->storage);
        CU_ASSERT_EQUAL(s->math, r->storage);
        CU_ASSERT_EQUAL(m->storage, r->math);
        CU_ASSERT_EQUAL(m->math, r->math);
        CU_ASSERT_EQUAL(dt_dtype_storage((dt_dtype)d), r->storage);
        if (r->math == r->id) {
            CU_ASSERT_PTR_NULL(dt_dtype_math((dt_dtype)d));
            continue;
        }
        CU_ASSERT_EQUAL(r->storage == r->id, 0); /* another math: another storage's variant */
        CU_ASSERT_TRUE(r->a == s->a && r->b == s->b && r->c == s->c && r->quant == s->quant);
        CU_ASSERT_STRING_EQUAL(dt_dtype_math((dt_dtype)d), m->name);
        CU_ASSERT_TRUE(dt_dtype_math_known(m->name));
        dt_dtype back = DT_DTYPE_COUNT;
        CU_ASSERT_EQUAL(dt_dtype_with_math(r->storage, m->name, &back), 0);
        CU_ASSERT_EQUAL((int)back, d);
    }
    CU_ASSERT_FALSE(dt_dtype_math_known("f16"));
    CU_ASSERT_FALSE(dt_dtype_math_known(NULL));
}

/* The literal lists are exactly the rows they describe: the dtypes that
 * are their own storage, and the distinct maths of the others. */
static void test_name_lists(void)
{
    char names[256] = "", maths[256] = "";
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        if (r->storage == r->id)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     names[0] ? ", " : "", r->name);
        const char *m = dt_dtype_math((dt_dtype)d);
        if (m && !strstr(maths, m))
            snprintf(maths + strlen(maths), sizeof maths - strlen(maths), "%s%s",
                     maths[0] ? ", " : "", m);
    }
    CU_ASSERT_STRING_EQUAL(dt_dtype_names(), names);
    CU_ASSERT_STRING_EQUAL(dt_dtype_math_names(), maths);
}

/* The quantisation layout and the elements agree: an affine A is u8 and
 * comes with scaled weights (int8's one path), scaled weights are s8, an
 * unquantised operand is real; the functions are the bits. */
static void test_quant(void)
{
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        const int qa = (r->quant & DT_QUANT_A_AFFINE) != 0;
        const int qb = (r->quant & DT_QUANT_B_SCALE_N) != 0;
        CU_ASSERT_EQUAL(r->quant & ~(DT_QUANT_A_AFFINE | DT_QUANT_B_SCALE_N), 0u);
        CU_ASSERT_EQUAL(qa, r->a == DT_ELEM_U8);
        CU_ASSERT_EQUAL(qb, r->b == DT_ELEM_S8);
        CU_ASSERT_TRUE(!qa || qb);
        CU_ASSERT_EQUAL(dt_dtype_quantized((dt_dtype)d), qb);
        CU_ASSERT_EQUAL(dt_dtype_a_quantized((dt_dtype)d), qa);
    }
    CU_ASSERT_TRUE(dt_dtype_a_quantized(DT_DTYPE_INT8) && dt_dtype_quantized(DT_DTYPE_INT8));
    CU_ASSERT_TRUE(!dt_dtype_a_quantized(DT_DTYPE_W8A32) && dt_dtype_quantized(DT_DTYPE_W8A32));
    CU_ASSERT_TRUE(dt_dtype_quantized(DT_DTYPE_W8A32_BF16));
    CU_ASSERT_FALSE(dt_dtype_quantized(DT_DTYPE_BF16) || dt_dtype_quantized(DT_DTYPE_F32_BF16));
}

/* Tolerances > 0, a math variant's its math's (it runs those kernels on
 * rounded operands), and dt_ref_tol_k's values as before the table. */
static void test_tolerance(void)
{
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d), *m = row(r->math);
        CU_ASSERT_TRUE(r->tol_per_k >= 0 && r->tol_base > 0);
        CU_ASSERT_TRUE(dt_ref_tol_k((dt_dtype)d, 1) > 0);
        if (r->math != r->id) {
            CU_ASSERT_EQUAL(r->tol_per_k, m->tol_per_k);
            CU_ASSERT_EQUAL(r->tol_base, m->tol_base);
        }
    }
    static const int64_t ks[] = {1, 7, 64, 768, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        double K = (double)ks[i];
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_F32, ks[i]), K + 8);
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_BF16, ks[i]), 2.0 * (K + 8));
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_INT8, ks[i]), 8);
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_W8A32, ks[i]), K + 8);
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_F32_BF16, ks[i]), 2.0 * (K + 8));
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_W8A32_BF16, ks[i]), 2.0 * (K + 8));
        CU_ASSERT_EQUAL(dt_ref_tol_k(DT_DTYPE_COUNT, ks[i]), K + 8); /* unknown: f32's */
    }
}

/* Ceilings > 0, never below the math's (a variant runs at most its math's
 * rate, so its bound may not be stricter), the largest the unknown dtype's;
 * the values as the switch of measure/trial.c gave them. */
static void test_ceiling(void)
{
    double max = 0;
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        CU_ASSERT_TRUE(r->ops_per_cycle > 0 && isfinite(r->ops_per_cycle));
        CU_ASSERT_TRUE(r->ops_per_cycle >= row(r->math)->ops_per_cycle);
        CU_ASSERT_EQUAL(dt_peak_ops_per_cycle((dt_dtype)d), r->ops_per_cycle);
        max = r->ops_per_cycle > max ? r->ops_per_cycle : max;
    }
    CU_ASSERT_EQUAL(dt_dtype_ops_per_cycle_max(), max);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_F32), 64.0);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_W8A32), 64.0);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_BF16), 1024.0);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_INT8), 2048.0);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_F32_BF16), 2048.0);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_W8A32_BF16), 2048.0);
    CU_ASSERT_EQUAL(dt_peak_ops_per_cycle(DT_DTYPE_COUNT), 2048.0);
    /* an unknown dtype (as a trial without a workload): the most generous
     * bound, as int8's was */
    CU_ASSERT_EQUAL(dt_trial_min_possible_ns(1e9, DT_DTYPE_COUNT, 2),
                    dt_trial_min_possible_ns(1e9, DT_DTYPE_INT8, 2));
}

/* Peers and peaks: a peer is a plain dtype (its own storage and math);
 * every row names a peak kind; the cost model names as before. */
static void test_peers_keys(void)
{
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        dt_dtype p = DT_DTYPE_COUNT;
        CU_ASSERT_EQUAL_FATAL(dt_dtype_from_name(r->peer, &p), 0);
        CU_ASSERT_TRUE(row(p)->storage == p && row(p)->math == p);
        CU_ASSERT_TRUE(r->peak && r->peak[0]);
        char name[48], want[48];
        dt_costmodel_name("dense", (dt_dtype)d, name, sizeof name);
        snprintf(want, sizeof want, d == DT_DTYPE_F32 ? "dense" : "dense:%s", r->name);
        CU_ASSERT_STRING_EQUAL(name, want);
    }
    char name[48];
    dt_costmodel_name("dense", DT_DTYPE_BF16, name, sizeof name);
    CU_ASSERT_STRING_EQUAL(name, "dense:bf16");
    dt_costmodel_name("batch_matmul", DT_DTYPE_COUNT, name, sizeof name);
    CU_ASSERT_STRING_EQUAL(name, "batch_matmul:?");
    CU_ASSERT_STRING_EQUAL(row(DT_DTYPE_W8A32)->peer, "f32");
    CU_ASSERT_STRING_EQUAL(row(DT_DTYPE_F32_BF16)->peer, "f32");
    CU_ASSERT_STRING_EQUAL(row(DT_DTYPE_INT8)->peer, "int8");
}

/* a float's low 16 bits are zero: it is a bf16 value */
static int is_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0xffffu) == 0;
}

/* The operand maker follows each row: quantisation arrays exactly where
 * the layout has them, an affine A's integer values around its zero point,
 * a bf16 element's or bf16 math's values bf16. */
static void test_operands(void)
{
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const dt_dtype_row *r = row(d);
        dt_operands o;
        dt_err e;
        const int64_t nn = 5, wk = 7;
        int rc = dt_operands_make_flat(&o, (dt_dtype)d, 33, nn * wk, nn, wk, 9, &e);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        const int qa = (r->quant & DT_QUANT_A_AFFINE) != 0;
        const int qb = (r->quant & DT_QUANT_B_SCALE_N) != 0;
        const int bf16_a = r->a == DT_ELEM_BF16 || row(r->math)->a == DT_ELEM_BF16;
        CU_ASSERT_EQUAL(o.scale_b != NULL, qb);
        CU_ASSERT_EQUAL(o.colscale != NULL, qb);
        CU_ASSERT_EQUAL(o.scale_a != 1.0f, qa);
        for (int64_t i = 0; i < 33; i++) {
            if (qa)
                CU_ASSERT_EQUAL(o.Aref[i], (float)((int)((uint8_t *)o.A)[i] - o.zp_a));
            if (bf16_a)
                CU_ASSERT_TRUE(is_bf16(o.Aref[i]));
        }
        for (int64_t i = 0; i < nn * wk; i++)
            if (qb && r->math == r->id)
                CU_ASSERT_EQUAL(o.Bref[i], (float)((int8_t *)o.B)[i]);
        dt_operands_free(&o);
    }
    dt_operands o;
    dt_err e;
    CU_ASSERT_EQUAL(dt_operands_make_flat(&o, DT_DTYPE_COUNT, 4, 4, 1, 0, 1, &e), DT_EINVAL);
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"one row per dtype, names and keys", test_rows},
        {"element sizes", test_sizes},
        {"storage and math", test_storage_math},
        {"the name lists are the rows'", test_name_lists},
        {"quantisation layout and elements", test_quant},
        {"reference tolerances", test_tolerance},
        {"impossible-time ceilings", test_ceiling},
        {"peers, peaks, cost model names", test_peers_keys},
        {"operands follow the row", test_operands},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {{"dtype", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
