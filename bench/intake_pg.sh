#!/usr/bin/env bash
# The intake benchmark on PostgreSQL: the same signed ~10 KB deliveries as
# bench/intake.sh, posted to N replicas of `taskgate serve` sharing one
# PostgreSQL database (a throwaway cluster with synchronous_commit on, the
# default: every 202 is a durable commit). With several replicas the
# connections are spread over them evenly, as a round-robin front would.
# Prints throughput, ack latency, taskgate's CPU per delivery (all
# replicas) and PostgreSQL's CPU per delivery (all its processes), and
# checks that every 2xx delivery is in the database.
#
#   bash bench/intake_pg.sh [replicas=1] [connections=32] [seconds=20] [threads=2]
#
# BENCH_EVENT and BENCH_GITHUB as for bench/intake.sh (bench/load.sh).
# BENCH_BIN runs that binary instead of building this checkout. Needs wrk,
# Debian's postgresql (its server programs; no server is used) and a
# release build.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/load.sh
REPLICAS=${1:-1}
shift || true
load_init 32 3999 "$@"
BIN=${BENCH_BIN:-target/release/taskgate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --locked --quiet
load_prepare "$WORK"
load_github
echo "event: $BENCH_EVENT, GitHub: ${BENCH_GITHUB:-down} ($GITHUB_API_URL)"

source bench/pg.sh
pg_start
replicas_start "$REPLICAS"

T0=$(ticks_of "${PIDS[@]}")
FAKE_T0=$([ -n "$FAKE" ] && load_ticks "$FAKE" || echo 0)
DB0=$(ticks_of $(pg_pids))
PER=$((CONNS / REPLICAS))
WRKS=()
for i in $(seq 0 $((REPLICAS - 1))); do
  BENCH_PAYLOAD="$WORK/payload.json" BENCH_SECRET="$SECRET" BENCH_EVENT_NAME="${BENCH_EVENT%%.*}" \
    wrk -t"$(( THREADS > PER ? PER : THREADS ))" -c"$PER" -d"${SECS}s" --latency \
    -s "$WORK/post.lua" "http://127.0.0.1:$((PORT + i))/webhook" > "$WORK/wrk-$i.txt" &
  WRKS+=($!)
done
for w in "${WRKS[@]}"; do wait "$w"; done
# Counted until every delivery is processed: the work after the 202 is
# part of the cost.
for _ in $(seq 600); do
  [ "$(pq taskgate "select count(*) from deliveries where status = 'received'" 2>/dev/null || echo 1)" = 0 ] && break
  sleep 0.1
done
T1=$(ticks_of "${PIDS[@]}")
DB1=$(ticks_of $(pg_pids))
STORED=$(pq taskgate "select count(*) from deliveries")
python3 - "$WORK" "$REPLICAS" "$T0" "$T1" "$DB0" "$DB1" "$(getconf CLK_TCK)" "$SECS" "$CONNS" "$STORED" "$SIZE" <<'PY'
import glob, re, sys
work, replicas, t0, t1, db0, db1, hz, secs, conns, stored, size = sys.argv[1:]
ok = reqs = 0
p50s, p99s = [], []
def ms(text, q):
    m = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)", text, re.M)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
for path in sorted(glob.glob(f"{work}/wrk-*.txt")):
    text = open(path).read()
    n = int(re.search(r"(\d+) requests in", text).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    reqs += n
    ok += n - (int(bad.group(1)) if bad else 0)
    p50s.append(ms(text, 50)); p99s.append(ms(text, 99))
hz = int(hz)
print(f"PostgreSQL, {replicas} replica(s); payload {size} bytes, {conns} connections, {secs} s")
print(f"throughput: {ok / int(secs):.0f} deliveries/s ({ok} answered 2xx)")
print(f"ack latency (wrk): p50 {max(p50s):.2f} ms, p99 {max(p99s):.2f} ms (worst replica)")
print(f"taskgate CPU per delivery (all replicas): {(int(t1) - int(t0)) / hz / max(ok, 1) * 1e6:.1f} us")
print(f"PostgreSQL CPU per delivery: {(int(db1) - int(db0)) / hz / max(ok, 1) * 1e6:.1f} us")
print(f"deliveries stored: {stored}, lost: {max(ok - int(stored), 0)}")
PY
load_fake_cpu "$STORED"
