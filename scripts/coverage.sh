#!/usr/bin/env bash
# Line coverage of the test suites, per folder: builds dtune with gcc
# --coverage into build-cov/ (Debug), runs every ctest suite, collects with
# lcov (Debian's package, installed when missing) and prints lines, lines hit
# and % per source folder; the HTML report goes to build-cov/html/.
#
#   scripts/coverage.sh              # table on stdout, build-cov/coverage.json
#   scripts/coverage.sh --min tuner=70 --min microkernel=70
#                                    # exit 1 when a folder is below its floor
#   COVERAGE_DIR=build-asan COVERAGE_REPORT_ONLY=1 scripts/coverage.sh ...
#                                    # the counters of a build made with
#                                    # --coverage elsewhere (scripts/test.sh's
#                                    # ASan build), without building again
set -euo pipefail
cd "$(dirname "$0")/.."

MINS=()
while (($#)); do
  case $1 in
    --min) MINS+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "coverage.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done

if ! command -v lcov >/dev/null 2>&1; then
  echo "coverage.sh: installing lcov" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends lcov
fi

OUT=${COVERAGE_DIR:-build-cov}
if [ -z "${COVERAGE_REPORT_ONLY:-}" ]; then   # set it to re-read the last run's counters
BUILD_DIR=$OUT BUILD_TYPE=Debug EXTRA_CMAKE_ARGS="-DCMAKE_C_FLAGS=--coverage" scripts/setup.sh >/dev/null
lcov --quiet --zerocounters --directory "$OUT"
(cd "$OUT" && ctest -j2 --output-on-failure) || echo "coverage.sh: some suites failed; coverage still reported" >&2
fi
lcov --quiet --capture --directory "$OUT" --output-file "$OUT/all.info" 2>/dev/null
lcov --quiet --extract "$OUT/all.info" "$PWD/*" --output-file "$OUT/src.info"
lcov --quiet --remove "$OUT/src.info" "$PWD/tests/*" "$PWD/$OUT/*" "$PWD/fuzz/*" \
  --output-file "$OUT/cov.info"
genhtml --quiet "$OUT/cov.info" --output-directory "$OUT/html" >/dev/null 2>&1 || true

# Per folder: LF (lines found) and LH (lines hit) of each source file.
awk -v root="$PWD/" -v json="$OUT/coverage.json" '
  /^SF:/ { f = substr($0, 4); sub(root, "", f); n = split(f, parts, "/");
           dir = n > 1 ? parts[1] : "." }
  /^LF:/ { lf[dir] += substr($0, 4); tlf += substr($0, 4) }
  /^LH:/ { lh[dir] += substr($0, 4); tlh += substr($0, 4) }
  END {
    printf "%-14s %8s %8s %7s\n", "folder", "lines", "hit", "%"
    first = 1
    printf "{" > json
    nd = 0
    for (d in lf) order[++nd] = d
    for (i = 2; i <= nd; i++)            # insertion sort: mawk has no asort
      for (j = i; j > 1 && order[j - 1] > order[j]; j--) { t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
    for (i = 1; i <= nd; i++) {
      d = order[i]
      pct = lf[d] ? 100.0 * lh[d] / lf[d] : 0
      printf "%-14s %8d %8d %6.1f%%\n", d, lf[d], lh[d], pct
      printf "%s\"%s\": {\"lines\": %d, \"hit\": %d, \"percent\": %.1f}", first ? "" : ", ", d, lf[d], lh[d], pct >> json
      first = 0
    }
    printf "%-14s %8d %8d %6.1f%%\n", "total", tlf, tlh, tlf ? 100.0 * tlh / tlf : 0
    printf "}\n" >> json
  }' "$OUT/cov.info"

status=0
for m in "${MINS[@]}"; do
  dir=${m%%=*}; floor=${m#*=}
  pct=$(sed -n "s/.*\"$dir\": {[^}]*\"percent\": \([0-9.]*\)}.*/\1/p" "$OUT/coverage.json")
  pct=${pct:-0}
  if awk -v p="$pct" -v f="$floor" 'BEGIN{exit !(p < f)}'; then
    echo "coverage.sh: $dir at $pct % is below its floor of $floor %" >&2
    status=1
  fi
done
exit $status
