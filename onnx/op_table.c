/* The one table of the ONNX op types dtune knows (onnx/op_table.h): per op,
 * its shape rule (onnx/shape_ops.h) or why it has none, and how the untuned
 * listing (onnx/workloads_untuned.c) calls a node of it.  An op is added here
 * only. */
#include <stdlib.h>
#include <string.h>

#include "onnx/op_table.h"
#include "onnx/shape_ops.h"

static const char control[] = "control flow: its body is a subgraph, which dtune does not read";
static const char data_dependent[] = "its output shape depends on the element values";
static const char sequence[] = "sequences are not supported";

/* Rows: the op type, its shape rule or (none) why it has none, its kind in
 * the untuned listing, and for a quantized GEMM in a form dtune has no
 * dtype for why it stays untuned (onnx/op_table.h).  R: a shape rule; N:
 * none, and why (NULL: "this op type is not supported"); Q: a quantized
 * GEMM without a rule. */
#define R(op, rule, kind) {op, dt_ox_rule_##rule, NULL, DT_OX_KIND_##kind, NULL}
#define N(op, why, kind) {op, NULL, why, DT_OX_KIND_##kind, NULL}
#define Q(op, why) {op, NULL, NULL, DT_OX_KIND_OTHER, why}

/* The default domain ("" or "ai.onnx"), sorted by strcmp (bsearch). */
static const dt_ox_optype default_ops[] = {
    R("Abs", unary, ELEMENTWISE),
    R("Acos", unary, ELEMENTWISE),
    R("Acosh", unary, ELEMENTWISE),
    R("Add", elementwise, ELEMENTWISE),
    R("And", elementwise, ELEMENTWISE),
    R("ArgMax", arg_reduce, REDUCE),
    R("ArgMin", arg_reduce, REDUCE),
    R("Asin", unary, ELEMENTWISE),
    R("Asinh", unary, ELEMENTWISE),
    R("Atan", unary, ELEMENTWISE),
    R("Atanh", unary, ELEMENTWISE),
    R("AveragePool", pool, POOL),
    R("BatchNormalization", batch_norm, NORM),
    R("BitShift", elementwise, ELEMENTWISE),
    R("BitwiseAnd", elementwise, ELEMENTWISE),
    R("BitwiseNot", unary, ELEMENTWISE),
    R("BitwiseOr", elementwise, ELEMENTWISE),
    R("BitwiseXor", elementwise, ELEMENTWISE),
    R("Cast", cast, ELEMENTWISE),
    R("CastLike", cast, ELEMENTWISE),
    R("Ceil", unary, ELEMENTWISE),
    R("Celu", unary, ELEMENTWISE),
    R("Clip", unary, ELEMENTWISE),
    N("Compress", data_dependent, MOVEMENT),
    R("Concat", concat, MOVEMENT),
    N("ConcatFromSequence", sequence, OTHER),
    R("Constant", constant, CONSTANT),
    R("ConstantOfShape", constant_of_shape, OTHER),
    R("Conv", conv, CONV),
    R("ConvInteger", conv, CONV),
    R("ConvTranspose", conv_transpose, CONV),
    R("Cos", unary, ELEMENTWISE),
    R("Cosh", unary, ELEMENTWISE),
    R("CumSum", unary, REDUCE),
    R("DepthToSpace", depth_space, MOVEMENT),
    R("DequantizeLinear", dequantize, QUANT),
    R("Div", elementwise, ELEMENTWISE),
    R("Dropout", unary, MOVEMENT),
    R("DynamicQuantizeLinear", dynquant, QUANT),
    R("Elu", unary, ELEMENTWISE),
    R("Equal", elementwise, ELEMENTWISE),
    R("Erf", unary, ELEMENTWISE),
    R("Exp", unary, ELEMENTWISE),
    R("Expand", expand, MOVEMENT),
    R("Flatten", flatten, MOVEMENT),
    R("Floor", unary, ELEMENTWISE),
    R("GRU", rnn, OTHER),
    R("Gather", gather, MOVEMENT),
    R("GatherElements", gather_elements, MOVEMENT),
    R("GatherND", gather_nd, MOVEMENT),
    R("Gelu", unary, ELEMENTWISE),
    R("Gemm", gemm, OTHER),
    R("GlobalAveragePool", global_pool, POOL),
    R("GlobalLpPool", global_pool, POOL),
    R("GlobalMaxPool", global_pool, POOL),
    R("Greater", elementwise, ELEMENTWISE),
    R("GreaterOrEqual", elementwise, ELEMENTWISE),
    R("GroupNormalization", unary, NORM),
    R("HardSigmoid", unary, ELEMENTWISE),
    R("HardSwish", unary, ELEMENTWISE),
    R("Hardmax", unary, SOFTMAX),
    R("Identity", unary, MOVEMENT),
    N("If", control, OTHER),
    R("InstanceNormalization", unary, NORM),
    R("IsInf", unary, ELEMENTWISE),
    R("IsNaN", unary, ELEMENTWISE),
    R("LRN", unary, NORM),
    R("LSTM", rnn, OTHER),
    R("LayerNormalization", layer_norm, NORM),
    R("LeakyRelu", unary, ELEMENTWISE),
    R("Less", elementwise, ELEMENTWISE),
    R("LessOrEqual", elementwise, ELEMENTWISE),
    R("Log", unary, ELEMENTWISE),
    R("LogSoftmax", unary, SOFTMAX),
    N("Loop", control, OTHER),
    R("LpNormalization", unary, NORM),
    R("LpPool", pool, POOL),
    R("MatMul", matmul, OTHER),
    R("MatMulInteger", matmul, OTHER),
    R("Max", elementwise, ELEMENTWISE),
    R("MaxPool", pool, POOL),
    N("MaxRoiPool", NULL, POOL),
    R("Mean", elementwise, ELEMENTWISE),
    R("MeanVarianceNormalization", unary, NORM),
    R("Min", elementwise, ELEMENTWISE),
    R("Mish", unary, ELEMENTWISE),
    R("Mod", elementwise, ELEMENTWISE),
    R("Mul", elementwise, ELEMENTWISE),
    R("Neg", unary, ELEMENTWISE),
    N("NonMaxSuppression", data_dependent, OTHER),
    N("NonZero", data_dependent, OTHER),
    R("Not", unary, ELEMENTWISE),
    R("OneHot", one_hot, MOVEMENT),
    R("Or", elementwise, ELEMENTWISE),
    R("PRelu", elementwise, ELEMENTWISE),
    R("Pad", pad, MOVEMENT),
    R("Pow", elementwise, ELEMENTWISE),
    R("QLinearConv", conv, CONV),
    /* a rule, and a quantized GEMM dtune has no dtype for */
    {"QLinearMatMul", dt_ox_rule_matmul, NULL, DT_OX_KIND_OTHER,
     "its u8 output is requantized: dtune's int8 writes f32"},
    R("QuantizeLinear", quantize, QUANT),
    R("RNN", rnn, OTHER),
    R("Range", range, SHAPE),
    R("Reciprocal", unary, ELEMENTWISE),
    R("ReduceL1", reduce, REDUCE),
    R("ReduceL2", reduce, REDUCE),
    R("ReduceLogSum", reduce, REDUCE),
    R("ReduceLogSumExp", reduce, REDUCE),
    R("ReduceMax", reduce, REDUCE),
    R("ReduceMean", reduce, REDUCE),
    R("ReduceMin", reduce, REDUCE),
    R("ReduceProd", reduce, REDUCE),
    R("ReduceSum", reduce, REDUCE),
    R("ReduceSumSquare", reduce, REDUCE),
    R("Relu", unary, ELEMENTWISE),
    R("Reshape", reshape, MOVEMENT),
    R("Resize", resize, MOVEMENT),
    R("Round", unary, ELEMENTWISE),
    N("Scan", control, OTHER),
    R("ScatterElements", unary, MOVEMENT),
    R("ScatterND", scatter_nd, MOVEMENT),
    R("Selu", unary, ELEMENTWISE),
    N("SequenceAt", sequence, OTHER),
    N("SequenceConstruct", sequence, OTHER),
    N("SequenceEmpty", sequence, OTHER),
    N("SequenceErase", sequence, OTHER),
    N("SequenceInsert", sequence, OTHER),
    N("SequenceLength", sequence, OTHER),
    N("SequenceMap", control, OTHER),
    R("Shape", shape, OTHER),
    R("Shrink", unary, ELEMENTWISE),
    R("Sigmoid", unary, ELEMENTWISE),
    R("Sign", unary, ELEMENTWISE),
    R("Sin", unary, ELEMENTWISE),
    R("Sinh", unary, ELEMENTWISE),
    R("Size", size, OTHER),
    R("Slice", slice, MOVEMENT),
    R("Softmax", unary, SOFTMAX),
    R("Softplus", unary, ELEMENTWISE),
    R("Softsign", unary, ELEMENTWISE),
    R("SpaceToDepth", depth_space, MOVEMENT),
    R("Split", split, MOVEMENT),
    N("SplitToSequence", sequence, OTHER),
    R("Sqrt", unary, ELEMENTWISE),
    R("Squeeze", squeeze, MOVEMENT),
    N("StringSplit", data_dependent, OTHER),
    R("Sub", elementwise, ELEMENTWISE),
    R("Sum", elementwise, ELEMENTWISE),
    R("Tan", unary, ELEMENTWISE),
    R("Tanh", unary, ELEMENTWISE),
    R("ThresholdedRelu", unary, ELEMENTWISE),
    R("Tile", tile, MOVEMENT),
    R("TopK", topk, REDUCE),
    R("Transpose", transpose, MOVEMENT),
    R("Trilu", unary, MOVEMENT),
    N("Unique", data_dependent, OTHER),
    R("Unsqueeze", unsqueeze, MOVEMENT),
    N("Upsample", NULL, MOVEMENT),
    R("Where", where, ELEMENTWISE),
    R("Xor", elementwise, ELEMENTWISE),
};

/* com.microsoft: the contrib ops onnxruntime's optimiser writes, sorted. */
static const dt_ox_optype ms_ops[] = {
    R("BiasGelu", bias_act, ELEMENTWISE),
    R("DynamicQuantizeLSTM", rnn, OTHER),
    Q("DynamicQuantizeMatMul",
      "a fused dynamic-quantization MatMul: dtune takes its int8 from the "
      "DynamicQuantizeLinear → MatMulInteger pattern"),
    R("FastGelu", bias_act, ELEMENTWISE),
    Q("GatherBlockQuantized", "a block-quantized embedding table: not a GEMM"),
    R("Gelu", bias_act, ELEMENTWISE),
    R("LayerNormalization", layer_norm, NORM),
    Q("MatMulBnb4", "4-bit weights (bitsandbytes NF4/FP4): no dtune dtype"),
    Q("MatMulFpQ4", "4-bit weights: no dtune dtype"),
    Q("MatMulIntegerToFloat",
      "a fused MatMulInteger with dequantization: dtune takes its int8 from the "
      "MatMulInteger → Cast → Mul pattern"),
    Q("MatMulNBits", "4-bit weights: no dtune dtype"),
    Q("QOrderedMatMul", "int8 in a CUDA-ordered layout: no dtune dtype"),
    R("QuickGelu", bias_act, ELEMENTWISE),
    R("SimplifiedLayerNormalization", layer_norm, NORM),
    R("SkipLayerNormalization", skip_layer_norm, NORM),
    R("SkipSimplifiedLayerNormalization", skip_layer_norm, NORM),
};

#undef R
#undef N
#undef Q

static int cmp_op(const void *key, const void *row)
{
    return strcmp((const char *)key, ((const dt_ox_optype *)row)->op);
}

const dt_ox_optype *dt_ox_optype_find(const char *domain, const char *op_type)
{
    if (!domain[0] || strcmp(domain, "ai.onnx") == 0)
        return bsearch(op_type, default_ops, sizeof default_ops / sizeof default_ops[0],
                       sizeof default_ops[0], cmp_op);
    if (strcmp(domain, "com.microsoft") == 0)
        return bsearch(op_type, ms_ops, sizeof ms_ops / sizeof ms_ops[0], sizeof ms_ops[0],
                       cmp_op);
    return NULL;
}

dt_ox_rule dt_ox_rule_find(const char *domain, const char *op_type, const char **why)
{
    if (domain[0] && strcmp(domain, "ai.onnx") != 0 && strcmp(domain, "com.microsoft") != 0) {
        *why = NULL; /* the caller names the domain */
        return NULL;
    }
    const dt_ox_optype *op = dt_ox_optype_find(domain, op_type);
    if (op && op->rule)
        return op->rule;
    *why = op && op->norule ? op->norule : "this op type is not supported";
    return NULL;
}
