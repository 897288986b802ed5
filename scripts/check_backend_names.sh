#!/bin/sh
# Fails (exit 1) when code outside a back-end's own files names a back-end
# or a dtype's instruction feature, or compares ISAs along a ladder: the
# back-end table's promise (backends/backend.h) that adding a back-end (AMX
# next) is a row, its hooks and its emitter's file, not branches elsewhere.
#
# Matched, in every C file (comments stripped by the preprocessor; tests,
# fuzz targets, examples and the ONNX front end aside, as in
# check_op_names.sh; files not yet committed included):
#   - the features that make a back-end (AVX512_BF16, AVX512_VNNI, AVX_VNNI,
#     AMX_BF16, AMX_INT8; lower case avx512_bf16, avx512_vnni, avx_vnni),
#     the old per-dtype K group kg_avx512, the table's row ids DT_BACKEND_*;
#   - ISA ladder comparisons and branches: `isa >= t->isa`, `< DT_ISA_AVX512`,
#     `== DT_ISA_AVX512`, ...  (range checks against DT_ISA_COUNT are fine).
# Lower-case amx_bf16 / amx_int8 are not matched: they are also the names of
# peak kinds (peers/peer.h) that `dtune info --help` lists.
#
# Allowed — the back-ends' own files and the registries:
#   backends/backend.[ch]          the table: rows, features, geometry, K groups
#   microkernel/backend_emit.c   the rows' code hooks (macro, emitter)
#   microkernel/dtype_*.c        each dtype's register-kernel emitters
#   microkernel/template/*       the kernels' templates (per-back-end macros)
#   common/target*.[ch]          the CPU features and ISAs themselves (detection,
#                                XCR0 masks, an ISA's vector geometry)
#   common/amx.[ch]              AMX's OS side (which features, the permission)
#   peers/peak.c                 the peak probes, one per instruction
#
#   scripts/check_backend_names.sh   # prints the hits, exit 1 if any
cd "$(dirname "$0")/.." || exit 2
ISA='DT_ISA_(GENERIC|AVX2|AVX512)'
P="\\b(AVX512_BF16|AVX512_VNNI|AVX_VNNI|AMX_BF16|AMX_INT8|avx512_bf16|avx512_vnni|avx_vnni|kg_avx512|DT_BACKEND_[A-Z0-9_]+)\\b"
P="$P|\\b$ISA[[:space:]]*([<>]|[=!]=)|([<>]=?|[=!]=)[[:space:]]*$ISA\\b"
P="$P|\\bisa[[:space:]]*[<>]=?[[:space:]]*(\\([a-z_ ]+\\))?[A-Za-z_]+(->|\\.)isa(_max)?\\b"
hits=$(git ls-files --cached --others --exclude-standard '*.c' '*.h' \
  | grep -vE '^(tests|fuzz|examples|onnx)/' \
  | grep -vE '^backends/backend\.[ch]$|^microkernel/backend_emit\.c$|^microkernel/dtype_[a-z0-9_]+\.c$|^microkernel/template/|^common/target[a-z_]*\.[ch]$|^common/amx\.[ch]$|^peers/peak\.c$' \
  | while read -r f; do
      [ -f "$f" ] || continue
      gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null | grep -nE "$P" | sed "s|^|$f:|"
    done)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "check_backend_names.sh: $(echo "$hits" | wc -l) place(s) outside a back-end's own files name a back-end or compare ISAs" >&2
  exit 1
fi
echo "check_backend_names.sh: no back-end named or ISA ladder compared outside the back-ends' own files and the registries"
