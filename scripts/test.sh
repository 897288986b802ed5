#!/usr/bin/env bash
# Sets everything up, then runs every CUnit suite through ctest: first the
# normal build (build/), then the same suites under ASan+UBSan (build-asan/),
# then with clang (build-clang/); a gcc Release build (build-release/) checks
# that every configuration a user may pick builds with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
echo "== op names only in the ops' own files"
scripts/check_op_names.sh
echo "== tests (build/)"
(cd build && ctest --output-on-failure -j2)

echo "== tests under ASan+UBSan (build-asan/)"
BUILD_DIR=build-asan BUILD_TYPE=Debug EXTRA_CMAKE_ARGS="-DDTUNE_SANITIZE=ON" scripts/setup.sh
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j2)

echo "== tests built with clang, Release (build-clang/)"
CC=clang BUILD_DIR=build-clang BUILD_TYPE=Release scripts/setup.sh
unset ASAN_OPTIONS UBSAN_OPTIONS
(cd build-clang && ctest --output-on-failure -j2)

echo "== Release build with gcc (build-release/): warnings are errors"
BUILD_DIR=build-release BUILD_TYPE=Release scripts/setup.sh
