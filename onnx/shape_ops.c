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
    {"Abs", ox_rule_unary},
    {"Acos", ox_rule_unary},
    {"Acosh", ox_rule_unary},
    {"Add", ox_rule_elementwise},
    {"And", ox_rule_elementwise},
    {"ArgMax", ox_rule_arg_reduce},
    {"ArgMin", ox_rule_arg_reduce},
    {"Asin", ox_rule_unary},
    {"Asinh", ox_rule_unary},
    {"Atan", ox_rule_unary},
    {"Atanh", ox_rule_unary},
    {"AveragePool", ox_rule_pool},
    {"BatchNormalization", ox_rule_batch_norm},
    {"BitShift", ox_rule_elementwise},
    {"BitwiseAnd", ox_rule_elementwise},
    {"BitwiseNot", ox_rule_unary},
    {"BitwiseOr", ox_rule_elementwise},
    {"BitwiseXor", ox_rule_elementwise},
    {"Cast", ox_rule_cast},
    {"CastLike", ox_rule_cast},
    {"Ceil", ox_rule_unary},
    {"Celu", ox_rule_unary},
    {"Clip", ox_rule_unary},
    {"Concat", ox_rule_concat},
    {"Constant", ox_rule_constant},
    {"ConstantOfShape", ox_rule_constant_of_shape},
    {"Conv", ox_rule_conv},
    {"ConvInteger", ox_rule_conv},
    {"ConvTranspose", ox_rule_conv_transpose},
    {"Cos", ox_rule_unary},
    {"Cosh", ox_rule_unary},
    {"CumSum", ox_rule_unary},
    {"DepthToSpace", ox_rule_depth_space},
    {"DequantizeLinear", ox_rule_dequantize},
    {"Div", ox_rule_elementwise},
    {"Dropout", ox_rule_unary},
    {"DynamicQuantizeLinear", ox_rule_dynquant},
    {"Elu", ox_rule_unary},
    {"Equal", ox_rule_elementwise},
    {"Erf", ox_rule_unary},
    {"Exp", ox_rule_unary},
    {"Expand", ox_rule_expand},
    {"Flatten", ox_rule_flatten},
    {"Floor", ox_rule_unary},
    {"GRU", ox_rule_rnn},
    {"Gather", ox_rule_gather},
    {"GatherElements", ox_rule_gather_elements},
    {"GatherND", ox_rule_gather_nd},
    {"Gelu", ox_rule_unary},
    {"Gemm", ox_rule_gemm},
    {"GlobalAveragePool", ox_rule_global_pool},
    {"GlobalLpPool", ox_rule_global_pool},
    {"GlobalMaxPool", ox_rule_global_pool},
    {"Greater", ox_rule_elementwise},
    {"GreaterOrEqual", ox_rule_elementwise},
    {"GroupNormalization", ox_rule_unary},
    {"HardSigmoid", ox_rule_unary},
    {"HardSwish", ox_rule_unary},
    {"Hardmax", ox_rule_unary},
    {"Identity", ox_rule_unary},
    {"InstanceNormalization", ox_rule_unary},
    {"IsInf", ox_rule_unary},
    {"IsNaN", ox_rule_unary},
    {"LRN", ox_rule_unary},
    {"LSTM", ox_rule_rnn},
    {"LayerNormalization", ox_rule_layer_norm},
    {"LeakyRelu", ox_rule_unary},
    {"Less", ox_rule_elementwise},
    {"LessOrEqual", ox_rule_elementwise},
    {"Log", ox_rule_unary},
    {"LogSoftmax", ox_rule_unary},
    {"LpNormalization", ox_rule_unary},
    {"LpPool", ox_rule_pool},
    {"MatMul", ox_rule_matmul},
    {"MatMulInteger", ox_rule_matmul},
    {"Max", ox_rule_elementwise},
    {"MaxPool", ox_rule_pool},
    {"Mean", ox_rule_elementwise},
    {"MeanVarianceNormalization", ox_rule_unary},
    {"Min", ox_rule_elementwise},
    {"Mish", ox_rule_unary},
    {"Mod", ox_rule_elementwise},
    {"Mul", ox_rule_elementwise},
    {"Neg", ox_rule_unary},
    {"Not", ox_rule_unary},
    {"OneHot", ox_rule_one_hot},
    {"Or", ox_rule_elementwise},
    {"PRelu", ox_rule_elementwise},
    {"Pad", ox_rule_pad},
    {"Pow", ox_rule_elementwise},
    {"QLinearConv", ox_rule_conv},
    {"QLinearMatMul", ox_rule_matmul},
    {"QuantizeLinear", ox_rule_quantize},
    {"RNN", ox_rule_rnn},
    {"Range", ox_rule_range},
    {"Reciprocal", ox_rule_unary},
    {"ReduceL1", ox_rule_reduce},
    {"ReduceL2", ox_rule_reduce},
    {"ReduceLogSum", ox_rule_reduce},
    {"ReduceLogSumExp", ox_rule_reduce},
    {"ReduceMax", ox_rule_reduce},
    {"ReduceMean", ox_rule_reduce},
    {"ReduceMin", ox_rule_reduce},
    {"ReduceProd", ox_rule_reduce},
    {"ReduceSum", ox_rule_reduce},
    {"ReduceSumSquare", ox_rule_reduce},
    {"Relu", ox_rule_unary},
    {"Reshape", ox_rule_reshape},
    {"Resize", ox_rule_resize},
    {"Round", ox_rule_unary},
    {"ScatterElements", ox_rule_unary},
    {"ScatterND", ox_rule_scatter_nd},
    {"Selu", ox_rule_unary},
    {"Shape", ox_rule_shape},
    {"Shrink", ox_rule_unary},
    {"Sigmoid", ox_rule_unary},
    {"Sign", ox_rule_unary},
    {"Sin", ox_rule_unary},
    {"Sinh", ox_rule_unary},
    {"Size", ox_rule_size},
    {"Slice", ox_rule_slice},
    {"Softmax", ox_rule_unary},
    {"Softplus", ox_rule_unary},
    {"Softsign", ox_rule_unary},
    {"SpaceToDepth", ox_rule_depth_space},
    {"Split", ox_rule_split},
    {"Sqrt", ox_rule_unary},
    {"Squeeze", ox_rule_squeeze},
    {"Sub", ox_rule_elementwise},
    {"Sum", ox_rule_elementwise},
    {"Tan", ox_rule_unary},
    {"Tanh", ox_rule_unary},
    {"ThresholdedRelu", ox_rule_unary},
    {"Tile", ox_rule_tile},
    {"TopK", ox_rule_topk},
    {"Transpose", ox_rule_transpose},
    {"Trilu", ox_rule_unary},
    {"Unsqueeze", ox_rule_unsqueeze},
    {"Where", ox_rule_where},
    {"Xor", ox_rule_elementwise},
};

/* com.microsoft contrib ops that onnxruntime's optimiser writes. */
static const entry ms_ops[] = {
    {"BiasGelu", ox_rule_bias_act},
    {"FastGelu", ox_rule_bias_act},
    {"Gelu", ox_rule_bias_act},
    {"LayerNormalization", ox_rule_layer_norm},
    {"QuickGelu", ox_rule_bias_act},
    {"SimplifiedLayerNormalization", ox_rule_layer_norm},
    {"SkipLayerNormalization", ox_rule_skip_layer_norm},
    {"SkipSimplifiedLayerNormalization", ox_rule_skip_layer_norm},
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

ox_rule ox_rule_find(const char *domain, const char *op_type, const char **why)
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
