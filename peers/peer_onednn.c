/* The oneDNN peers (docs/peers.md):
 *   onednn      matmul primitive created for the exact shape; constant
 *               weights: in the layout the primitive picks (format_tag
 *               any), reordered once in pack(), bias and activation fused
 *               (post-op); a dynamic B: one 3-D batched matmul (src
 *               {B,M,K}, weights {B,K,N} in abc, or acb when B is stored
 *               N×K, dst {B,M,N}) (brg:avx512_core here).
 *   onednn_rt   oneDNN's dynamic-shape mode: the matmul primitive is created
 *               with M (dynamic B: batch, M, N, K) = DNNL_RUNTIME_DIM_VAL and run
 *               with memory objects of the real dims; oneDNN's primitive
 *               cache makes it one primitive per (N, K, epilogue, threads).
 *   dnnl_sgemm  the row-major dnnl_sgemm call; epilogue in a separate pass.
 *   onednn_conv the convolution primitive per exact shape, for conv2d (a
 *               problem with conv.on, whose A is implicit: the GEMM peers
 *               above do not take it).
 * onednn and onednn_rt take every dtype: f32, bf16 (bf16 src and weights,
 * f32 dst and bias, dense and batched) and int8 (dense only: u8 src with a
 * zero point, s8 weights, f32 dst; the scales are oneDNN 2.x output scales,
 * per output channel).  dnnl_sgemm is f32 only.
 * oneDNN in Debian is built with the OpenMP runtime: the thread count is the
 * calling thread's OpenMP ICV, set around every create / pack / run. */
#include "peers/peer_internal.h"

#ifdef DTUNE_HAVE_DNNL

#include <dnnl.h>
#include <dnnl_debug.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- engine and stream: created once, lazily, kept for the process ---------- */

static pthread_once_t od_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t od_eng;
static dnnl_stream_t od_strm;
static dnnl_status_t od_init_status = dnnl_runtime_error;

static void od_init(void)
{
    od_init_status = dnnl_engine_create(&od_eng, dnnl_cpu, 0);
    if (od_init_status == dnnl_success)
        od_init_status = dnnl_stream_create(&od_strm, od_eng, dnnl_stream_default_flags);
}

static int od_code(dnnl_status_t st)
{
    switch (st) {
    case dnnl_success: return 0;
    case dnnl_out_of_memory: return DT_ENOMEM;
    case dnnl_invalid_arguments: return DT_EINVAL;
    case dnnl_unimplemented: return DT_EUNSUPPORTED;
    default: return DT_EIO;
    }
}

/* Fails with a message naming the peer, the call and oneDNN's status. */
#define OD_TRY(peer, call, e)                                                      \
    do {                                                                           \
        dnnl_status_t st_ = (call);                                                \
        if (st_ != dnnl_success)                                                   \
            return dt_errf((e), od_code(st_), "%s: %s failed: %s", (peer), #call,  \
                           dnnl_status2str(st_));                                  \
    } while (0)

static int od_ready(const char *peer, dt_err *e)
{
    pthread_once(&od_once, od_init);
    if (od_init_status != dnnl_success)
        return dt_errf(e, od_code(od_init_status), "%s: cannot create the oneDNN CPU "
                       "engine or stream: %s", peer, dnnl_status2str(od_init_status));
    return 0;
}

/* ---- matmul peers (onednn, onednn_rt) --------------------------------------- */

typedef struct od_mm {
    const char *peer;
    dt_peer_problem p;
    dnnl_primitive_t prim;
    dnnl_primitive_t reorder;   /* constant W: user W -> the primitive's weights layout */
    dnnl_memory_t src, wei, bias, dst;
    dnnl_memory_t wuser;        /* constant W: the user's W[N,K] seen as K x N, strides {1,K} */
    /* onednn_bf16: the f32 inputs converted to bf16 (weights once, in the
     * weights reorder; activations on every run, by acvt from a32 to a16) */
    int cvt;
    dnnl_primitive_t acvt;
    dnnl_memory_t a32, a16;
    float *oscale;              /* int8: scale_a·scale_b[n], the output scales [N] */
    float *qbias;               /* int8 with bias: bias[n] / oscale[n], set per run */
    /* the activation as an eltwise primitive of its own, in place on dst
     * after the main one (a deconvolution: oneDNN 2.6's with an eltwise
     * post-op runs 5-7x slower than without, measured; a user runs it apart) */
    dnnl_primitive_t act;
    int packed;
} od_mm;

static void mm_destroy(void *state)
{
    od_mm *s = state;
    if (!s)
        return;
    dnnl_memory_t *mems[] = {&s->src, &s->wei, &s->bias, &s->dst, &s->wuser, &s->a32, &s->a16};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (*mems[i])
            dnnl_memory_destroy(*mems[i]);
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    if (s->reorder)
        dnnl_primitive_destroy(s->reorder);
    if (s->acvt)
        dnnl_primitive_destroy(s->acvt);
    if (s->act)
        dnnl_primitive_destroy(s->act);
    free(s->oscale);
    free(s->qbias);
    free(s);
}

/* onednn_bf16 is the peer of f32 dense workloads that accept bf16
 * arithmetic (math=bf16): what such a user runs on oneDNN 2.6, which ignores
 * fpmath_mode=bf16 for matmul. */
static int onednn_bf16_applies(const dt_peer_problem *p)
{
    return p && p->dtype == DT_PEER_F32 && p->math_bf16 && p->b_const;
}

/* oneDNN's element type of A (src) and of B (weights) for a dtype; C and
 * bias are f32 in every dtype. */
static dnnl_data_type_t od_a_type(dt_peer_dtype d)
{
    return d == DT_PEER_BF16 ? dnnl_bf16 : d == DT_PEER_INT8 ? dnnl_u8 : dnnl_f32;
}

static dnnl_data_type_t od_b_type(dt_peer_dtype d)
{
    return d == DT_PEER_BF16 ? dnnl_bf16 : d == DT_PEER_INT8 ? dnnl_s8 : dnnl_f32;
}

/* Descriptor of type dt with dims d[0..n-1] (some may be runtime) in tag. */
static int md_tag(const char *peer, dnnl_memory_desc_t *md, int n, const dnnl_dim_t *d,
                  dnnl_data_type_t dt, dnnl_format_tag_t tag, dt_err *e)
{
    dnnl_dims_t dims;
    memset(dims, 0, sizeof dims);
    memcpy(dims, d, (size_t)n * sizeof(dnnl_dim_t));
    OD_TRY(peer, dnnl_memory_desc_init_by_tag(md, n, dims, dt, tag), e);
    return 0;
}

/* oneDNN's eltwise algorithm and its alpha, beta for an activation: ReLU6
 * a clip to [0, 6]; HardSwish's alpha·x + beta = x/6 + 1/2 (where oneDNN
 * 2.6 takes them; it ignores them where it does not). */
static dnnl_alg_kind_t od_act_alg(dt_peer_act act, float *alpha, float *beta)
{
    *alpha = *beta = 0.0f;
    switch (act) {
    case DT_PEER_ACT_RELU: return dnnl_eltwise_relu;
    case DT_PEER_ACT_RELU6: *beta = 6.0f; return dnnl_eltwise_clip;
    case DT_PEER_ACT_HARDSWISH: *alpha = 1.0f / 6.0f; *beta = 0.5f; return dnnl_eltwise_hardswish;
    default: return dnnl_eltwise_gelu_erf;
    }
}

/* Appends the activation as an eltwise post-op. */
static dnnl_status_t attr_eltwise(dnnl_primitive_attr_t attr, dt_peer_act act)
{
    dnnl_post_ops_t po = NULL;
    float alpha, beta;
    dnnl_alg_kind_t alg = od_act_alg(act, &alpha, &beta);
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st == dnnl_success)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (po)
        dnnl_post_ops_destroy(po);
    return st;
}

/* int8: the output scales scale_a·scale_b[n] along dst's dim 1 (N), and A's
 * zero point (a common one, mask 0; none when 0). */
static dnnl_status_t attr_quant(dnnl_primitive_attr_t attr, const od_mm *s)
{
    dnnl_status_t st = dnnl_primitive_attr_set_output_scales(attr, s->p.N, 1 << 1, s->oscale);
    if (st == dnnl_success && s->p.zp_a != 0)
        st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &s->p.zp_a);
    return st;
}

/* The primitive attribute: the activation post-op and int8's quantization
 * (NULL attr when there is neither). */
/* The activation runs apart (od_mm.act) for a transposed convolution. */
static int act_apart(const dt_peer_problem *p)
{
    return p->conv.on && p->conv.transpose && p->act != DT_PEER_ACT_NONE;
}

static int mm_attr(const od_mm *s, dnnl_primitive_attr_t *attr, dt_err *e)
{
    const dt_peer_problem *p = &s->p;
    int eltwise = p->b_const && p->act != DT_PEER_ACT_NONE && !act_apart(p);
    int quant = p->dtype == DT_PEER_INT8;
    *attr = NULL;
    if (!eltwise && !quant)
        return 0;
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st == dnnl_success && eltwise)
        st = attr_eltwise(*attr, p->act);
    if (st == dnnl_success && quant)
        st = attr_quant(*attr, s);
    if (st != dnnl_success) {
        if (*attr)
            dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return dt_errf(e, od_code(st), "%s: cannot build the primitive attributes (%s%s): %s",
                       s->peer, eltwise ? "eltwise post-op" : "",
                       quant ? (eltwise ? ", int8 scales" : "int8 scales") : "",
                       dnnl_status2str(st));
    }
    return 0;
}

/* onednn_bf16: the reorder converting the f32 activations [M,K] to the bf16
 * src of the matmul (a16, allocated here; src points at it). */
static int mm_build_cvt(od_mm *s, const dnnl_memory_desc_t *src_md, dt_err *e)
{
    const char *peer = s->peer;
    const dnnl_dim_t ad[2] = {s->p.M, s->p.K};
    dnnl_memory_desc_t a32_md;
    int rc;
    if ((rc = md_tag(peer, &a32_md, 2, ad, dnnl_f32, dnnl_ab, e)))
        return rc;
    OD_TRY(peer, dnnl_memory_create(&s->a32, &a32_md, od_eng, DNNL_MEMORY_NONE), e);
    OD_TRY(peer, dnnl_memory_create(&s->a16, src_md, od_eng, DNNL_MEMORY_ALLOCATE), e);
    void *buf = NULL;
    OD_TRY(peer, dnnl_memory_get_data_handle(s->a16, &buf), e);
    OD_TRY(peer, dnnl_memory_set_data_handle(s->src, buf), e);
    dnnl_primitive_desc_t rpd = NULL;
    OD_TRY(peer, dnnl_reorder_primitive_desc_create(&rpd, &a32_md, od_eng, src_md, od_eng, NULL),
           e);
    dnnl_status_t st = dnnl_primitive_create(&s->acvt, rpd);
    dnnl_primitive_desc_destroy(rpd);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: cannot create the f32 -> bf16 reorder: %s", peer,
                       dnnl_status2str(st));
    return 0;
}

/* Creates the matmul primitive, its execution memory objects and (constant
 * weights) the weights reorder.  `runtime`: the primitive's M (dynamic B:
 * every dim) is
 * DNNL_RUNTIME_DIM_VAL; the memory objects always have the real dims. */
static int mm_build(od_mm *s, int runtime, dt_err *e)
{
    const char *peer = s->peer;
    const dt_peer_problem *p = &s->p;
    const dnnl_dim_t RT = DNNL_RUNTIME_DIM_VAL;
    dnnl_memory_desc_t src_pd, wei_pd, bias_md, dst_pd; /* for the primitive */
    dnnl_memory_desc_t src_md, dst_md, wei_md;          /* for execution */
    int wconst = p->b_const;
    const dnnl_data_type_t at = od_a_type(p->dtype), bt = od_b_type(p->dtype), ct = dnnl_f32;
    int rc;

    if (wconst) {
        dnnl_dim_t M = runtime ? RT : p->M;
        const dnnl_dim_t sd[2] = {M, p->K}, wd[2] = {p->K, p->N}, dd[2] = {M, p->N};
        const dnnl_dim_t bd[2] = {1, p->N};
        const dnnl_dim_t sx[2] = {p->M, p->K}, dx[2] = {p->M, p->N};
        if ((rc = md_tag(peer, &src_pd, 2, sd, at, dnnl_ab, e)) ||
            (rc = md_tag(peer, &wei_pd, 2, wd, bt, dnnl_format_tag_any, e)) ||
            (rc = md_tag(peer, &bias_md, 2, bd, dnnl_f32, dnnl_ab, e)) ||
            (rc = md_tag(peer, &dst_pd, 2, dd, ct, dnnl_ab, e)) ||
            (rc = md_tag(peer, &src_md, 2, sx, at, dnnl_ab, e)) ||
            (rc = md_tag(peer, &dst_md, 2, dx, ct, dnnl_ab, e)))
            return rc;
    } else {
        /* C[b] = A[b]·B[b] or A[b]·B[b]ᵀ (B stored [B,N,K], i.e. the
         * B x K x N tensor with tag acb) */
        dnnl_format_tag_t wtag = p->b_trans ? dnnl_acb : dnnl_abc;
        const dnnl_dim_t sd[3] = {runtime ? RT : p->batch, runtime ? RT : p->M,
                                  runtime ? RT : p->K};
        const dnnl_dim_t wd[3] = {sd[0], sd[2], runtime ? RT : p->N};
        const dnnl_dim_t dd[3] = {sd[0], sd[1], wd[2]};
        const dnnl_dim_t sx[3] = {p->batch, p->M, p->K}, wx[3] = {p->batch, p->K, p->N};
        const dnnl_dim_t dx[3] = {p->batch, p->M, p->N};
        if ((rc = md_tag(peer, &src_pd, 3, sd, at, dnnl_abc, e)) ||
            (rc = md_tag(peer, &wei_pd, 3, wd, bt, wtag, e)) ||
            (rc = md_tag(peer, &dst_pd, 3, dd, ct, dnnl_abc, e)) ||
            (rc = md_tag(peer, &src_md, 3, sx, at, dnnl_abc, e)) ||
            (rc = md_tag(peer, &wei_md, 3, wx, bt, wtag, e)) ||
            (rc = md_tag(peer, &dst_md, 3, dx, ct, dnnl_abc, e)))
            return rc;
    }
    int with_bias = wconst && p->bias;

    dnnl_matmul_desc_t mmd;
    OD_TRY(peer, dnnl_matmul_desc_init(&mmd, &src_pd, &wei_pd, with_bias ? &bias_md : NULL,
                                       &dst_pd), e);
    dnnl_primitive_attr_t attr;
    if ((rc = mm_attr(s, &attr, e)))
        return rc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &mmd, attr, od_eng, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: oneDNN has no %s matmul for %s%s (batch=%lld "
                       "M=%lld N=%lld K=%lld): %s", peer, dt_peer_dtype_name(p->dtype),
                       wconst ? "constant weights" : "a batched B",
                       runtime ? " with runtime dims" : "", (long long)p->batch,
                       (long long)p->M, (long long)p->N, (long long)p->K,
                       dnnl_status2str(st));
    st = dnnl_primitive_create(&s->prim, pd);
    if (st == dnnl_success && wconst) {
        /* the weights layout the primitive chose (format any) */
        wei_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    }
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: dnnl_primitive_create failed: %s", peer,
                       dnnl_status2str(st));

    if (wconst) {
        /* the user's W[N,K] row-major is the K x N matrix with strides {1, K} */
        dnnl_dims_t ud = {p->K, p->N}, us = {1, p->K};
        dnnl_memory_desc_t user_md;
        OD_TRY(peer, dnnl_memory_desc_init_by_strides(&user_md, 2, ud, s->cvt ? dnnl_f32 : bt,
                                                      us), e);
        OD_TRY(peer, dnnl_memory_create(&s->wuser, &user_md, od_eng, DNNL_MEMORY_NONE), e);
        OD_TRY(peer, dnnl_memory_create(&s->wei, &wei_md, od_eng, DNNL_MEMORY_ALLOCATE), e);
        void *wbuf = NULL; /* touched here, so pack() times the reorder, not page faults */
        OD_TRY(peer, dnnl_memory_get_data_handle(s->wei, &wbuf), e);
        if (wbuf)
            memset(wbuf, 0, dnnl_memory_desc_get_size(&wei_md));
        dnnl_primitive_desc_t rpd = NULL;
        OD_TRY(peer, dnnl_reorder_primitive_desc_create(&rpd, &user_md, od_eng, &wei_md,
                                                        od_eng, NULL), e);
        st = dnnl_primitive_create(&s->reorder, rpd);
        dnnl_primitive_desc_destroy(rpd);
        if (st != dnnl_success)
            return dt_errf(e, od_code(st), "%s: cannot create the weights reorder: %s",
                           peer, dnnl_status2str(st));
        if (with_bias)
            OD_TRY(peer, dnnl_memory_create(&s->bias, &bias_md, od_eng, DNNL_MEMORY_NONE), e);
    } else {
        OD_TRY(peer, dnnl_memory_create(&s->wei, &wei_md, od_eng, DNNL_MEMORY_NONE), e);
    }
    OD_TRY(peer, dnnl_memory_create(&s->src, &src_md, od_eng, DNNL_MEMORY_NONE), e);
    OD_TRY(peer, dnnl_memory_create(&s->dst, &dst_md, od_eng, DNNL_MEMORY_NONE), e);
    return s->cvt ? mm_build_cvt(s, &src_md, e) : 0;
}

/* int8: the output scales scale_a·scale_b[n] (and, with a bias, the buffer
 * of the bias scaled for oneDNN 2.x, see mm_bias). */
static int mm_scales(od_mm *s, const dt_peer_problem *p, dt_err *e)
{
    if (!(s->oscale = dt_peer_alloc_floats(p->N)) ||
        (p->bias && !(s->qbias = dt_peer_alloc_floats(p->N))))
        return dt_errf(e, DT_ENOMEM, "%s: out of memory for the int8 scales", s->peer);
    for (int64_t n = 0; n < p->N; n++) {
        s->oscale[n] = p->scale_a * p->scale_b[n];
        if (!isnormal(s->oscale[n])) /* the bias is divided by it (mm_bias) */
            return dt_errf(e, DT_EINVAL, "%s: scale_a·scale_b[%lld] = %g is not a normal "
                           "float", s->peer, (long long)n, (double)s->oscale[n]);
    }
    return 0;
}

/* cvt: onednn_bf16's matmul, bf16, on f32 inputs it converts (weights in
 * the prepack reorder, activations on every run) */
static int mm_create(const char *peer, int runtime, int cvt, const dt_peer_problem *p,
                     void **state, dt_err *e)
{
    int rc;
    *state = NULL;
    if ((rc = dt_peer_check(peer, p, e)) || (rc = od_ready(peer, e)))
        return rc;
    if (cvt && !onednn_bf16_applies(p)) /* after the checks: a malformed problem is EINVAL */
        return dt_errf(e, DT_EUNSUPPORTED, "%s: f32 dense with bf16 arithmetic accepted "
                       "(math=bf16) only", peer);
    od_mm *s = calloc(1, sizeof *s);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "%s: out of memory", peer);
    s->peer = peer;
    s->p = *p;
    s->cvt = cvt;
    if (cvt)
        s->p.dtype = DT_PEER_BF16; /* the matmul's; its inputs are converted */
    s->p.scale_b = NULL; /* borrowed for create only: the scales live in oscale */
    if (p->dtype == DT_PEER_INT8 && (rc = mm_scales(s, p, e))) {
        mm_destroy(s);
        return rc;
    }
    int prev = dt_peer_omp_enter(p->threads);
    rc = mm_build(s, runtime, e);
    dt_peer_omp_leave(prev);
    if (rc) {
        mm_destroy(s);
        return rc;
    }
    *state = s;
    return 0;
}

static int onednn_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    return mm_create("onednn", 0, 0, p, state, e);
}

static int onednn_rt_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    return mm_create("onednn_rt", 1, 0, p, state, e);
}

static int onednn_bf16_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    return mm_create("onednn_bf16", 0, 1, p, state, e);
}

static int mm_exec(od_mm *s, dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args,
                   dt_err *e)
{
    int prev = dt_peer_omp_enter(s->p.threads);
    dnnl_status_t st = dnnl_primitive_execute(prim, od_strm, nargs, args);
    if (st == dnnl_success)
        st = dnnl_stream_wait(od_strm);
    dt_peer_omp_leave(prev);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: dnnl_primitive_execute failed: %s", s->peer,
                       dnnl_status2str(st));
    return 0;
}

static int mm_pack(void *state, const void *W, dt_err *e)
{
    od_mm *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "peer pack: no state");
    if (!s->p.b_const)
        return 0; /* both operands are dynamic: nothing to prepack */
    if (!W)
        return dt_errf(e, DT_EINVAL, "%s: pack: no weights", s->peer);
    /* oneDNN takes a non-const handle; the reorder only reads it */
    OD_TRY(s->peer, dnnl_memory_set_data_handle(s->wuser, (void *)W), e);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, s->wuser}, {DNNL_ARG_TO, s->wei}};
    int rc = mm_exec(s, s->reorder, 2, args, e);
    dnnl_memory_set_data_handle(s->wuser, NULL);
    if (rc)
        return rc;
    s->packed = 1;
    return 0;
}

/* The bias handle to give oneDNN.  oneDNN 2.x applies the output scales
 * after the bias, dst = oscale·(acc + bias) (checked on a small case, and by
 * the tests), while dtune adds the bias after dequantizing; so int8 passes
 * bias[n] / oscale[n], the usual pre-scaled bias of oneDNN 2.x (3.x changed
 * the order).  The bias is a run() argument, so the N divisions are part of
 * every call: vectorized, a fraction of a microsecond at N = 3072. */
static void *mm_bias(od_mm *s, const void *b)
{
    if (s->p.dtype != DT_PEER_INT8)
        return (void *)b; /* oneDNN takes a non-const handle; it only reads it */
    const float *bias = b, *oscale = s->oscale;
    float *q = s->qbias;
    const int64_t N = s->p.N;
#pragma omp simd
    for (int64_t n = 0; n < N; n++)
        q[n] = bias[n] / oscale[n];
    return q;
}

static int mm_run(void *state, const void *x, const void *b, void *y, dt_err *e)
{
    od_mm *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "peer run: no state");
    const dt_peer_problem *p = &s->p;
    int wconst = p->b_const;
    if (!x || !y || (!wconst && !b) || (wconst && p->bias && !b))
        return dt_errf(e, DT_EINVAL, "%s: run: missing %s", s->peer,
                       !x ? "input" : !y ? "output" : wconst ? "bias" : "second operand");
    if (wconst && !s->packed)
        return dt_errf(e, DT_EINVAL, "%s: run before pack", s->peer);
    if (s->cvt) { /* the conversion is part of every call: the user's f32 activations */
        OD_TRY(s->peer, dnnl_memory_set_data_handle(s->a32, (void *)x), e);
        dnnl_exec_arg_t cargs[2] = {{DNNL_ARG_FROM, s->a32}, {DNNL_ARG_TO, s->a16}};
        int rc = mm_exec(s, s->acvt, 2, cargs, e);
        if (rc)
            return rc;
    } else {
        OD_TRY(s->peer, dnnl_memory_set_data_handle(s->src, (void *)x), e);
    }
    OD_TRY(s->peer, dnnl_memory_set_data_handle(s->dst, y), e);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->src}, {DNNL_ARG_WEIGHTS, s->wei},
                               {DNNL_ARG_DST, s->dst}, {DNNL_ARG_BIAS, s->bias}};
    int nargs = 3;
    if (!wconst) {
        OD_TRY(s->peer, dnnl_memory_set_data_handle(s->wei, (void *)b), e);
    } else if (p->bias) {
        OD_TRY(s->peer, dnnl_memory_set_data_handle(s->bias, mm_bias(s, b)), e);
        nargs = 4;
    }
    int rc = mm_exec(s, s->prim, nargs, args, e);
    if (!rc && s->act) {
        dnnl_exec_arg_t aargs[2] = {{DNNL_ARG_SRC, s->dst}, {DNNL_ARG_DST, s->dst}};
        rc = mm_exec(s, s->act, 2, aargs, e);
    }
    return rc;
}

const dt_peer_desc dt_peer_onednn_desc = {
    .name = "onednn",
    .description = "oneDNN matmul primitive per exact shape (f32, bf16, int8): constant weights "
                   "blocked and prepacked with fused bias/activation, a dynamic B as one 3-D "
                   "batched matmul",
    .create = onednn_create,
    .pack = mm_pack,
    .run = mm_run,
    .destroy = mm_destroy,
};

const dt_peer_desc dt_peer_onednn_rt_desc = {
    .name = "onednn_rt",
    .description = "oneDNN matmul with runtime dims (constant weights: M; else B, M, N, K), "
                   "one primitive for every shape, fused bias/activation (f32, bf16, int8)",
    .create = onednn_rt_create,
    .pack = mm_pack,
    .run = mm_run,
    .destroy = mm_destroy,
};

const dt_peer_desc dt_peer_onednn_bf16_desc = {
    .name = "onednn_bf16",
    .description = "oneDNN bf16 matmul per exact shape for math=bf16: weights converted and "
                   "prepacked once, the f32 activations converted to bf16 (a reorder) in every "
                   "call, fused bias/activation, f32 out",
    .applies = onednn_bf16_applies,
    .create = onednn_bf16_create,
    .pack = mm_pack,
    .run = mm_run,
    .destroy = mm_destroy,
};

/* ---- convolution peer (onednn_conv) ------------------------------------------ */

/* The peer of convolutions (p->conv.on; peers/peer.h): oneDNN's direct
 * convolution primitive for forward inference, created for the exact shape:
 * src X[n,h,w,c] (nhwc), weights in the layout the primitive picks (format
 * any), reordered once in pack() from W[k,r,s,c] (ohwi), the bias and the
 * activation fused (an eltwise post-op: relu, gelu_erf), dst Y[n,oh,ow,k]
 * (nhwc, f32).  f32 and bf16 (bf16 src and weights, f32 bias and dst).
 * It reuses the matmul peer's state (od_mm): pack and run are the matmul's,
 * the same SRC / WEIGHTS / BIAS / DST arguments.  A transposed convolution
 * (p->conv.transpose) is oneDNN's deconvolution primitive over the same
 * weights (its oc = dtune's K, ic = C), the output padding given as less
 * padding on the right. */
static int conv_applies(const dt_peer_problem *p) { return p && p->conv.on; }

/* Output extent of one spatial axis (ops/op_conv2d.c's formula; a
 * transposed convolution's with out_pad). */
static int64_t conv_out(int64_t in, int64_t win, int64_t stride, int64_t pads, int64_t dil,
                        int transpose, int64_t out_pad)
{
    int64_t span = dil * (win - 1) + 1;
    if (transpose)
        return (in - 1) * stride - pads + span + out_pad;
    int64_t room = in + pads - span;
    return room < 0 ? 0 : room / stride + 1;
}

static int conv_build(od_mm *s, dt_err *e)
{
    const char *peer = s->peer;
    const dt_peer_problem *p = &s->p;
    const int64_t n = p->conv.n, h = p->conv.h, w = p->conv.w, c = p->conv.c, k = p->conv.k,
                  r = p->conv.r, sw = p->conv.s;
    const int tr = p->conv.transpose;
    const int64_t oh = conv_out(h, r, p->conv.stride, p->conv.pad + p->conv.pad_b,
                                p->conv.dilation, tr, p->conv.out_pad_h);
    const int64_t ow = conv_out(w, sw, p->conv.stride_w, p->conv.pad_l + p->conv.pad_r,
                                p->conv.dilation_w, tr, p->conv.out_pad_w);
    const dnnl_data_type_t at = od_a_type(p->dtype), bt = od_b_type(p->dtype);
    dnnl_memory_desc_t src_md, wei_any, bias_md, dst_md, user_md, wei_md;
    const int64_t g = p->conv.groups > 0 ? p->conv.groups : 1; /* 0: one group */
    /* weights {k, c, r, s}, or grouped {g, k/g, c/g, r, s} (W[k][r][s][c/g]
     * is then gohwi) */
    const dnnl_dim_t sd[4] = {n, c, h, w}, wd[4] = {k, c, r, sw},
                     gwd[5] = {g, k / g, c / g, r, sw}, bd[1] = {k},
                     dd[4] = {n, k, oh, ow};
    const int wn = g > 1 ? 5 : 4;
    const dnnl_dim_t *wdims = g > 1 ? gwd : wd;
    int rc;
    if (oh < 1 || ow < 1 || n * oh * ow != p->M || k != p->N || r * sw * c != p->K || c % g ||
        k % g)
        return dt_errf(e, DT_EINVAL, "%s: the convolution (N=%lld H=%lld W=%lld C=%lld K=%lld "
                       "R=%lld S=%lld) is not the GEMM view's M=%lld N=%lld K=%lld", peer,
                       (long long)n, (long long)h, (long long)w, (long long)c, (long long)k,
                       (long long)r, (long long)sw, (long long)p->M, (long long)p->N,
                       (long long)p->K);
    if ((rc = md_tag(peer, &src_md, 4, sd, at, dnnl_nhwc, e)) ||
        (rc = md_tag(peer, &wei_any, wn, wdims, bt, dnnl_format_tag_any, e)) ||
        (rc = md_tag(peer, &bias_md, 1, bd, dnnl_f32, dnnl_a, e)) ||
        (rc = md_tag(peer, &dst_md, 4, dd, dnnl_f32, dnnl_nhwc, e)) ||
        (rc = md_tag(peer, &user_md, wn, wdims, bt, g > 1 ? dnnl_gohwi : dnnl_ohwi, e)))
        return rc;
    const dnnl_dims_t strides = {p->conv.stride, p->conv.stride_w},
                      dil = {p->conv.dilation - 1, p->conv.dilation_w - 1}, /* 0: dense */
                      pad_l = {p->conv.pad, p->conv.pad_l},
                      pad_r = {p->conv.pad_b - (tr ? p->conv.out_pad_h : 0),
                               p->conv.pad_r - (tr ? p->conv.out_pad_w : 0)};
    dnnl_convolution_desc_t cd;
    if (tr)
        OD_TRY(peer, dnnl_dilated_deconvolution_forward_desc_init(
                         &cd, dnnl_forward_inference, dnnl_deconvolution_direct, &src_md,
                         &wei_any, p->bias ? &bias_md : NULL, &dst_md, strides, dil, pad_l,
                         pad_r), e);
    else
        OD_TRY(peer, dnnl_dilated_convolution_forward_desc_init(
                         &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wei_any,
                         p->bias ? &bias_md : NULL, &dst_md, strides, dil, pad_l, pad_r), e);
    dnnl_primitive_attr_t attr;
    if ((rc = mm_attr(s, &attr, e)))
        return rc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &cd, attr, od_eng, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: oneDNN has no %s %s for N=%lld H=%lld "
                       "W=%lld C=%lld K=%lld R=%lld S=%lld: %s", peer,
                       dt_peer_dtype_name(p->dtype), tr ? "deconvolution" : "convolution",
                       (long long)n, (long long)h, (long long)w,
                       (long long)c, (long long)k, (long long)r, (long long)sw,
                       dnnl_status2str(st));
    st = dnnl_primitive_create(&s->prim, pd);
    if (st == dnnl_success)
        wei_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: dnnl_primitive_create failed: %s", peer,
                       dnnl_status2str(st));
    OD_TRY(peer, dnnl_memory_create(&s->wuser, &user_md, od_eng, DNNL_MEMORY_NONE), e);
    OD_TRY(peer, dnnl_memory_create(&s->wei, &wei_md, od_eng, DNNL_MEMORY_ALLOCATE), e);
    void *wbuf = NULL; /* touched here, so pack() times the reorder, not page faults */
    OD_TRY(peer, dnnl_memory_get_data_handle(s->wei, &wbuf), e);
    if (wbuf)
        memset(wbuf, 0, dnnl_memory_desc_get_size(&wei_md));
    dnnl_primitive_desc_t rpd = NULL;
    OD_TRY(peer, dnnl_reorder_primitive_desc_create(&rpd, &user_md, od_eng, &wei_md, od_eng,
                                                    NULL), e);
    st = dnnl_primitive_create(&s->reorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "%s: cannot create the weights reorder: %s", peer,
                       dnnl_status2str(st));
    if (p->bias)
        OD_TRY(peer, dnnl_memory_create(&s->bias, &bias_md, od_eng, DNNL_MEMORY_NONE), e);
    OD_TRY(peer, dnnl_memory_create(&s->src, &src_md, od_eng, DNNL_MEMORY_NONE), e);
    OD_TRY(peer, dnnl_memory_create(&s->dst, &dst_md, od_eng, DNNL_MEMORY_NONE), e);
    if (act_apart(p)) {
        dnnl_eltwise_desc_t ed;
        float alpha, beta;
        const dnnl_alg_kind_t alg = od_act_alg(p->act, &alpha, &beta);
        OD_TRY(peer, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &dst_md,
                                                    alpha, beta), e);
        dnnl_primitive_desc_t epd = NULL;
        OD_TRY(peer, dnnl_primitive_desc_create(&epd, &ed, NULL, od_eng, NULL), e);
        st = dnnl_primitive_create(&s->act, epd);
        dnnl_primitive_desc_destroy(epd);
        if (st != dnnl_success)
            return dt_errf(e, od_code(st), "%s: cannot create the activation: %s", peer,
                           dnnl_status2str(st));
    }
    return 0;
}

static int conv_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    const char *peer = "onednn_conv";
    int rc;
    *state = NULL;
    if ((rc = dt_peer_check(peer, p, e)) || (rc = od_ready(peer, e)))
        return rc;
    if (!p->conv.on)
        return dt_errf(e, DT_EUNSUPPORTED, "%s: a peer of convolutions only", peer);
    if (p->conv.n < 1 || p->conv.h < 1 || p->conv.w < 1 || p->conv.c < 1 || p->conv.k < 1 ||
        p->conv.r < 1 || p->conv.s < 1 || p->conv.stride < 1 || p->conv.stride_w < 1 ||
        p->conv.pad < 0 || p->conv.pad_l < 0 || p->conv.pad_b < 0 || p->conv.pad_r < 0 ||
        p->conv.dilation < 1 || p->conv.dilation_w < 1 || !p->b_const)
        return dt_errf(e, DT_EINVAL, "%s: malformed convolution (dims, stride and dilation "
                       ">= 1, pad >= 0, constant weights)", peer);
    if (p->dtype == DT_PEER_INT8)
        return dt_errf(e, DT_EUNSUPPORTED, "%s: int8 is not run: dtune's int8 takes u8 "
                       "activations with a zero point, which oneDNN 2.x convolutions take only "
                       "as a source zero-point attribute few of its implementations accept "
                       "(not implemented in this peer)", peer);
    od_mm *s = calloc(1, sizeof *s);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "%s: out of memory", peer);
    s->peer = peer;
    s->p = *p;
    s->p.scale_b = NULL;
    int prev = dt_peer_omp_enter(p->threads);
    rc = conv_build(s, e);
    dt_peer_omp_leave(prev);
    if (rc) {
        mm_destroy(s);
        return rc;
    }
    *state = s;
    return 0;
}

const dt_peer_desc dt_peer_onednn_conv_desc = {
    .name = "onednn_conv",
    .description = "oneDNN convolution primitive per exact shape (f32, bf16; a transposed "
                   "convolution: its deconvolution primitive, the activation an eltwise "
                   "primitive after it): NHWC src, "
                   "weights reordered once from OHWI to the primitive's layout, fused "
                   "bias/activation; primitive creation timed per shape",
    .conv = 1,
    .applies = conv_applies,
    .create = conv_create,
    .pack = mm_pack,
    .run = mm_run,
    .destroy = mm_destroy,
};

/* ---- dnnl_sgemm ------------------------------------------------------------- */

typedef struct od_sgemm_state {
    dt_peer_problem p;
    float *w; /* constant W: a copy of W[N,K] (dnnl_sgemm has no prepacked format) */
    int packed;
} od_sgemm_state;

static void sgemm_destroy(void *state)
{
    od_sgemm_state *s = state;
    if (s) {
        free(s->w);
        free(s);
    }
}

static int sgemm_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    int rc;
    *state = NULL;
    if ((rc = dt_peer_f32_only("dnnl_sgemm", p, e)))
        return rc;
    od_sgemm_state *s = calloc(1, sizeof *s);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "dnnl_sgemm: out of memory");
    s->p = *p;
    if (p->b_const && !(s->w = dt_peer_alloc_floats(p->N * p->K))) {
        free(s);
        return dt_errf(e, DT_ENOMEM, "dnnl_sgemm: out of memory for W");
    }
    *state = s;
    return 0;
}

static int sgemm_pack(void *state, const void *W, dt_err *e)
{
    od_sgemm_state *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "dnnl_sgemm: pack: no state");
    if (!s->p.b_const)
        return 0;
    if (!W)
        return dt_errf(e, DT_EINVAL, "dnnl_sgemm: pack: no weights");
    memcpy(s->w, W, (size_t)(s->p.N * s->p.K) * sizeof(float));
    s->packed = 1;
    return 0;
}

static int sgemm_run(void *state, const void *xv, const void *bv, void *yv, dt_err *e)
{
    const float *x = xv, *b = bv;
    float *y = yv;
    od_sgemm_state *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "dnnl_sgemm: run: no state");
    const dt_peer_problem *p = &s->p;
    int wconst = p->b_const;
    if (!x || !y || (!wconst && !b) || (wconst && p->bias && !b))
        return dt_errf(e, DT_EINVAL, "dnnl_sgemm: run: missing operand");
    if (wconst && !s->packed)
        return dt_errf(e, DT_EINVAL, "dnnl_sgemm: run before pack");
    int prev = dt_peer_omp_enter(p->threads);
    dnnl_status_t st = dnnl_success;
    if (wconst) {
        /* row-major: Y[M,N] = X[M,K] · (W[N,K])ᵀ */
        st = dnnl_sgemm('N', 'T', p->M, p->N, p->K, 1.0f, x, p->K, s->w, p->K, 0.0f, y, p->N);
        if (st == dnnl_success)
            dt_peer_epilogue(y, p->M, p->N, p->N, p->bias ? b : NULL, p->act, p->threads);
    } else {
        int64_t sa = p->M * p->K, sb = p->K * p->N, sc = p->M * p->N;
        for (int64_t i = 0; i < p->batch && st == dnnl_success; i++)
            st = dnnl_sgemm('N', p->b_trans ? 'T' : 'N', p->M, p->N, p->K, 1.0f, x + i * sa,
                            p->K, b + i * sb, p->b_trans ? p->K : p->N, 0.0f, y + i * sc,
                            p->N);
    }
    dt_peer_omp_leave(prev);
    if (st != dnnl_success)
        return dt_errf(e, od_code(st), "dnnl_sgemm: failed: %s", dnnl_status2str(st));
    return 0;
}

const dt_peer_desc dt_peer_dnnl_sgemm_desc = {
    .name = "dnnl_sgemm",
    .description = "oneDNN dnnl_sgemm (row-major BLAS-like call), separate epilogue pass; f32 only",
    .create = sgemm_create,
    .pack = sgemm_pack,
    .run = sgemm_run,
    .destroy = sgemm_destroy,
};

#else
typedef int dt_peer_onednn_unused; /* oneDNN not found: no peer */
#endif
