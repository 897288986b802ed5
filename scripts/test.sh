#!/usr/bin/env bash
# Sets everything up, then runs every CUnit suite through ctest: first the
# normal build (build/), then the same suites under ASan+UBSan (build-asan/).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
echo "== tests (build/)"
(cd build && ctest --output-on-failure -j2)

echo "== tests under ASan+UBSan (build-asan/)"
BUILD_DIR=build-asan BUILD_TYPE=Debug EXTRA_CMAKE_ARGS="-DDTUNE_SANITIZE=ON" scripts/setup.sh
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j2)
