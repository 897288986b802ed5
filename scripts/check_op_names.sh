#!/bin/sh
# Fails (exit 1) when code outside an op's own files names an op: the op
# registry's promise (ops/op.h) that adding an op touches no other op.
# Looks at every C file outside {ops,microkernel,export}/op_<name>.c,
# microkernel/template/op_<name>.c, the dtypes' types blocks
# (microkernel/template/types_<dtype>.h, which name each op's entry point in
# that dtype: dtk_dense_bf16, ...) and the registries, comments stripped by
# the preprocessor; tests, fuzz targets and examples aside.  --help prose and
# example keys in strings ("dense(M=1..128,…)") are not op dispatch and are
# not matched: the pattern looks for branches on ops, their entry points,
# their dims by name and their attribute names.  The ONNX front end (onnx/)
# is aside too: mapping ONNX's MatMul/Gemm patterns to dtune's ops by name is
# what it is for, as a model spec names them (and ONNX's own input names,
# "A", "B", "K", are not dtune dims).  So are the clients outside the core
# (tvm/: the TVM client's functions are dtune.dense and dtune.batch_matmul
# and call each op's exported entry point by name — DESIGN.md: clients sit
# over libdtune's public API, outside the op registry) and the benchmark
# programs in scripts/, which call one op's exported C.
#
#   scripts/check_op_names.sh        # prints the hits, exit 1 if any
cd "$(dirname "$0")/.." || exit 2
P='\b(is_dense|is_bmm|DT_OP_[A-Z_]+|DT_PEER_(DENSE|BMM)|DT_CMF_OP_(DENSE|BATCH_MATMUL)|dtk_dense|dtk_bmm|dt_ref_dense|dt_ref_bmm|layout_nt)\b|(->|\.)(dense|bmm)\b|"(dense|batch_matmul|bmm)"|"[BMNK]"|"(layout|epilogue|NN|NT)"|dim_index\([^)]*"'
hits=$(git ls-files '*.c' '*.h' \
  | grep -vE '^(tests|fuzz|examples|onnx|tvm|scripts)/' \
  | grep -vE '^(ops|microkernel|export)/op_[a-z0-9_]+\.c$|^microkernel/template/(op_[a-z0-9_]+\.c|types_[a-z0-9]+\.h)$|/op_registry\.c$' \
  | while read -r f; do
      gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null | grep -nE "$P" | sed "s|^|$f:|"
    done)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "check_op_names.sh: $(echo "$hits" | wc -l) place(s) outside an op's own files name an op" >&2
  exit 1
fi
echo "check_op_names.sh: no op named outside its own files and the registries"
