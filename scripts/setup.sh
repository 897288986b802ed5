#!/usr/bin/env bash
# Installs the Debian packages dtune needs (only those missing; apt-get update
# runs only then) and configures + builds dtune into build/.
#
#   scripts/setup.sh              # packages + release build in build/
#   BUILD_DIR=b EXTRA_CMAKE_ARGS="-DDTUNE_SANITIZE=ON" scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config
  libsqlite3-dev sqlite3        # the schedule database
  libxgboost-dev                # the cost model
  libuv1-dev                    # workers and daemon networking
  libhttp-parser-dev            # the daemon's HTTP/1.1 parser
  libjansson-dev                # JSON
  libsodium-dev                 # hashing (build cache), HMAC (workers)
  libcunit1-dev                 # tests
  clang libomp-dev              # tests also build with clang (and fuzz.sh uses it)
  libdnnl-dev libopenblas-dev libxsmm-dev   # peers for benchmarks
  ocl-icd-opencl-dev            # Debian's oneDNN CMake config requires OpenCL
  libonnx-dev                   # onnx.proto, from which the ONNX reader (onnx/) is generated
  protobuf-c-compiler libprotobuf-c-dev   # protoc-c and the runtime of that generated reader
  python3-onnx                  # only the script that generates the ONNX test models uses it
  lcov                          # scripts/test.sh's line coverage (scripts/coverage.sh)
  python3-pytest python3-numpy  # the Python package's tests (python/tests, run by scripts/test.sh)
  python3-venv python3-pip      # ... and its offline install into a fresh venv (test_install.py)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" ${EXTRA_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)"
