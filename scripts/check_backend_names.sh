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
#     the old per-dtype K group kg_avx512, the old row ids DT_BACKEND_*;
#   - any CPU feature constant DT_FEAT_* (DT_FEAT_BIT and DT_FEAT_COUNT
#     aside) and any unit but vec (DT_UNIT_AMX, DT_UNIT_FMA, ...): a
#     feature or a unit is its back-end's business (issue 44);
#   - ISA ladder comparisons and branches: `isa >= t->isa`, `< DT_ISA_AVX512`,
#     `== DT_ISA_AVX512`, ...  (range checks against DT_ISA_COUNT are fine).
# Lower-case amx_bf16 / amx_int8 are not matched: they are also the names of
# peak kinds (peers/peer.h) that `dtune info --help` lists.
#
# Allowed — the back-ends' own files and the registries:
#   backends/**                  the back-ends' folders, their registry and rows
#   annotation/annotation.[ch]   the units' names (the annotation's vocabulary)
#   microkernel/template/*       the kernels' templates (per-back-end macros)
#   peers/stream.c               the read-bandwidth probe's vector width
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
P="$P|\\bDT_FEAT_[A-Z0-9_]+\\b|\\bDT_UNIT_[A-Z0-9_]+\\b"
P="$P|\\bisa[[:space:]]*[<>]=?[[:space:]]*(\\([a-z_ ]+\\))?[A-Za-z_]+(->|\\.)isa(_max)?\\b"
hits=$(git ls-files --cached --others --exclude-standard '*.c' '*.h' \
  | grep -vE '^(tests|fuzz|examples|onnx)/' \
  | grep -vE '^backends/|^annotation/annotation\.[ch]$|^microkernel/template/|^common/target[a-z_]*\.[ch]$|^common/amx\.[ch]$|^peers/(peak|stream)\.c$' \
  | while read -r f; do
      [ -f "$f" ] || continue
      # DT_FEAT_BIT / DT_FEAT_COUNT and DT_UNIT_VEC / DT_UNIT_COUNT are fine
      gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null \
        | sed -E 's/DT_FEAT_(BIT|COUNT)\b/DT_FEATx/g; s/DT_UNIT_(VEC|COUNT)\b/DT_UNITx/g' \
        | grep -nE "$P" | sed "s|^|$f:|"
    done)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "check_backend_names.sh: $(echo "$hits" | wc -l) place(s) outside a back-end's own files name a back-end or compare ISAs" >&2
  exit 1
fi
echo "check_backend_names.sh: no back-end named or ISA ladder compared outside the back-ends' own files and the registries"
