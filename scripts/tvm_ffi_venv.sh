#!/usr/bin/env bash
# Makes the small pinned venv whose apache-tvm-ffi wheel gives CMake TVM FFI's
# C header and library (site-packages/tvm_ffi/{include,lib}), so that the TVM
# client (tvm/, docs/tvm.md) is built and its suite (tests/test_tvm_client.c)
# runs.  Only TVM FFI, 3 MB: the full TVM venv of scripts/bench_vs_tvm.sh
# (~/.cache/dtune-tvm-venv) serves as well and is looked in first.
#
#   scripts/tvm_ffi_venv.sh        # once; quiet when the venv is there
#
# Needs PyPI.  Where it cannot be reached, it says so and exits 1: the
# client is then not built, and its suite is one counted skip naming why.
set -euo pipefail
cd "$(dirname "$0")/.."
# the apache-tvm-ffi pin of the benchmarks' venv (scripts/tvm_venv.sh's PINS)
. scripts/tvm_venv.sh
PIN=$(printf '%s\n' $PINS | grep '^apache-tvm-ffi==')
VENV=${DTUNE_TVM_FFI_VENV:-$HOME/.cache/dtune-tvm-ffi-venv}
[ "$(cat "$VENV/.dtune-pins" 2>/dev/null)" = "$PIN" ] && exit 0
echo "== TVM FFI for the TVM client: $PIN into $VENV"
rm -rf "$VENV"
if ! /usr/bin/python3 -m venv "$VENV" ||
   ! timeout 300 "$VENV/bin/pip" install --disable-pip-version-check -q "$PIN"; then
    rm -rf "$VENV"
    echo "tvm_ffi_venv: cannot install $PIN (is PyPI reachable?); the TVM client is not built" >&2
    exit 1
fi
echo "$PIN" > "$VENV/.dtune-pins"
