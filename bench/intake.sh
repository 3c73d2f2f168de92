#!/usr/bin/env bash
# Intake benchmark: signed ~10 KB deliveries with unique, GitHub-shaped
# delivery ids (version-1 UUIDs of the real clock) posted
# to a running `taskgate serve` over loopback with wrk, then checks that
# every 2xx delivery is in the database. Prints throughput, ack latency,
# server CPU per delivery, the load generator's CPU per request and RSS.
#
#   bash bench/intake.sh [connections=32] [seconds=20] [threads=2]
#
# BENCH_DB_DIR puts the database elsewhere (e.g. /dev/shm, to see what the
# server does when fsync costs nothing); BENCH_BIN runs that binary instead
# of building this checkout (to compare two builds run by run).
#
# Needs wrk (Debian package `wrk`; installed if missing) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/load.sh
CONNS=${1:-32}
SECS=${2:-20}
THREADS=${3:-2}
PORT=${PORT:-3999}
WORK=$(mktemp -d)
DB_DIR=$(mktemp -d -p "${BENCH_DB_DIR:-$WORK}")
SERVER=""
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null || true; rm -rf "$WORK" "$DB_DIR"' EXIT

BIN=${BENCH_BIN:-target/release/taskgate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --locked --quiet
load_prepare "$WORK"

# An unreachable API: the deliveries need no GitHub calls.
APP_ID=1 PRIVATE_KEY_PATH=fixtures/keys/test-app.pem WEBHOOK_SECRET=$SECRET \
  GITHUB_API_URL=http://127.0.0.1:9 HOST=127.0.0.1 PORT=$PORT \
  DATABASE_URL="sqlite://$DB_DIR/bench.db" RUST_LOG=error \
  "$BIN" serve &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
sleep 1
IDLE_RSS=$(load_rss $SERVER VmRSS)
load_run "$WORK" $SERVER "http://127.0.0.1:$PORT/webhook" "$CONNS" "$SECS" "$THREADS"
# The server's CPU is counted until it has processed every delivery, not
# only until wrk stops: processing after the 202 is part of the cost.
count() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$DB_DIR/bench.db" "$1"; }
for _ in $(seq 600); do [ "$(count "select count(*) from deliveries where status = 'received'")" = 0 ] && break; sleep 0.1; done
load_report "$WORK" $SERVER "$CONNS" "$SECS"
# The server's own view of the same answers (its /metrics histogram), to
# tell the time spent in taskgate from the time spent queueing in wrk and
# the kernel on the shared cores. Interpolated within buckets, as
# Prometheus' histogram_quantile does.
curl -sf "http://127.0.0.1:$PORT/metrics" | python3 -c '
import re, sys
buckets = [(float("inf") if le == "+Inf" else float(le), float(n)) for le, n in
           re.findall(r"taskgate_webhook_ack_seconds_bucket\{le=\"([^\"]+)\"\} (\S+)", sys.stdin.read())]
def quantile(q):
    total, lo, below = buckets[-1][1], 0.0, 0.0
    for le, n in buckets:
        if n >= q * total:
            return le if le == float("inf") else lo + (le - lo) * (q * total - below) / max(n - below, 1)
        lo, below = le, n
print(f"server ack (body read to answer): p50 ~{quantile(0.5)*1e3:.2f} ms, p99 ~{quantile(0.99)*1e3:.2f} ms")
'
STORED=$(count "select count(*) from deliveries")
ANSWERED=$(cat "$WORK/answered")
echo "deliveries stored: $STORED, lost: $(( ANSWERED > STORED ? ANSWERED - STORED : 0 ))"
