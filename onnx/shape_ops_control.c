/* Shape rules of the control-flow ops whose bodies the reader flattened
 * (onnx/graph.h, "Subgraphs"): If, Loop and Scan.  The driver (shape.c)
 * runs such a node in two steps.
 *
 * Entering: from the node's own inputs, the shapes of its bodies' inputs —
 *   Loop: iteration_num (int64 scalar), cond (bool scalar), then each
 *         carried value shaped like its initial value v_initial;
 *   Scan: each state shaped like its initial state, then each scan input
 *         with its scan axis (scan_input_axes, default 0) removed;
 *   If:   none;
 * and how many times the body runs per run of the node: a Loop's trip count
 * M when its value is known (a constant, or an expression of the variables
 * such as Gather(Shape(x), 1)), a Scan's scanned length.
 *
 * Leaving: from the bodies' outputs, the node's own outputs —
 *   If:   a branch output's shape when both branches agree, the taken one's
 *         when --branch dropped the other or the condition is a known
 *         constant (then the other never runs);
 *   Loop: each final carried value shaped like the body's, each scan
 *         output [M] + the body's;
 *   Scan: each final state like the body's, each scan output the body's
 *         with the length inserted at its scan_output_axes entry.
 * An output left unset (branches that disagree, a carried value whose shape
 * changes from one iteration to the next, an unknown trip count) takes its
 * shape from value_info, else is unknown: the driver does that, with o->why
 * or o->unk_in as the reason a tuned op reading it would report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "onnx/shape_ops.h"
#include "shape/model.h"

/* Runs per run of a body the count of a spec op takes: a trip count
 * outside 1..this is counted once. */
#define MAX_TRIP DT_MODEL_COUNT_MAX

static int is(const ox_node *c, const char *op) { return strcmp(c->n->op_type, op) == 0; }

static const dt_ox_body *body_of(const ox_node *c, int b)
{
    return &c->g->bodies[c->n->bodies[b]];
}

/* The tensor of name, NULL when it has none. */
static ox_tensor *tensor(ox_node *c, const char *name)
{
    int ti = dt_ox_find(c->s, name);
    return ti >= 0 ? &c->s->t[ti] : NULL;
}

static void unknown_from(ox_node *c, dt_ox_control_out *o, const ox_tensor *t)
{
    o->unk_in = (int)(t - c->s->t);
}

/* Output k gets t's type and dims with one more dim d at axis (0..rank). */
static int set_inserted(ox_node *c, int k, const ox_tensor *t, int axis, const sym *d)
{
    const sym *dims[DT_OX_MAX_RANK + 1];
    int r = t->pub.rank;
    if (r + 1 > DT_OX_MAX_RANK)
        return dt_ox_fail(c, "output '%s' would have rank %d (at most %d)", c->n->outputs[k], r + 1,
                          DT_OX_MAX_RANK);
    for (int a = 0, j = 0; a <= r; a++)
        dims[a] = a == axis ? d : t->dims[j++];
    return dt_ox_set_out(c, k, t->pub.elem_type, r + 1, dims);
}

/* Entry k of attribute name (a list of axes), def when it is absent. */
static int axis_attr(ox_node *c, const char *name, int k, int64_t *axis)
{
    const int64_t *v;
    int n;
    int rc = dt_ox_attr_ints(c, name, &v, &n);
    if (rc)
        return rc;
    *axis = 0;
    if (n >= 0 && k >= n)
        return dt_ox_fail(c, "%s has %d entries, entry %d is needed", name, n, k);
    if (n >= 0)
        *axis = v[k];
    return 0;
}

/* The trip count t (NULL: unknown, why already said) when it is one dtune
 * counts by: 1 to MAX_TRIP runs at every shape; else o->once says why not. */
static void take_trip(ox_node *c, dt_ox_control_out *o, const sym *t, const char *what)
{
    int64_t lo, hi, v;
    char s[128];
    if (!t)
        return;
    if (dt_ox_sym_is_const(t, &v) && v == INT64_MAX) /* torch's while loop */
        snprintf(o->once, sizeof o->once, "%s is INT64_MAX: it runs while its condition holds",
                 what);
    else if (dt_ox_sym_is_const(t, &v) && (v < 1 || v > MAX_TRIP))
        snprintf(o->once, sizeof o->once, "%s is %lld, outside 1..%d", what, (long long)v,
                 MAX_TRIP);
    else if (!dt_ox_sym_bounds(t, &lo, &hi) || lo < 1 || hi > MAX_TRIP)
        snprintf(o->once, sizeof o->once, "%s, %s, may be below 1 or above %d", what,
                 dt_ox_str(c, t, s, sizeof s), MAX_TRIP);
    else
        o->trip = t;
}

static int enter_loop(ox_node *c, dt_ox_control_out *o)
{
    const dt_ox_body *b = body_of(c, 0);
    const sym *none[1] = {NULL};
    int rc = dt_ox_set_out(c, b->in_at, DT_OX_INT64, 0, none);
    if (!rc)
        rc = dt_ox_set_out(c, b->in_at + 1, DT_OX_BOOL, 0, none);
    for (int j = 0; !rc && j + 2 < c->nin; j++) {
        ox_tensor *v = c->in[2 + j];
        if (v && v->known)
            rc = dt_ox_same_shape(c, b->in_at + 2 + j, v);
        else if (v)
            unknown_from(c, o, v);
    }
    if (rc)
        return rc;
    ox_tensor *m = c->nin > 0 ? c->in[0] : NULL;
    if (!m)
        snprintf(o->once, sizeof o->once, "it has no trip count M (it runs while its condition "
                                          "holds)");
    else if (m->nv != 1)
        snprintf(o->once, sizeof o->once, "its trip count M ('%.100s') is not known: neither a "
                                          "constant nor an expression of the variables",
                 m->pub.name);
    else
        take_trip(c, o, m->vals[0], "its trip count M");
    ox_tensor *cond = c->nin > 1 ? c->in[1] : NULL;
    int64_t v;
    o->upper_bound = o->trip && cond &&
                     !(cond->nv == 1 && dt_ox_sym_is_const(cond->vals[0], &v) && v != 0);
    return 0;
}

static int enter_scan(ox_node *c, dt_ox_control_out *o)
{
    const dt_ox_body *b = body_of(c, 0);
    int64_t m;
    int rc = dt_ox_attr_int(c, "num_scan_inputs", 0, &m);
    if (rc)
        return rc;
    int states = c->nin - (int)m; /* the reader checked 1 <= m <= nin */
    for (int j = 0; j < c->nin && !rc; j++) {
        ox_tensor *x = c->in[j];
        if (!x || !x->known) {
            if (x)
                unknown_from(c, o, x);
            if (j == states)
                snprintf(o->once, sizeof o->once, "the length of its scanned input is not known");
            continue;
        }
        if (j < states) {
            rc = dt_ox_same_shape(c, b->in_at + j, x);
            continue;
        }
        int64_t axis;
        int a;
        if ((rc = axis_attr(c, "scan_input_axes", j - states, &axis)) ||
            (rc = dt_ox_axis(c, axis, x->pub.rank, &a)))
            break;
        const sym *dims[DT_OX_MAX_RANK];
        for (int i = 0, k = 0; i < x->pub.rank; i++)
            if (i != a)
                dims[k++] = x->dims[i];
        rc = dt_ox_set_out(c, b->in_at + j, x->pub.elem_type, x->pub.rank - 1, dims);
        if (!rc && j == states)
            take_trip(c, o, x->dims[a], "its scanned length");
    }
    return rc;
}

int dt_ox_control_enter(ox_node *c, dt_ox_control_out *o)
{
    if (is(c, "Loop"))
        return enter_loop(c, o);
    if (is(c, "Scan"))
        return enter_scan(c, o);
    return 0; /* an If's branches have no inputs */
}

/* 1 when a and b have the same type and dims. */
static int same_shape(ox_node *c, const ox_tensor *a, const ox_tensor *b)
{
    if (a->pub.rank != b->pub.rank || a->pub.elem_type != b->pub.elem_type)
        return 0;
    for (int i = 0; i < a->pub.rank; i++)
        if (!dt_ox_equal(c, a->dims[i], b->dims[i]))
            return 0;
    return 1;
}

int dt_ox_if_decided(const ox_node *c)
{
    const ox_tensor *cond = c->in[0];
    int64_t v;
    if (!is(c, "If") || c->n->nbodies != 2 || !body_of(c, 0)->taken || !body_of(c, 1)->taken ||
        !cond || !cond->known || cond->nv != 1 || !dt_ox_sym_is_const(cond->vals[0], &v))
        return -1;
    return v ? 0 : 1;
}

static int leave_if(ox_node *c, dt_ox_control_out *o)
{
    const dt_ox_body *taken[2];
    int nt = 0;
    for (int b = 0; b < c->n->nbodies; b++)
        if (body_of(c, b)->taken)
            taken[nt++] = body_of(c, b);
    ox_tensor *cond = c->in[0];
    int cond_const = cond && cond->known && cond->pub.is_const;
    /* A condition known at every shape (torch's "if x.dim() == 2" around an
     * LSTM, folded from Shape/Size) runs one branch only: its outputs are
     * the If's, whatever the other branch would give. */
    const int runs = dt_ox_if_decided(c);
    if (runs >= 0) {
        taken[0] = body_of(c, runs);
        nt = 1;
    }
    for (int k = 0; k < c->nout; k++) {
        ox_tensor *t[2] = {NULL, NULL};
        int ok = 1, all_const = cond_const;
        for (int j = 0; j < nt && ok; j++) {
            t[j] = c->in[taken[j]->out_at + k];
            if (!t[j] || !t[j]->known) {
                if (t[j])
                    unknown_from(c, o, t[j]);
                ok = 0;
            } else {
                all_const &= t[j]->pub.is_const;
            }
        }
        if (!ok || !t[0])
            continue;
        if (nt == 2 && !same_shape(c, t[0], t[1])) {
            o->why = "its branches give it different shapes";
            continue;
        }
        int rc = dt_ox_same_shape(c, k, t[0]);
        if (!rc && (nt == 1 || (t[0]->nv >= 0 && t[0]->nv == t[1]->nv &&
                                !memcmp(t[0]->vals, t[1]->vals, (size_t)t[0]->nv * sizeof(sym *)))))
            rc = dt_ox_pass_values(c, k, t[0]);
        if (rc)
            return rc;
        dt_ox_set_const(c, k, all_const);
    }
    return 0;
}

/* The final carried values (Loop) or states (Scan): outputs [0, n) from the
 * body's outputs from out_at and inputs from in_at. */
static int leave_carried(ox_node *c, dt_ox_control_out *o, int n, int out_at, int in_at)
{
    for (int j = 0; j < n; j++) {
        ox_tensor *vo = c->in[out_at + j];
        ox_tensor *vi = tensor(c, c->n->outputs[in_at + j]);
        if (!vo || !vo->known) {
            if (vo)
                unknown_from(c, o, vo);
            continue;
        }
        if (vi && vi->known && !same_shape(c, vi, vo)) {
            o->why = "a carried value changes shape from one iteration to the next";
            o->varying = 1;
            continue;
        }
        int rc = dt_ox_same_shape(c, j, vo);
        if (rc)
            return rc;
        dt_ox_set_const(c, j, 0);
    }
    return 0;
}

/* The scan outputs: outputs [first, first + n) from the body's outputs from
 * out_at, the trip count inserted at axis 0 (Loop) or scan_output_axes. */
static int leave_scanned(ox_node *c, dt_ox_control_out *o, int first, int n, int out_at)
{
    for (int j = 0; j < n; j++) {
        ox_tensor *so = c->in[out_at + j];
        if (!so || !so->known) {
            if (so)
                unknown_from(c, o, so);
            continue;
        }
        if (!o->trip) {
            o->why = is(c, "Loop") ? "its trip count is not known"
                                   : "the length of its scanned input is not known";
            continue;
        }
        int64_t axis = 0;
        int a = 0;
        int rc = 0;
        if (is(c, "Scan") && ((rc = axis_attr(c, "scan_output_axes", j, &axis)) ||
                              (rc = dt_ox_axis(c, axis, so->pub.rank + 1, &a))))
            return rc;
        if ((rc = set_inserted(c, first + j, so, a, o->trip)))
            return rc;
        dt_ox_set_const(c, first + j, 0);
    }
    return 0;
}

int dt_ox_control_exit(ox_node *c, dt_ox_control_out *o)
{
    if (is(c, "If"))
        return leave_if(c, o);
    const dt_ox_body *b = body_of(c, 0);
    const dt_ox_node *n = c->n;
    if (is(c, "Loop")) {
        int carried = n->nin_own - 2;
        int rc = leave_carried(c, o, carried, b->out_at + 1, b->in_at + 2);
        return rc ? rc : leave_scanned(c, o, carried, n->nout_own - carried, b->out_at + 1 + carried);
    }
    int64_t m;
    int rc = dt_ox_attr_int(c, "num_scan_inputs", 0, &m);
    int states = n->nin_own - (int)m;
    if (!rc)
        rc = leave_carried(c, o, states, b->out_at, b->in_at);
    return rc ? rc : leave_scanned(c, o, states, n->nout_own - states, b->out_at + states);
}

/* ---- the note ---------------------------------------------------------------- */

static void body_text(dt_strbuf *sb, const dt_ox_body *b)
{
    dt_sb_appendf(sb, "%s (%d node%s)", b->attr, b->nnodes, b->nnodes == 1 ? "" : "s");
}

/* x as text, cut to 120 bytes. */
static void expr_text(const dt_expr *x, char *buf, size_t n)
{
    char full[DT_KEY_MAX];
    if (dt_expr_print(x, full, sizeof full) >= sizeof full || strlen(full) > 120)
        snprintf(buf, n, "%.117s...", full);
    else
        snprintf(buf, n, "%s", full);
}

char *dt_ox_control_note(const ox_node *c, const dt_expr *const *repeat, const char *const *once,
                         int upper_bound, int varying, const char *how)
{
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_append(&sb, "holds ");
    if (is(c, "If")) {
        const dt_ox_body *t = body_of(c, 0), *e = body_of(c, 1);
        char rep[128];
        if (repeat[0])
            expr_text(repeat[0], rep, sizeof rep);
        if (t->taken && e->taken) {
            body_text(&sb, t);
            dt_sb_append(&sb, " and ");
            body_text(&sb, e);
            if (repeat[0]) /* in a loop: each as often as the If runs */
                dt_sb_appendf(&sb, ", each counted %s times (as the If runs)", rep);
            else
                dt_sb_append(&sb, ", each counted once");
        } else {
            const dt_ox_body *in = t->taken ? t : e, *out = t->taken ? e : t;
            body_text(&sb, in);
            dt_sb_append(&sb, ", taken (--branch); ");
            body_text(&sb, out);
            dt_sb_append(&sb, " not taken, dropped");
        }
        const int runs = dt_ox_if_decided(c);
        if (runs >= 0) {
            const char *path; /* the If's, as --branch names it */
            const size_t len = dt_ox_if_path(c->g, c->idx, &path);
            dt_sb_appendf(&sb, "; its condition is always %s: only %s runs (--branch %.*s=%s)",
                          runs ? "false" : "true", runs ? e->attr : t->attr, (int)len, path,
                          runs ? "else" : "then");
        }
    } else {
        const dt_ox_body *b = body_of(c, 0);
        body_text(&sb, b);
        char rep[128];
        if (once[0] && once[0][0]) {
            dt_sb_appendf(&sb, ", counted once: %s", once[0]);
        } else if (repeat[0]) {
            expr_text(repeat[0], rep, sizeof rep);
            dt_sb_appendf(&sb, ", run %s times%s", rep,
                          upper_bound ? " (at most: its condition may end it sooner)" : "");
        } else {
            dt_sb_append(&sb, ", run once");
        }
        if (varying)
            dt_sb_append(&sb, "; a carried value changes shape from one iteration to the next: "
                              "the body's shapes are its first iteration's");
    }
    if (how)
        dt_sb_appendf(&sb, "; %s", how);
    return dt_sb_take(&sb);
}
