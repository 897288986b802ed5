/* Which shape rule each op type has (onnx/shape_ops.h), and why the ops
 * without one have none. */
#include <stdlib.h>
#include <string.h>

#include "onnx/shape_ops.h"

typedef struct {
    const char *op;
    ox_rule rule;
} entry;

/* Sorted by strcmp (bsearch). */
static const entry default_ops[] = {
    {"Abs", dt_ox_rule_unary},
    {"Acos", dt_ox_rule_unary},
    {"Acosh", dt_ox_rule_unary},
    {"Add", dt_ox_rule_elementwise},
    {"And", dt_ox_rule_elementwise},
    {"ArgMax", dt_ox_rule_arg_reduce},
    {"ArgMin", dt_ox_rule_arg_reduce},
    {"Asin", dt_ox_rule_unary},
    {"Asinh", dt_ox_rule_unary},
    {"Atan", dt_ox_rule_unary},
    {"Atanh", dt_ox_rule_unary},
    {"AveragePool", dt_ox_rule_pool},
    {"BatchNormalization", dt_ox_rule_batch_norm},
    {"BitShift", dt_ox_rule_elementwise},
    {"BitwiseAnd", dt_ox_rule_elementwise},
    {"BitwiseNot", dt_ox_rule_unary},
    {"BitwiseOr", dt_ox_rule_elementwise},
    {"BitwiseXor", dt_ox_rule_elementwise},
    {"Cast", dt_ox_rule_cast},
    {"CastLike", dt_ox_rule_cast},
    {"Ceil", dt_ox_rule_unary},
    {"Celu", dt_ox_rule_unary},
    {"Clip", dt_ox_rule_unary},
    {"Concat", dt_ox_rule_concat},
    {"Constant", dt_ox_rule_constant},
    {"ConstantOfShape", dt_ox_rule_constant_of_shape},
    {"Conv", dt_ox_rule_conv},
    {"ConvInteger", dt_ox_rule_conv},
    {"ConvTranspose", dt_ox_rule_conv_transpose},
    {"Cos", dt_ox_rule_unary},
    {"Cosh", dt_ox_rule_unary},
    {"CumSum", dt_ox_rule_unary},
    {"DepthToSpace", dt_ox_rule_depth_space},
    {"DequantizeLinear", dt_ox_rule_dequantize},
    {"Div", dt_ox_rule_elementwise},
    {"Dropout", dt_ox_rule_unary},
    {"DynamicQuantizeLinear", dt_ox_rule_dynquant},
    {"Elu", dt_ox_rule_unary},
    {"Equal", dt_ox_rule_elementwise},
    {"Erf", dt_ox_rule_unary},
    {"Exp", dt_ox_rule_unary},
    {"Expand", dt_ox_rule_expand},
    {"Flatten", dt_ox_rule_flatten},
    {"Floor", dt_ox_rule_unary},
    {"GRU", dt_ox_rule_rnn},
    {"Gather", dt_ox_rule_gather},
    {"GatherElements", dt_ox_rule_gather_elements},
    {"GatherND", dt_ox_rule_gather_nd},
    {"Gelu", dt_ox_rule_unary},
    {"Gemm", dt_ox_rule_gemm},
    {"GlobalAveragePool", dt_ox_rule_global_pool},
    {"GlobalLpPool", dt_ox_rule_global_pool},
    {"GlobalMaxPool", dt_ox_rule_global_pool},
    {"Greater", dt_ox_rule_elementwise},
    {"GreaterOrEqual", dt_ox_rule_elementwise},
    {"GroupNormalization", dt_ox_rule_unary},
    {"HardSigmoid", dt_ox_rule_unary},
    {"HardSwish", dt_ox_rule_unary},
    {"Hardmax", dt_ox_rule_unary},
    {"Identity", dt_ox_rule_unary},
    {"InstanceNormalization", dt_ox_rule_unary},
    {"IsInf", dt_ox_rule_unary},
    {"IsNaN", dt_ox_rule_unary},
    {"LRN", dt_ox_rule_unary},
    {"LSTM", dt_ox_rule_rnn},
    {"LayerNormalization", dt_ox_rule_layer_norm},
    {"LeakyRelu", dt_ox_rule_unary},
    {"Less", dt_ox_rule_elementwise},
    {"LessOrEqual", dt_ox_rule_elementwise},
    {"Log", dt_ox_rule_unary},
    {"LogSoftmax", dt_ox_rule_unary},
    {"LpNormalization", dt_ox_rule_unary},
    {"LpPool", dt_ox_rule_pool},
    {"MatMul", dt_ox_rule_matmul},
    {"MatMulInteger", dt_ox_rule_matmul},
    {"Max", dt_ox_rule_elementwise},
    {"MaxPool", dt_ox_rule_pool},
    {"Mean", dt_ox_rule_elementwise},
    {"MeanVarianceNormalization", dt_ox_rule_unary},
    {"Min", dt_ox_rule_elementwise},
    {"Mish", dt_ox_rule_unary},
    {"Mod", dt_ox_rule_elementwise},
    {"Mul", dt_ox_rule_elementwise},
    {"Neg", dt_ox_rule_unary},
    {"Not", dt_ox_rule_unary},
    {"OneHot", dt_ox_rule_one_hot},
    {"Or", dt_ox_rule_elementwise},
    {"PRelu", dt_ox_rule_elementwise},
    {"Pad", dt_ox_rule_pad},
    {"Pow", dt_ox_rule_elementwise},
    {"QLinearConv", dt_ox_rule_conv},
    {"QLinearMatMul", dt_ox_rule_matmul},
    {"QuantizeLinear", dt_ox_rule_quantize},
    {"RNN", dt_ox_rule_rnn},
    {"Range", dt_ox_rule_range},
    {"Reciprocal", dt_ox_rule_unary},
    {"ReduceL1", dt_ox_rule_reduce},
    {"ReduceL2", dt_ox_rule_reduce},
    {"ReduceLogSum", dt_ox_rule_reduce},
    {"ReduceLogSumExp", dt_ox_rule_reduce},
    {"ReduceMax", dt_ox_rule_reduce},
    {"ReduceMean", dt_ox_rule_reduce},
    {"ReduceMin", dt_ox_rule_reduce},
    {"ReduceProd", dt_ox_rule_reduce},
    {"ReduceSum", dt_ox_rule_reduce},
    {"ReduceSumSquare", dt_ox_rule_reduce},
    {"Relu", dt_ox_rule_unary},
    {"Reshape", dt_ox_rule_reshape},
    {"Resize", dt_ox_rule_resize},
    {"Round", dt_ox_rule_unary},
    {"ScatterElements", dt_ox_rule_unary},
    {"ScatterND", dt_ox_rule_scatter_nd},
    {"Selu", dt_ox_rule_unary},
    {"Shape", dt_ox_rule_shape},
    {"Shrink", dt_ox_rule_unary},
    {"Sigmoid", dt_ox_rule_unary},
    {"Sign", dt_ox_rule_unary},
    {"Sin", dt_ox_rule_unary},
    {"Sinh", dt_ox_rule_unary},
    {"Size", dt_ox_rule_size},
    {"Slice", dt_ox_rule_slice},
    {"Softmax", dt_ox_rule_unary},
    {"Softplus", dt_ox_rule_unary},
    {"Softsign", dt_ox_rule_unary},
    {"SpaceToDepth", dt_ox_rule_depth_space},
    {"Split", dt_ox_rule_split},
    {"Sqrt", dt_ox_rule_unary},
    {"Squeeze", dt_ox_rule_squeeze},
    {"Sub", dt_ox_rule_elementwise},
    {"Sum", dt_ox_rule_elementwise},
    {"Tan", dt_ox_rule_unary},
    {"Tanh", dt_ox_rule_unary},
    {"ThresholdedRelu", dt_ox_rule_unary},
    {"Tile", dt_ox_rule_tile},
    {"TopK", dt_ox_rule_topk},
    {"Transpose", dt_ox_rule_transpose},
    {"Trilu", dt_ox_rule_unary},
    {"Unsqueeze", dt_ox_rule_unsqueeze},
    {"Where", dt_ox_rule_where},
    {"Xor", dt_ox_rule_elementwise},
};

/* com.microsoft contrib ops that onnxruntime's optimiser writes. */
static const entry ms_ops[] = {
    {"BiasGelu", dt_ox_rule_bias_act},
    {"FastGelu", dt_ox_rule_bias_act},
    {"Gelu", dt_ox_rule_bias_act},
    {"LayerNormalization", dt_ox_rule_layer_norm},
    {"QuickGelu", dt_ox_rule_bias_act},
    {"SimplifiedLayerNormalization", dt_ox_rule_layer_norm},
    {"SkipLayerNormalization", dt_ox_rule_skip_layer_norm},
    {"SkipSimplifiedLayerNormalization", dt_ox_rule_skip_layer_norm},
};

typedef struct {
    const char *op;
    const char *why;
} refusal;

static const char control[] = "control flow: its body is a subgraph, which dtune does not read";
static const char data_dependent[] = "its output shape depends on the element values";
static const char sequence[] = "sequences are not supported";

static const refusal refusals[] = {
    {"Compress", data_dependent},     {"ConcatFromSequence", sequence},
    {"If", control},                  {"Loop", control},
    {"NonMaxSuppression", data_dependent}, {"NonZero", data_dependent},
    {"Scan", control},
    {"SequenceAt", sequence},
    {"SequenceConstruct", sequence},  {"SequenceEmpty", sequence},
    {"SequenceErase", sequence},      {"SequenceInsert", sequence},
    {"SequenceLength", sequence},     {"SequenceMap", control},
    {"SplitToSequence", sequence},    {"StringSplit", data_dependent},
    {"Unique", data_dependent},
};

static int cmp_entry(const void *key, const void *e)
{
    return strcmp((const char *)key, ((const entry *)e)->op);
}

ox_rule dt_ox_rule_find(const char *domain, const char *op_type, const char **why)
{
    const entry *table = NULL;
    size_t n = 0;
    if (!domain[0] || strcmp(domain, "ai.onnx") == 0) {
        table = default_ops;
        n = sizeof default_ops / sizeof default_ops[0];
    } else if (strcmp(domain, "com.microsoft") == 0) {
        table = ms_ops;
        n = sizeof ms_ops / sizeof ms_ops[0];
    } else {
        *why = NULL; /* the caller names the domain */
        return NULL;
    }
    const entry *e = bsearch(op_type, table, n, sizeof *table, cmp_entry);
    if (e)
        return e->rule;
    *why = "this op type is not supported";
    for (size_t i = 0; table == default_ops && i < sizeof refusals / sizeof refusals[0]; i++)
        if (strcmp(refusals[i].op, op_type) == 0)
            *why = refusals[i].why;
    return NULL;
}
