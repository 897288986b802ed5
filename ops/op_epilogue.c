/* The epilogue attribute of dense and conv2d (ops/op.h, DT_EPILOGUE_VALUES):
 * what each of its values adds to the GEMM view, bias and activation. */
#include "ops/op.h"

#include "common/check.h"

static const int epi_bias[DT_EPILOGUE_COUNT] = {0, 1, 0, 0, 1, 1, 0, 1, 0, 1};
static const int epi_act[DT_EPILOGUE_COUNT] = {
    DT_ACT_NONE,  DT_ACT_NONE,  DT_ACT_RELU,      DT_ACT_GELU,     DT_ACT_RELU,
    DT_ACT_GELU,  DT_ACT_RELU6, DT_ACT_RELU6,     DT_ACT_HARDSWISH, DT_ACT_HARDSWISH};

int dt_epilogue_bias(int v)
{
    DT_ASSERT(v >= 0 && v < DT_EPILOGUE_COUNT, "an epilogue value's index");
    return epi_bias[v];
}

int dt_epilogue_act(int v)
{
    DT_ASSERT(v >= 0 && v < DT_EPILOGUE_COUNT, "an epilogue value's index");
    return epi_act[v];
}
