#!/usr/bin/env bash
# The tuned schedules against the peers: for every workload of a model and
# every thread count that has a schedule in the database, `dtune bench --db`
# times the kernel the schedule dispatches for each shape — verified on that
# shape — side by side with oneDNN, OpenBLAS and LIBXSMM, over the tuned
# shapes and, separately, over the shapes past them (extrapolated), then
# prints one table.
#
#   scripts/bench_tuned.sh [--db dtune.db] [--model models/bert-base.json]
#                          [--threads "1 2"] [--out /tmp/dtune-bench-tuned]
#                          [--extra-max 512] [--repeats 3] [--min-time MS]
#                          [--peers LIST] [--bin build/dtune] [--export]
#                          [--shapes DOMAIN]
#
# --export: time the exported C instead of the dispatched kernels: each
# workload and thread count is first written by `dtune export` to
# OUT/export/<workload>_t<T>.c, then `dtune bench --export` compiles it,
# checks it against the reference on every shape and times its one entry
# point (the nested-if dispatcher) beside the peers.
#
# --shapes DOMAIN: the shapes of every workload instead of its own domain,
# e.g. --shapes 'N={1,8};size={160,320,640}' for a model whose workloads
# share those variables (a CNN over batch and image size: its whole shape
# set would be 128 shapes a workload); a workload without one of them (the
# classifier's dense over M) runs on its own domain; no extrapolated run.
#
# Tuned shapes: the workload's own variable domain (e.g. M or seq = 1..128).
# Extrapolated: max+1..EXTRA_MAX (default 129..512) for one-variable
# workloads; a workload with several variables (bert-base-batched) is run
# on its own shape set only.  A thread count without a schedule (dtune bench
# exits 2 saying "no schedule") is listed as such and skipped.
#
# The summary also gives, over the tuned shapes, the geomean fraction of the
# FMA peak reached by dtune and by oneDNN, and the ceiling: the geomean ratio
# dtune would reach if every dispatched kernel ran at 100% of the peak (when
# oneDNN is already near the peak, no kernel choice can raise the ratio much).
#
# Writes OUT/<workload>-t<T>-{tuned,extra}.json (dtune bench --json, the
# dispatched mode) and OUT/summary.txt.  Exit status 0 when every run that
# found a schedule finished with every dispatched kernel verified on every
# shape, else 1.  Run it on a quiet machine: every timing is interleaved with
# the peers', but a 2-thread run still suffers from another process on a core.
set -euo pipefail
cd "$(dirname "$0")/.."

DB=${DTUNE_DB:-dtune.db}
MODEL=models/bert-base.json
THREADS="1 2"
OUT=/tmp/dtune-bench-tuned
EXTRA_MAX=512
REPEATS=3
MIN_MS=2
PEERS=
EXPORT=0
BIN=${DTUNE_BIN:-build/dtune}
SHAPES=

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --db) DB=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --extra-max) EXTRA_MAX=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --min-time) MIN_MS=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --export) EXPORT=1; shift ;;
    --shapes) SHAPES=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_tuned: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done

[ -x "$BIN" ] || { echo "bench_tuned: $BIN not found; build first (scripts/setup.sh)" >&2; exit 1; }
[ -f "$DB" ] || { echo "bench_tuned: database $DB not found (dtune tune $MODEL first)" >&2; exit 1; }
mkdir -p "$OUT"

# key <TAB> file stem <TAB> number of variables <TAB> domain <TAB> max <TAB> the
# variables' names (comma-separated), per workload
workloads=$("$BIN" workloads "$MODEL" --json | python3 -c '
import json, re, sys
for w in json.load(sys.stdin)["workloads"]:
    stem = re.sub(r"[^A-Za-z0-9]+", "_", w["key"]).strip("_")
    vs = list(w["variables"].values())
    dom, top = (vs[0]["domain"], vs[0]["max"]) if len(vs) == 1 else ("-", 0)
    print("\t".join([w["key"], stem, str(len(vs)), dom, str(top), ",".join(w["variables"])]))
')

peer_args=()
[ -n "$PEERS" ] && peer_args=(--peers "$PEERS")
status=0
runs=() # "key<TAB>threads<TAB>tuned json or NO_SCHEDULE<TAB>extra json or -"

# run KEY THREADS SHAPES FILE: dtune bench --db into FILE, its stderr into
# FILE.err (removed when empty); returns the exit code
run() {
  local key=$1 t=$2 shapes=$3 file=$4 rc=0
  local shape_args=() mode_args=()
  [ "$shapes" != "-" ] && shape_args=(--shapes "$shapes")
  if [ "$EXPORT" = 1 ]; then
    local c="$OUT/export/$(echo "$key" | sed 's/[^A-Za-z0-9]\{1,\}/_/g; s/^_//; s/_$//')_t$t.c"
    mkdir -p "$OUT/export"
    [ -f "$c" ] || "$BIN" export "$key" --db "$DB" --threads "$t" -o "$c" > /dev/null \
      2> "$file.err" || { rc=$?; [ -s "$file.err" ] || rm -f "$file.err"; return $rc; }
    mode_args=(--export "$c")
  fi
  "$BIN" bench "$key" --db "$DB" --threads "$t" "${mode_args[@]}" "${shape_args[@]}" \
    --repeats "$REPEATS" --min-time "$MIN_MS" "${peer_args[@]}" --json > "$file" 2> "$file.err" \
    || rc=$?
  [ -s "$file.err" ] || rm -f "$file.err"
  return $rc
}

# say KEY THREADS SHAPES FILE RC: one line per run, with dtune's message
say() {
  echo "== $1, $2 thread(s), shapes ${3/#-/its shape set}: exit $5 -> $4" >&2
  [ -f "$4.err" ] && sed 's/^/   /' "$4.err" >&2
  return 0
}

# whether every variable --shapes names (NAME=...;NAME=...) is one of the
# workload's ($1: its names, comma-separated)
shapes_fit() {
  local v
  for v in $(echo "$SHAPES" | tr ';' '\n' | sed 's/=.*//'); do
    case ",$1," in *",$v,"*) ;; *) return 1 ;; esac
  done
}

while IFS=$'\t' read -r key stem nvars dom top names; do
  [ -n "$key" ] || continue
  for t in $THREADS; do
    tuned="$OUT/$stem-t$t-tuned.json"
    extra="$OUT/$stem-t$t-extra.json"
    rc=0
    shapes=-
    [ "$nvars" = 1 ] && shapes=$dom
    [ -n "$SHAPES" ] && shapes_fit "$names" && shapes=$SHAPES
    run "$key" "$t" "$shapes" "$tuned" || rc=$?
    if [ $rc -eq 2 ] && grep -q "no schedule\|never been tuned" "$tuned.err"; then
      echo "== $key, $t thread(s): no schedule in $DB" >&2
      runs+=("$key"$'\t'"$t"$'\tNO_SCHEDULE\t-')
      rm -f "$tuned" "$tuned.err"
      continue
    fi
    say "$key" "$t" "$shapes" "$tuned" $rc
    [ $rc -ne 0 ] && status=1
    if [ -z "$SHAPES" ] && [ "$nvars" = 1 ] && [ "$top" -lt "$EXTRA_MAX" ]; then
      rc=0
      shapes="$((top + 1))..$EXTRA_MAX"
      run "$key" "$t" "$shapes" "$extra" || rc=$?
      say "$key" "$t" "$shapes" "$extra" $rc
      [ $rc -ne 0 ] && status=1
    else
      extra=-
    fi
    runs+=("$key"$'\t'"$t"$'\t'"$tuned"$'\t'"$extra")
  done
done <<< "$workloads"

printf '%s\n' "${runs[@]}" | WHAT=$([ "$EXPORT" = 1 ] && echo "exported C (dtune export)" || echo "dispatched kernel") python3 -c '
import json, math, os, sys

def load(path):
    if path in ("-", "NO_SCHEDULE"):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}  # the run failed before printing its report

def fmt(x, spec=".3f", suffix="x"):
    return "n/a" if x is None else format(x, spec) + suffix

def peak_cols(rep):
    """Geomean fraction of the FMA peak of dtune and of the strongest oneDNN
    peer, and the ceiling: the geomean ratio if every dispatched kernel ran
    at max(its own speed, 100% of the peak) against the same oneDNN times."""
    shapes = [s for s in (rep or {}).get("shapes", [])
              if s.get("gflops") and s.get("onednn_best")]
    pk = (rep or {}).get("peak_gops")
    # the highest peak measured in the run (the AMX one where a kernel used
    # tiles): the ceiling of the back-ends of both dtune and oneDNN here
    peaks = [p.get("gops") or 0 for p in ((rep or {}).get("peaks") or {}).values()]
    if peaks and max(peaks) > (pk or 0):
        pk = max(peaks)
    if not shapes or not pk:
        return "n/a", "n/a"
    g = lambda a: math.exp(sum(math.log(v) for v in a) / len(a))
    own = g([s["gflops"] / pk for s in shapes])
    one = g([s["onednn_best"] / pk for s in shapes])
    ceil = g([max(s["gflops"], pk) / s["onednn_best"] for s in shapes])
    return "%.0f%% / %.0f%%" % (100 * own, 100 * one), "%.3fx" % ceil

rows = [("workload", "threads", "geomean", "min (shape)", "<0.9x", "% peak dtune/oneDNN",
         "ceiling", "extrap. geomean", "extrap. min (shape)", "extrap. <0.9x", "verified")]
for line in sys.stdin.read().splitlines():
    key, t, tuned_path, extra_path = line.split("\t")
    if tuned_path == "NO_SCHEDULE":
        rows.append((key, t, "no schedule", "", "", "", "", "", "", "", ""))
        continue
    tuned, extra = load(tuned_path), load(extra_path)
    g = (tuned or {}).get("summary", {}).get("all", {})
    x = (extra or {}).get("summary", {}).get("all", {}) if extra is not None else None
    ok = bool(tuned) and tuned.get("all_verified") is True and \
        (extra is None or (bool(extra) and extra.get("all_verified") is True))
    def mins(s):
        if not s or s.get("min_ratio_vs_onednn") is None:
            return "n/a"
        return "%.3fx (%s)" % (s["min_ratio_vs_onednn"], s["min_shape"])
    rows.append((key, t, fmt(g.get("geomean_ratio_vs_onednn")), mins(g),
                 str(g.get("below_0_9", "n/a")) + "/" + str(g.get("shapes", "?")),
                 *peak_cols(tuned),
                 fmt(x.get("geomean_ratio_vs_onednn")) if x is not None else "-",
                 mins(x) if x is not None else "-",
                 (str(x.get("below_0_9", "n/a")) + "/" + str(x.get("shapes", "?")))
                 if x is not None else "-",
                 "yes" if ok else "NO"))
per_t = {}
for r in rows[1:]:
    if r[2].endswith("x"):
        per_t.setdefault(r[1], []).append(float(r[2][:-1]))
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
print("ratio = %s GFLOP/s / strongest oneDNN peer GFLOP/s, per shape;" % os.environ["WHAT"])
print("% peak = geomean fraction of the highest peak of the workload dtype measured in the same run (FMA, vdpbf16ps or vpdpbusd; AMX tdpbf16ps or tdpbusd where a dispatched kernel uses tiles) (tuned shapes);")
print("ceiling = the geomean ratio if every dispatched kernel ran at 100% of that peak")
for i, r in enumerate(rows):
    print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
    if i == 0:
        print("  ".join("-" * w for w in widths))
for t, gs in sorted(per_t.items()):
    gm = math.exp(sum(math.log(v) for v in gs) / len(gs))
    print("%s thread(s): %d workloads, geomean of their geomeans %.3fx, %d below 1.0x, lowest %.3fx"
          % (t, len(gs), gm, sum(v < 1.0 for v in gs), min(gs)))
' | tee "$OUT/summary.txt"
echo "runs: $OUT" >&2
exit $status
