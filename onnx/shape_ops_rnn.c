/* Shape rules of the recurrent ops (speech and seq2seq models, paddle2onnx
 * OCR heads): LSTM, GRU, RNN.  X is [seq, batch, input] (layout 0) or
 * [batch, seq, input] (layout 1, opset 14+); the outputs are
 *   Y    [seq, num_directions, batch, hidden]  (layout 1: [batch, seq, num_directions, hidden])
 *   Y_h  [num_directions, batch, hidden]       (layout 1: [batch, num_directions, hidden])
 *   Y_c  as Y_h (LSTM only)
 * with num_directions 2 for direction "bidirectional", else 1, and hidden
 * the hidden_size attribute (or, without it, the last dim of R
 * [num_directions, gates*hidden, hidden]).  onnxruntime's com.microsoft
 * DynamicQuantizeLSTM is an LSTM whose int8 weights are stored transposed,
 * W [num_directions, input, 4*hidden] and R [num_directions, hidden,
 * 4*hidden]; its outputs are the LSTM's.  An output whose name is empty is
 * omitted and gets nothing. */
#include <string.h>

#include "onnx/shape_ops.h"

static int is(const ox_node *c, const char *op)
{
    return strcmp(c->n->op_type, op) == 0;
}

int dt_ox_rule_rnn(ox_node *c)
{
    ox_tensor *x, *w, *r;
    int64_t hidden, layout;
    const char *dir;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &w)) || (rc = dt_ox_need(c, 2, &r)) ||
        (rc = dt_ox_attr_int(c, "hidden_size", -1, &hidden)) ||
        (rc = dt_ox_attr_int(c, "layout", 0, &layout)) ||
        (rc = dt_ox_attr_str(c, "direction", "forward", &dir)))
        return rc;
    const int wt = is(c, "DynamicQuantizeLSTM"); /* weights [dirs, K, gates*hidden] */
    int gates = is(c, "LSTM") || wt ? 4 : is(c, "GRU") ? 3 : 1;
    int ndir;
    if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0)
        ndir = 1;
    else if (strcmp(dir, "bidirectional") == 0)
        ndir = 2;
    else
        return dt_ox_fail(c, "direction '%.40s' is not forward, reverse or bidirectional", dir);
    if (layout != 0 && layout != 1)
        return dt_ox_fail(c, "layout %lld is not 0 or 1", (long long)layout);
    if (x->pub.rank != 3)
        return dt_ox_fail(c, "X has rank %d, 3 is needed", x->pub.rank);
    if (w->pub.rank != 3 || r->pub.rank != 3)
        return dt_ox_fail(c, "W and R have ranks %d and %d, 3 is needed", w->pub.rank, r->pub.rank);
    char s1[128], s2[128];
    const sym *nd = dt_ox_sym_const(c->sc, ndir), *hs;
    if (hidden < 0) { /* not given: R's hidden dim */
        hs = r->dims[wt ? 1 : 2];
        if (!dt_ox_sym_is_const(hs, &hidden))
            return dt_ox_fail(c, "without hidden_size, R's hidden dim (%s) must be a constant",
                              dt_ox_str(c, hs, s1, sizeof s1));
    }
    if (hidden < 1 || hidden > OX_DIM_MAX)
        return dt_ox_fail(c, "hidden_size %lld is not a valid dim", (long long)hidden);
    hs = dt_ox_sym_const(c->sc, hidden);
    /* the weights must agree: W [ndir, gates*hidden, input], R [ndir, gates*hidden, hidden]
     * (transposed: [ndir, input, gates*hidden], [ndir, hidden, gates*hidden]) */
    const sym *gh = dt_ox_sym_const(c->sc, gates * hidden);
    const sym *want_n[] = {nd, gh, x->dims[2], nd, gh, hs};
    const sym *want_t[] = {nd, x->dims[2], gh, nd, hs, gh};
    const sym *const *want = wt ? want_t : want_n;
    const ox_tensor *wr[] = {w, w, w, r, r, r};
    for (int i = 0; i < 6; i++)
        if (!dt_ox_equal(c, wr[i]->dims[i % 3], want[i]))
            return dt_ox_fail(c, "dim %d of %s is %s, %s expected (direction %s, hidden_size %lld)",
                              i % 3, i < 3 ? "W" : "R",
                              dt_ox_str(c, wr[i]->dims[i % 3], s1, sizeof s1),
                              dt_ox_str(c, want[i], s2, sizeof s2), dir, (long long)hidden);
    const sym *seq = x->dims[layout ? 1 : 0], *batch = x->dims[layout ? 0 : 1];
    const sym *y[4], *yh[3];
    if (layout) {
        y[0] = batch, y[1] = seq, y[2] = nd, y[3] = hs;
        yh[0] = batch, yh[1] = nd, yh[2] = hs;
    } else {
        y[0] = seq, y[1] = nd, y[2] = batch, y[3] = hs;
        yh[0] = nd, yh[1] = batch, yh[2] = hs;
    }
    int type = x->pub.elem_type;
    if ((rc = dt_ox_set_out(c, 0, type, 4, y)) || (rc = dt_ox_set_out(c, 1, type, 3, yh)))
        return rc;
    if (gates == 4)
        rc = dt_ox_set_out(c, 2, type, 3, yh);
    else if (c->nout > 2 && c->out[2])
        return dt_ox_fail(c, "a %s has two outputs (Y, Y_h), this one has %d", c->n->op_type,
                          c->nout);
    return rc;
}
