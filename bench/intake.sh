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
CONNS=${1:-32}
SECS=${2:-20}
THREADS=${3:-2}
PORT=${PORT:-3999}
SECRET=bench-secret
WORK=$(mktemp -d)
DB_DIR=$(mktemp -d -p "${BENCH_DB_DIR:-$WORK}")
SERVER=""
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null || true; rm -rf "$WORK" "$DB_DIR"' EXIT

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
BIN=${BENCH_BIN:-target/release/taskgate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --locked --quiet

# A real `issues.opened` example, installation added and body padded to ~10 KB.
python3 - "$WORK/payload.json" <<'PY'
import json, sys
p = json.load(open("fixtures/webhooks/issues/opened.1.json"))
p["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
raw = json.dumps(p, separators=(",", ":"))
p["issue"]["body"] = (p["issue"].get("body") or "") + "x" * max(0, 10240 - len(raw))
open(sys.argv[1], "w").write(json.dumps(p, separators=(",", ":")))
PY
SIG="sha256=$(openssl dgst -sha256 -hmac "$SECRET" -r < "$WORK/payload.json" | cut -d' ' -f1)"
SIZE=$(stat -c %s "$WORK/payload.json")

cat > "$WORK/post.lua" <<'LUA'
local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clock, bench_timespec *tp);
]]
local f = io.open(os.getenv("BENCH_PAYLOAD"), "rb"); local body = f:read("*a"); f:close()
local sig = os.getenv("BENCH_SIG")
-- Delivery ids as GitHub makes them: version-1 UUIDs of the time the
-- delivery is sent (100 ns ticks since 1582, from the real clock, so both
-- wrk threads' ids rise together as GitHub's do), a clock sequence and a
-- node. Each wrk thread has its own Lua state; setup() runs in the main one
-- and gives every thread a distinct tid, which picks its own node, so ids
-- never repeat across threads; within one, the tick never repeats.
tid = 0
local next_tid = 0
function setup(thread) next_tid = next_tid + 1; thread:set("tid", next_tid) end
local now = ffi.new("bench_timespec")
local last = 0ULL
local clock, node, prefix, suffix
function init(args)
  math.randomseed(os.time() * 100 + tid)
  clock = 0x8000 + math.random(0, 0x3fff)
  node = string.format("%06x%06x", tid, math.random(0, 0xffffff))
  -- The request is the same but for its id: cut it once around a marker,
  -- so each request is two concatenations instead of a fresh wrk.format.
  local whole = wrk.format("POST", "/webhook", {
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = "issues",
    ["X-GitHub-Delivery"] = "@DELIVERY@",
    ["X-Hub-Signature-256"] = sig,
  }, body)
  local at = whole:find("@DELIVERY@", 1, true)
  prefix, suffix = whole:sub(1, at - 1), whole:sub(at + 10)
end
function request()
  ffi.C.clock_gettime(0, now)
  local ticks = (now.tv_sec + 12219292800ULL) * 10000000ULL + now.tv_nsec / 100
  if ticks <= last then ticks = last + 1 end
  last = ticks
  local lo, hi = tonumber(ticks % 4294967296ULL), tonumber(ticks / 4294967296ULL)
  local id = string.format("%08x-%04x-1%03x-%04x-%s",
    lo, hi % 65536, math.floor(hi / 65536) % 4096, clock, node)
  return prefix .. id .. suffix
end
LUA

# An unreachable API: the deliveries need no GitHub calls.
APP_ID=1 PRIVATE_KEY_PATH=fixtures/keys/test-app.pem WEBHOOK_SECRET=$SECRET \
  GITHUB_API_URL=http://127.0.0.1:9 HOST=127.0.0.1 PORT=$PORT \
  DATABASE_URL="sqlite://$DB_DIR/bench.db" RUST_LOG=error \
  "$BIN" serve &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
sleep 1
IDLE_RSS=$(awk '/VmRSS/ {print $2}' /proc/$SERVER/status)
ticks() { awk '{print $14 + $15}' /proc/$SERVER/stat; }
T0=$(ticks)
BENCH_PAYLOAD="$WORK/payload.json" BENCH_SIG="$SIG" \
  /usr/bin/time -f "%U %S" -o "$WORK/wrk.cpu" wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency -s "$WORK/post.lua" "http://127.0.0.1:$PORT/webhook" | tee "$WORK/wrk.txt"
# The server's CPU is counted until it has processed every delivery, not
# only until wrk stops: processing after the 202 is part of the cost.
pending() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from deliveries where status = 'received'\").fetchone()[0])" "$DB_DIR/bench.db"; }
for _ in $(seq 600); do [ "$(pending)" = 0 ] && break; sleep 0.1; done
T1=$(ticks)
PEAK_RSS=$(awk '/VmHWM/ {print $2}' /proc/$SERVER/status)
STORED=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from deliveries').fetchone()[0])" "$DB_DIR/bench.db")
REQS=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
NON2XX=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk.txt"); NON2XX=${NON2XX:-0}
HZ=$(getconf CLK_TCK)
python3 - <<PY
reqs, non2xx, stored = $REQS, $NON2XX, $STORED
ok = reqs - non2xx
cpu_s = ($T1 - $T0) / $HZ
print(f"payload {$SIZE} bytes, {$CONNS} connections, {$SECS} s")
print(f"deliveries acknowledged: {ok}, stored: {stored}, lost: {max(0, ok - stored)}")
print(f"throughput: {ok / $SECS:.0f} deliveries/s")
print(f"server CPU per delivery (intake + processing, until all processed): {cpu_s / max(ok,1) * 1e6:.1f} us")
wrk_cpu = sum(map(float, open("$WORK/wrk.cpu").read().split()[-2:]))
print(f"load generator (wrk) CPU per request: {wrk_cpu / max(reqs,1) * 1e6:.1f} us")
print(f"RSS idle: {$IDLE_RSS / 1024:.1f} MiB, peak: {$PEAK_RSS / 1024:.1f} MiB")
PY
