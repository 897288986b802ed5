#!/bin/sh
# Query performance of the daemon while it tunes: GET /v1/schedules under
# wrk on loopback, with a tuning job running in the same daemon.
#
#   scripts/bench_daemon.sh [DB]
#
# DB: a database with a schedule for $KEY (default: a fresh one, tuned
# here first with a small budget).  Environment: DTUNE (the binary, default
# build/dtune), KEY (the queried workload, default dense(M=1..64,N=256,K=256)),
# JOB_KEY (the workload tuned during the run), DURATION (10s), CONNS (16),
# WRK_THREADS (2).  Prints requests/s and p50/p99 latency; the exact wrk
# command is echoed.
set -eu

DTUNE=${DTUNE:-build/dtune}
KEY=${KEY:-dense(M=1..64,N=256,K=256)}
JOB_KEY=${JOB_KEY:-dense(M=1..64,N=512,K=256)}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-16}
WRK_THREADS=${WRK_THREADS:-2}

command -v wrk >/dev/null || { echo "bench_daemon: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench_daemon: curl is not installed" >&2; exit 1; }
[ -x "$DTUNE" ] || { echo "bench_daemon: no dtune binary at $DTUNE (set DTUNE)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/dtune-bench-daemon-XXXXXX")
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
export DTUNE_CACHE_DIR="${DTUNE_CACHE_DIR:-$work/cache}"

if [ $# -ge 1 ]; then
    db=$1
else
    db=$work/bench.db
    echo "bench_daemon: tuning $KEY (40 trials) into $db ..." >&2
    "$DTUNE" tune "$KEY" --db "$db" --trials 40 --threads 1 --min-time 0.5 >/dev/null 2>&1
fi

: >"$work/out"
"$DTUNE" daemon --db "$db" --listen 127.0.0.1:0 --threads 1 >"$work/out" 2>"$work/log" &
pid=$!
port=
for _ in $(seq 1 100); do
    port=$(sed -n 's/^dtune daemon listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/out")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "bench_daemon: the daemon did not start:" >&2; cat "$work/log" >&2; exit 3; }
base=http://127.0.0.1:$port

code=$(curl -s -o /dev/null -w '%{http_code}' -G "$base/v1/schedules" \
       --data-urlencode "workload=$KEY" --data-urlencode "M=7")
[ "$code" = 200 ] || { echo "bench_daemon: no schedule for $KEY in $db (HTTP $code)" >&2; exit 2; }

# a tuning job that runs through the measurement
job=$(curl -s -X POST "$base/v1/jobs" \
      -d "{\"workload\": \"$JOB_KEY\", \"trials\": 100000, \"threads\": 1, \"min_time_ms\": 1}" |
      sed -n 's/.*"id":\([0-9]*\).*/\1/p')
for _ in $(seq 1 100); do
    curl -s "$base/v1/jobs/$job" | grep -q '"state":"running"' && break
    sleep 0.1
done
sleep 1
trials_before=$(curl -s "$base/v1/jobs/$job" | sed -n 's/.*"trials":\([0-9]*\).*/\1/p' | head -1)

# M from 1 to 80: inside the tuned range and beyond it (extrapolated)
cat >"$work/vary_m.lua" <<'LUA'
local key = os.getenv("DTUNE_BENCH_KEY")
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/v1/schedules?workload=" .. key .. "&M=" .. ((n % 80) + 1))
end
LUA
cmd="wrk -t$WRK_THREADS -c$CONNS -d$DURATION --latency -s vary_m.lua $base"
echo "bench_daemon: $cmd   (job $job tuning $JOB_KEY meanwhile)" >&2
DTUNE_BENCH_KEY=$KEY wrk -t"$WRK_THREADS" -c"$CONNS" -d"$DURATION" --latency \
    -s "$work/vary_m.lua" "$base" | tee "$work/wrk.txt"

state=$(curl -s "$base/v1/jobs/$job" | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p' | head -1)
trials_after=$(curl -s "$base/v1/jobs/$job" | sed -n 's/.*"trials":\([0-9]*\).*/\1/p' | head -1)
curl -s -X DELETE "$base/v1/jobs/$job" >/dev/null

rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt")
p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.txt")
p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")
errs=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.txt")
echo
echo "GET /v1/schedules ($KEY, M=1..80): ${rps} requests/s, p50 ${p50}, p99 ${p99}" \
     "(${CONNS} connections, ${WRK_THREADS} wrk threads, ${DURATION}; non-2xx: ${errs:-0})"
echo "meanwhile job $job ($JOB_KEY) was $state and recorded $((${trials_after:-0} - ${trials_before:-0})) trials" \
     "($(nproc) cores shared by wrk, the daemon and its tuning)"
