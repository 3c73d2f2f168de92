#!/usr/bin/env bash
# Intake benchmark: signed ~10 KB deliveries with unique, GitHub-shaped
# delivery ids (version-1 UUIDs of the real clock) posted
# to a running `taskgate serve` over loopback with wrk, then checks that
# every 2xx delivery is in the database. Prints throughput, ack latency,
# server CPU per delivery, the load generator's CPU per request, RSS, and
# from /metrics the server's own answer times and its store's group
# commits and checkpoints.
#
#   bash bench/intake.sh [connections=32] [seconds=20] [threads=2]
#
# BENCH_DB_DIR puts the database elsewhere (e.g. /dev/shm, to see what the
# server does when fsync costs nothing); BENCH_BIN runs that binary instead
# of building this checkout (to compare two builds run by run).
# BENCH_EVENT=issue_comment.created posts a comment instead of
# issues.opened; BENCH_GITHUB=up serves the API from the fake GitHub
# (crates/fakehub/examples/serve.rs) instead of leaving it unreachable
# (bench/load.sh).
#
# Needs wrk (Debian package `wrk`; installed if missing) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/load.sh
load_init 32 3999 "$@"
DB_DIR=$(mktemp -d -p "${BENCH_DB_DIR:-$WORK}")
CLEANUP=$DB_DIR

BIN=${BENCH_BIN:-target/release/taskgate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --locked --quiet
load_prepare "$WORK"

load_github
echo "event: $BENCH_EVENT, GitHub: ${BENCH_GITHUB:-down} ($GITHUB_API_URL)"
APP_ID=$APP_ID PRIVATE_KEY_PATH=fixtures/keys/test-app.pem WEBHOOK_SECRET=$SECRET \
  GITHUB_API_URL=$GITHUB_API_URL HOST=127.0.0.1 PORT=$PORT \
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
load_fake_cpu "$(cat "$WORK/answered")"
# The server's own view of the same answers (its /metrics histograms), to
# tell the time spent in taskgate from the time spent queueing in wrk and
# the kernel on the shared cores, and the store's group commits inside it.
# Quantiles interpolated within buckets, as Prometheus' histogram_quantile
# does.
curl -sf "http://127.0.0.1:$PORT/metrics" | python3 -c '
import re, sys
text = sys.stdin.read()
def buckets(name):
    return [(float("inf") if le == "+Inf" else float(le), float(n)) for le, n in
            re.findall(r"taskgate_" + name + r"_bucket\{le=\"([^\"]+)\"\} (\S+)", text)]
def value(name):
    return float(re.search(r"^taskgate_" + name + r" (\S+)$", text, re.M).group(1))
def ms(name, q):
    b = buckets(name)
    total, lo, below = b[-1][1], 0.0, 0.0
    for le, n in b:
        if n >= q * total:
            return float("inf") if le == float("inf") else (lo + (le - lo) * (q * total - below) / max(n - below, 1)) * 1e3
        lo, below = le, n
ack = [ms("webhook_ack_seconds", q) for q in (0.5, 0.99)]
print(f"server ack (body read to answer): p50 ~{ack[0]:.2f} ms, p99 ~{ack[1]:.2f} ms")
if "taskgate_store_commit_seconds_count" in text:  # builds before 2026-11-26 19:50 lack it
    commits, jobs = value("store_commit_seconds_count"), value("store_commit_jobs_sum")
    commit = [ms("store_commit_seconds", q) for q in (0.5, 0.99)]
    checkpoints = value("store_checkpoint_seconds_count")
    checkpoint = [ms("store_checkpoint_seconds", q) for q in (0.5, 0.99)]
    print(f"store: {commits:.0f} group commits of {jobs / commits:.1f} jobs on average,"
          f" p50 ~{commit[0]:.2f} ms, p99 ~{commit[1]:.2f} ms;"
          f" {checkpoints:.0f} checkpoints, p50 ~{checkpoint[0]:.2f} ms, p99 ~{checkpoint[1]:.2f} ms")
'
STORED=$(count "select count(*) from deliveries")
ANSWERED=$(cat "$WORK/answered")
echo "deliveries stored: $STORED, lost: $(( ANSWERED > STORED ? ANSWERED - STORED : 0 ))"
