#!/usr/bin/env bash
# Probot 14 under the intake benchmark's load (same delivery, same wrk
# script), to calibrate the host: issue 2's targets were set beside
# Probot's figures on this machine, and the host's speed varies by the
# hour, so a run of this next to `bench/intake.sh` says how fast the host
# is now. Probot records nothing, so there is nothing to count as lost.
#
#   bash bench/probot.sh [connections=8] [seconds=20] [threads=2]
#
# BENCH_EVENT=issue_comment.created posts a comment (bench/load.sh); Probot
# makes no GitHub call for either event, so GitHub up or down is the same.
# Needs node and npm (Probot 14 asks for node 22 but runs on Debian's 20,
# which is what the issue's figures match); installs Probot from npm into
# bench/probot/node_modules on first use. NODE picks another node binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/load.sh
load_init 8 3998 "$@"

[ -d bench/probot/node_modules/probot ] ||
  (cd bench/probot && npm install --no-audit --no-fund --loglevel=error)
load_prepare "$WORK"

APP_ID=1 PRIVATE_KEY_PATH=fixtures/keys/test-app.pem WEBHOOK_SECRET=$SECRET \
  HOST=127.0.0.1 PORT=$PORT WEBHOOK_PATH=/webhook \
  NODE_ENV=production "${NODE:-node}" bench/probot/app.mjs >"$WORK/probot.log" &
SERVER=$!
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$PORT/webhook" && break
  sleep 0.1
done
sleep 1
IDLE_RSS=$(load_rss $SERVER VmRSS)
load_run "$WORK" $SERVER "http://127.0.0.1:$PORT/webhook" "$CONNS" "$SECS" "$THREADS"
load_report "$WORK" $SERVER "$CONNS" "$SECS"
