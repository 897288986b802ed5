#!/bin/sh
# Where an AMX register kernel's time goes on this CPU (docs/microkernels.md,
# "Where the time goes"): builds scripts/amx_probe.c with -march=native and
# runs it against the tdpbf16ps peak `dtune info --peaks` measures.  Needs an
# AMX CPU whose kernel grants tile data; says so and exits 0 elsewhere.
# Usage: scripts/bench_amx_probe.sh [BUILD_DIR]   (default: build)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
dtune="$build/dtune"
[ -x "$dtune" ] || { echo "no $dtune: build dtune first (cmake --build $build)" >&2; exit 1; }
peak=$("$dtune" info --peaks | awk '$1 == "amx_bf16" && $2 == "GFLOP/s" { print $3; exit }')
if [ -z "$peak" ] || [ "$peak" = "-" ]; then
    echo "this machine has no usable AMX (dtune info): nothing to probe"
    exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -march=native -o "$out/amx_probe" "$here/scripts/amx_probe.c"
"$out/amx_probe" "$peak"
