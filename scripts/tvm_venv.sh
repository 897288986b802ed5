# shellcheck shell=bash
# The pinned TVM venv of the TVM benchmarks (docs/results/tvm-comparison.md),
# sourced by scripts/bench_vs_tvm.sh and scripts/bench_bert_tvm.sh from the
# repository's root:
#
#   VENV=...                      # default ${DTUNE_TVM_VENV:-~/.cache/dtune-tvm-venv}
#   . scripts/tvm_venv.sh         # sets PINS and PY
#   tvm_venv_ensure               # creates the venv once (~1.3 GB), again only when PINS change
#
# apache-tvm-ffi 0.1.15.post2 (pip's pick) segfaults in ToJSONGraph when
# MetaSchedule saves its database; 0.1.14.post1 works.
VENV=${VENV:-${DTUNE_TVM_VENV:-$HOME/.cache/dtune-tvm-venv}}
PINS="apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 numpy==2.4.6 scipy==1.17.1
ml_dtypes==0.6.0 xgboost==3.2.0 cloudpickle==3.1.3 psutil==7.2.2 tornado==6.6.1"
PY=$VENV/bin/python

tvm_venv_ensure() {
  if [ ! -x "$PY" ] || [ "$(cat "$VENV/.dtune-pins" 2>/dev/null)" != "$PINS" ]; then
    echo "== $(date +%H:%M:%S) creating the TVM venv in $VENV (once; ~1.3 GB)" >&2
    rm -rf "$VENV"
    /usr/bin/python3 -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install --disable-pip-version-check -q $PINS
    echo "$PINS" > "$VENV/.dtune-pins"
  fi
}
