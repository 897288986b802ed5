#if DT_ACT == 1
DT_INLINE vf dt_act(vf v)
{
    vx x = (vx)v;
    vi keep = x > 0.0f;
    return (vf)(vx)((vi)x & keep);
}
#elif DT_ACT == 2
/* exp(x) for x <= 0: x = n·ln2 + r, |r| <= ln2/2, degree-6 polynomial,
 * then 2^n.  Relative error ~2e-7 on [-87, 0].  AVX-512: the clamp by
 * vmaxps, n by vrndscaleps and 2^n by vscalefps — five fewer vector
 * operations in the GELU epilogue, which costs an int8 K = 768 tile an
 * eighth of its time. */
DT_INLINE vx dt_exp_poly(vx r)
{
    vx p = (vx){0} + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    return p * r + 1.0f;
}
#if defined(DT_ISA_AVX512)
DT_INLINE vx dt_exp_neg(vx x)
{
    /* the reduction needs |x| small; exp(-87) is still a normal float */
    x = (vx)_mm512_max_ps((__m512)x, _mm512_set1_ps(-87.0f));
    __m512 fn = _mm512_roundscale_ps((__m512)(x * 1.44269504088896341f),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vx r = x - (vx)fn * 0.693359375f - (vx)fn * -2.12194440e-4f;
    return (vx)_mm512_scalef_ps((__m512)dt_exp_poly(r), fn);
}
#else
DT_INLINE vx dt_exp_neg(vx x)
{
    vx lo = (vx){0} - 87.0f; /* exp(-87) is still a normal float */
    vi small = x < lo;
    x = (vx)(((vi)x & ~small) | ((vi)lo & small));
    vx t = x * 1.44269504088896341f;
    vi n = __builtin_convertvector(t - 0.5f, vi); /* t <= 0: round to nearest */
    vx fn = __builtin_convertvector(n, vx);
    vx r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
    return (vx)((vi)dt_exp_poly(r) + (n << 23));
}
#endif
/* 1/d for d >= 1.  AVX-512: vrcp14ps and one Newton step (relative error
 * near f32's rounding, far under the erf approximation's 1.5e-7) instead
 * of vdivps, whose zmm throughput made the GELU epilogue a sixth of an
 * int8 K = 768 tile. */
#if defined(DT_ISA_AVX512)
DT_INLINE vx dt_recip(vx d)
{
    vx r = (vx)_mm512_rcp14_ps((__m512)d);
    return r * (2.0f - d * r);
}
#else
DT_INLINE vx dt_recip(vx d) { return 1.0f / d; }
#endif
/* GELU, erf form: 0.5·x·(1 + erf(x/√2)), erf by Abramowitz–Stegun 7.1.26
 * (absolute error <= 1.5e-7). */
DT_INLINE vf dt_act(vf v)
{
    vx x = (vx)v;
    vx z = x * 0.70710678118654752f;
    vi sign = (vi)z & (int32_t)0x80000000;
    vx az = (vx)((vi)z & 0x7fffffff);
    vx t = dt_recip(1.0f + 0.3275911f * az);
    vx poly = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
               0.254829592f) * t;
    vx erf_abs = 1.0f - poly * dt_exp_neg((vx){0} - az * az);
    vx erf = (vx)((vi)erf_abs | sign);
    return (vf)(0.5f * x * (1.0f + erf));
}
#elif DT_ACT == 3 || DT_ACT == 4
/* min(max(x, 0), 6), lane by lane through masks (C has no vector ?:) */
DT_INLINE vx dt_clamp06(vx x)
{
    vi pos = x > 0.0f, low = x < 6.0f;
    x = (vx)((vi)x & pos);
    return (vx)(((vi)x & low) | ((vi)((vx){0} + 6.0f) & ~low));
}
#if DT_ACT == 3
/* ReLU6: min(max(x, 0), 6) */
DT_INLINE vf dt_act(vf v) { return (vf)dt_clamp06((vx)v); }
#else
/* HardSwish: x·min(max(x + 3, 0), 6)/6 */
DT_INLINE vf dt_act(vf v)
{
    vx x = (vx)v;
    return (vf)(x * dt_clamp06(x + 3.0f) * (1.0f / 6.0f));
}
#endif
#else
DT_INLINE vf dt_act(vf v) { return v; }
#endif
