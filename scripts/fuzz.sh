#!/bin/sh
# Builds the libFuzzer targets (fuzz/*.c) with clang straight from the source
# files they need (no CMake), then runs each for SECONDS (default 120), one
# after the other, single process.  Fails (exit 1) when a target finds a
# crash, a sanitizer report or a broken invariant; the input is left in
# build-fuzz/artifacts/.  New corpus entries go to build-fuzz/corpus/TARGET;
# the committed seeds in fuzz/corpus/TARGET are read, never written.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      TARGET: http, model_spec, onnx, wire
#
# docs/http.md says what it found so far.
set -eu
SECONDS_PER_TARGET=${1:-120}
[ $# -gt 0 ] && shift
TARGETS=${*:-"http model_spec onnx wire"}
cd "$(dirname "$0")/.."

if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz.sh: installing clang" >&2
    apt-get update && apt-get install -y clang
fi
for h in /usr/include/http_parser.h /usr/include/jansson.h; do
    [ -f "$h" ] || { echo "fuzz.sh: $h missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

VERSION=$(sed -n 's/^project(dtune VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
OUT=${FUZZ_OUT:-build-fuzz}
mkdir -p "$OUT/artifacts"
CFLAGS="-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -fno-omit-frame-pointer -D_GNU_SOURCE -DDTUNE_VERSION=\"$VERSION\" -I. -Iinclude
        -Wall -Wextra -Werror"

build() { # target sources...
    t=$1
    shift
    echo "fuzz.sh: building $OUT/fuzz_$t" >&2
    # shellcheck disable=SC2086
    clang $CFLAGS "$@" -o "$OUT/fuzz_$t" -ljansson -lhttp_parser -lm $LIBS
}

# The ONNX reader's protobuf-c code, generated as CMake does (CMakeLists.txt)
# from Debian's onnx.proto (libonnx-dev) into $OUT/generated/onnx/.
gen_onnx() {
    proto=/usr/include/onnx/onnx.proto
    for f in "$proto" /usr/bin/protoc-c /usr/include/protobuf-c/protobuf-c.h; do
        [ -f "$f" ] || { echo "fuzz.sh: $f missing (scripts/setup.sh installs it)" >&2; exit 1; }
    done
    mkdir -p "$OUT/generated/onnx"
    protoc-c --proto_path=/usr/include/onnx --c_out="$OUT/generated/onnx" "$proto"
}

# The back-ends' own templates (backends/*/template/*), embedded as CMake
# does (cmake/embed.cmake) into $OUT/generated/dt_tpl_<name>.h: their rows
# and emitters include them.
gen_templates() {
    mkdir -p "$OUT/generated"
    for f in backends/*/template/*; do
        id=$(basename "$f" | sed 's/[^a-z0-9]/_/g')
        cmake -DIN="$f" -DOUT="$OUT/generated/dt_tpl_$id.h" -DNAME="dt_tpl_$id" \
            -P cmake/embed.cmake
    done
}
gen_templates

# every file of the pure layers below the micro-kernels (docs/architecture.md)
PURE="-I$OUT/generated dtypes/*.c ops/*.c shape/*.c annotation/*.c space/*.c $(find backends -name '*.c' | sort | tr '\n' ' ')"

for t in $TARGETS; do
    LIBS=""
    case $t in
    http)
        build http fuzz/fuzz_http.c daemon/http_conn.c daemon/http_msg.c daemon/http_auth.c \
            common/strbuf.c common/error.c ;;
    model_spec)
        # the pure layers (dtypes, ops, shape, annotation, backends, space) and common/
        build model_spec fuzz/fuzz_model_spec.c $PURE common/*.c ;;
    onnx)
        gen_onnx
        LIBS="-lprotobuf-c -ljansson -lm"
        # the reader, then shape propagation over what it read
        build onnx -I"$OUT/generated" fuzz/fuzz_onnx.c onnx/read.c onnx/read_graph.c \
            onnx/read_trim.c onnx/read_tensor.c onnx/graph.c "$OUT/generated/onnx/onnx.pb-c.c" \
            onnx/shape*.c \
            onnx/op_table.c shape/expr.c shape/domain.c common/error.c common/strbuf.c \
            common/file.c common/json_util.c ;;
    wire)
        # the worker wire: frames, then the pool's HELLO check and the trial /
        # batch / result JSON (pool.c for dt_pool_hello_check: libuv linked,
        # no socket opened)
        LIBS="-lsodium -luv -lpthread"
        build wire fuzz/fuzz_wire.c measure/wire.c measure/auth.c measure/trial.c \
            measure/pool.c measure/pool_conn.c measure/pool_sched.c net/conn.c net/addr.c $PURE \
            common/*.c ;;
    *) echo "fuzz.sh: unknown target '$t' (http, model_spec, onnx, wire)" >&2; exit 2 ;;
    esac
done

status=0

for t in $TARGETS; do
    mkdir -p "$OUT/corpus/$t"
    dict=""
    [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
    echo "fuzz.sh: running fuzz_$t for $SECONDS_PER_TARGET s" >&2
    # shellcheck disable=SC2086
    if ! "$OUT/fuzz_$t" "$OUT/corpus/$t" "fuzz/corpus/$t" $dict \
        -max_total_time="$SECONDS_PER_TARGET" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" 2>"$OUT/fuzz_$t.log"; then
        echo "fuzz.sh: fuzz_$t FOUND A CRASH (log: $OUT/fuzz_$t.log):" >&2
        ls "$OUT/artifacts/$t-"* >&2 || true
        status=1
    fi
    grep -E "^(stat::|#[0-9]+ +DONE)" "$OUT/fuzz_$t.log" | sed "s/^/fuzz_$t: /" >&2 || true
done
exit $status
