#if DT_ACT == 1
DT_INLINE vf dt_act(vf v)
{
    vx x = (vx)v;
    vi keep = x > 0.0f;
    return (vf)(vx)((vi)x & keep);
}
#elif DT_ACT == 2
/* exp(x) for x <= 0: x = n·ln2 + r, |r| <= ln2/2, degree-6 polynomial, 2^n
 * through the exponent bits.  Relative error ~2e-7 on [-87, 0]. */
DT_INLINE vx dt_exp_neg(vx x)
{
    vx lo = (vx){0} - 87.0f; /* exp(-87) is still a normal float */
    vi small = x < lo;
    x = (vx)(((vi)x & ~small) | ((vi)lo & small));
    vx t = x * 1.44269504088896341f;
    vi n = __builtin_convertvector(t - 0.5f, vi); /* t <= 0: round to nearest */
    vx fn = __builtin_convertvector(n, vx);
    vx r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
    vx p = (vx){0} + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return (vx)((vi)p + (n << 23));
}
/* GELU, erf form: 0.5·x·(1 + erf(x/√2)), erf by Abramowitz–Stegun 7.1.26
 * (absolute error <= 1.5e-7). */
DT_INLINE vf dt_act(vf v)
{
    vx x = (vx)v;
    vx z = x * 0.70710678118654752f;
    vi sign = (vi)z & (int32_t)0x80000000;
    vx az = (vx)((vi)z & 0x7fffffff);
    vx t = 1.0f / (1.0f + 0.3275911f * az);
    vx poly = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
               0.254829592f) * t;
    vx erf_abs = 1.0f - poly * dt_exp_neg((vx){0} - az * az);
    vx erf = (vx)((vi)erf_abs | sign);
    return (vf)(0.5f * x * (1.0f + erf));
}
#else
DT_INLINE vf dt_act(vf v) { return v; }
#endif
