/* The sub-pixel decomposition of a transposed convolution
 * (microkernel/conv2d_phases.h).  Along one axis (input extent I, window R,
 * stride s, pads p0 and p1, dilation d, output extent O): output o = q·s +
 * ph receives input i through tap r when i·s − p0 + r·d = o, i.e. when
 * r·d ≡ ph + p0 (mod s).  With g = gcd(d, s) those taps are r0, r0 + s/g,
 * r0 + 2s/g, … (r0 the least), and tap r0 + m·s/g reads i = q + e − m·d/g,
 * e = (ph + p0 − r0·d)/s.  Reversing the taps (window position j = taps − 1
 * − m) makes it a forward convolution at stride 1, dilation d/g and top pad
 * P = (taps − 1)·d/g − e: i = q − P + j·d/g.  A negative pad crops the
 * input instead (its first pixels are never read), and so does a negative
 * bottom pad. */
#include "microkernel/conv2d_phases.h"

#include <string.h>

#include "common/check.h"

static int64_t gcd(int64_t a, int64_t b)
{
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t mod(int64_t a, int64_t m) { return (a % m + m) % m; }

/* The phases' stride along an axis of output extent out: its own, or over
 * one input pixel the output's extent (a DCGAN's 4×4 of a 1×1 latent:
 * every output pixel one phase of one tap, so all of them merge into one
 * GEMM instead of a convolution that is mostly padding). */
static int64_t phase_stride(int64_t in, int64_t s, int64_t out)
{
    return in == 1 && out > 0 ? out : s;
}

/* The phase ph of one axis (input extent in, window win, phases' stride s,
 * top pad p0, dilation d, output extent out). */
static dt_conv_phase_axis axis_phase(int64_t in, int64_t win, int64_t s, int64_t p0, int64_t d,
                                     int64_t out, int64_t ph)
{
    dt_conv_phase_axis a = {.first = ph, .stride = s,
                            .count = ph < out ? (out - ph + s - 1) / s : 0};
    const int64_t g = gcd(d, s), step = s / g, dil = d / g;
    int64_t r0 = -1;
    for (int64_t r = 0; r < win && r < step && r0 < 0; r++)
        if (mod(r * d - ph - p0, s) == 0)
            r0 = r;
    if (r0 >= 0) {
        a.taps = (win - r0 + step - 1) / step;
        const int64_t e = (ph + p0 - r0 * d) / s; /* exact */
        const int64_t top = (a.taps - 1) * dil - e;
        const int64_t bottom = a.count - in - top + dil * (a.taps - 1);
        a.crop = top < 0 ? -top : 0;
        a.pad0 = top < 0 ? 0 : top;
        a.used = in - a.crop + (bottom < 0 ? bottom : 0);
        a.pad1 = bottom < 0 ? 0 : bottom;
        a.r_last = r0 + (a.taps - 1) * step;
        a.r_step = step;
        a.dil = dil;
        if (a.used >= 1)
            return a;
    }
    /* no input lands on the phase: one zero tap over pixels that exist */
    a.taps = 1;
    a.r_last = -1;
    a.r_step = 0;
    a.dil = 1;
    a.crop = 0;
    a.pad0 = 0;
    a.used = in < a.count ? in : a.count;
    a.pad1 = a.count - a.used;
    return a;
}

int64_t dt_conv_phase_count(const dt_conv_geom *c)
{
    DT_ASSERT(c->transpose, "only a transposed convolution has phases");
    int64_t oh, ow;
    dt_conv_geom_out(c, &oh, &ow);
    return phase_stride(c->h, c->stride, oh) * phase_stride(c->w, c->stride_w, ow);
}

void dt_conv_phase_at(const dt_conv_geom *c, int64_t p, dt_conv_phase *ph)
{
    DT_ASSERT(p >= 0 && p < dt_conv_phase_count(c), "a phase of the convolution");
    int64_t oh, ow;
    dt_conv_geom_out(c, &oh, &ow);
    const int64_t sh = phase_stride(c->h, c->stride, oh), sw = phase_stride(c->w, c->stride_w, ow);
    ph->h = axis_phase(c->h, c->r, sh, c->pad, c->dilation, oh, p / sw);
    ph->w = axis_phase(c->w, c->s, sw, c->pad_l, c->dilation_w, ow, p % sw);
}

static int same_axis(const dt_conv_phase_axis *a, const dt_conv_phase_axis *b)
{
    /* one tap's dilation is no matter */
    return a->count == b->count && a->taps == b->taps && (a->taps == 1 || a->dil == b->dil) &&
           a->pad0 == b->pad0 && a->pad1 == b->pad1 && a->crop == b->crop && a->used == b->used;
}

int dt_conv_phases_merge(const dt_conv_geom *c)
{
    if (c->groups != 1)
        return 0;
    dt_conv_phase first, ph;
    dt_conv_phase_at(c, 0, &first);
    for (int64_t p = 1; p < dt_conv_phase_count(c); p++) {
        dt_conv_phase_at(c, p, &ph);
        if (!same_axis(&first.h, &ph.h) || !same_axis(&first.w, &ph.w))
            return 0;
    }
    return 1;
}

void dt_conv_phase_geom(const dt_conv_geom *c, const dt_conv_phase *ph, int64_t *geom)
{
    const dt_conv_geom f = {.n = 1, .h = ph->h.used, .w = ph->w.used, .c = c->c, .k = c->k,
                            .r = ph->h.taps, .s = ph->w.taps, .stride = 1, .pad = ph->h.pad0,
                            .dilation = ph->h.dil, .groups = c->groups, .stride_w = 1,
                            .dilation_w = ph->w.dil, .pad_l = ph->w.pad0, .pad_b = ph->h.pad1,
                            .pad_r = ph->w.pad1};
    dt_conv_geom_values(&f, geom);
}

void dt_conv_phase_weights(const dt_conv_geom *c, const dt_conv_phase *ph, const void *W,
                           size_t esize, void *Wp)
{
    const int64_t cg = c->c / c->groups, th = ph->h.taps, tw = ph->w.taps;
    const size_t run = (size_t)cg * esize;
    const int zero = ph->h.r_last < 0 || ph->w.r_last < 0;
    char *dst = Wp;
    for (int64_t k = 0; k < c->k; k++)
        for (int64_t j = 0; j < th; j++)
            for (int64_t jw = 0; jw < tw; jw++, dst += run) {
                if (zero) {
                    memset(dst, 0, run);
                    continue;
                }
                const int64_t r = ph->h.r_last - j * ph->h.r_step;
                const int64_t s = ph->w.r_last - jw * ph->w.r_step;
                DT_ASSERT(r >= 0 && r < c->r && s >= 0 && s < c->s,
                          "a phase's taps are taps of the window");
                memcpy(dst, (const char *)W + (size_t)(((k * c->r + r) * c->s + s) * cg) * esize,
                       run);
            }
}
