#!/bin/sh
# Fails (exit 1) when code outside a dtype's own row and files names a
# dtype: the dtype table's promise (dtypes/dtype.h) that a dtype carries its
# numerics as data — element sizes, quantisation layout, tolerance, time
# ceiling, peers, peak kind, key text —, so adding one is a row, its
# back-end rows and its per-dtype files, not branches in shared code.
#
# Matched, in every C file (comments stripped by the preprocessor; files not
# yet committed included): the constants DT_DTYPE_<X> other than
# DT_DTYPE_F32 (the default dtype: a key without a dtype, the back-end
# table's geometry rows), DT_DTYPE_COUNT (loops, sentinels) and the mask
# macro DT_DTYPE_BIT.
#
# Allowed — where a dtype's row or its per-dtype files live:
#   dtypes/                      the table itself
#   backends/**                  the back-ends' folders: each dtype's rows, the
#                                emitters of those rows (the AMX emitter picks
#                                tdpbusd or tdpbf16ps by its row's dtype; the
#                                AMX unit asks whether the isa has a tile row
#                                through bf16's)
#   microkernel/dtype_*.c        each dtype's micro-kernel descriptor
#   microkernel/op_*.c           an (op, dtype) hook's registration
#   ops/op_*.c                   the dtypes an op is defined for (its mask)
#   export/op_*.c                an (op, dtype) export hook's registration
#   onnx/workloads*.c            the importer maps an ONNX pattern to a dtype
#   tests/, fuzz/, examples/     tests name the dtype they test
#
#   scripts/check_dtype_names.sh   # prints the hits, exit 1 if any
cd "$(dirname "$0")/.." || exit 2
P='\bDT_DTYPE_[A-Z0-9_]+\b'
OK='\bDT_DTYPE_(F32|COUNT|BIT)\b'
hits=$(git ls-files --cached --others --exclude-standard '*.c' '*.h' \
  | grep -vE '^(tests|fuzz|examples)/' \
  | grep -vE '^dtypes/|^backends/|^(microkernel|ops|export)/op_[a-z0-9_]+\.c$|^microkernel/dtype_[a-z0-9_]+\.c$|^onnx/workloads[a-z0-9_]*\.c$' \
  | while read -r f; do
      [ -f "$f" ] || continue
      gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null | sed -E "s/$OK//g" | grep -nE "$P" \
        | sed "s|^|$f:|"
    done)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "check_dtype_names.sh: $(echo "$hits" | wc -l) place(s) outside a dtype's own row and files name a dtype" >&2
  exit 1
fi
echo "check_dtype_names.sh: no dtype named outside its own row, its files and the listed exceptions"
