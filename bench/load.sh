# Shared by the webhook benchmarks (bench/intake.sh, bench/probot.sh):
# the signed ~10 KB delivery, wrk's request script, and the measurement of
# a server process under that load. Sourced, not run.
#
#   load_init CONNS PORT ARGS  reads the script's arguments ([connections]
#                              [seconds=20] [threads=2], CONNS and PORT the
#                              defaults), makes WORK, and on exit stops
#                              $SERVER and removes WORK and $CLEANUP
#   load_prepare WORK          writes $WORK/payload.json and $WORK/post.lua,
#                              sets SIG and SIZE
#   load_run WORK PID URL CONNS SECS THREADS
#                              runs wrk against URL, leaves its report in
#                              $WORK/wrk.txt and its CPU in $WORK/wrk.cpu,
#                              sets T0 (the server's CPU ticks at the start)

SECRET=${SECRET:-bench-secret}

load_init() {
  local default_conns=$1 default_port=$2
  shift 2
  CONNS=${1:-$default_conns}
  SECS=${2:-20}
  THREADS=${3:-2}
  PORT=${PORT:-$default_port}
  WORK=$(mktemp -d)
  SERVER=""
  CLEANUP=""
  trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null || true; rm -rf "$WORK" $CLEANUP' EXIT
}

load_prepare() {
  local WORK=$1
  command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
  [ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
  # A real `issues.opened` example, installation added and body padded to ~10 KB.
  python3 - "$WORK/payload.json" <<'PY'
import json, sys
p = json.load(open("fixtures/webhooks/issues/opened.1.json"))
p["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
# Stamped now: taskgate refuses an event older than its delivery log's
# retention as a possible replay (src/intake/age.rs), and the example's
# issue was last updated in 2019.
import datetime
p["issue"]["updated_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
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
}

# The server's user+system CPU so far, in clock ticks.
load_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# A process's resident memory now (VmRSS) or at its peak (VmHWM), in KiB.
load_rss() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

# Runs wrk against URL with the prepared delivery; its report is left in
# $WORK/wrk.txt and its own CPU in $WORK/wrk.cpu. T0 is the server's CPU at
# the start, for load_report.
load_run() {
  local WORK=$1 PID=$2 URL=$3 CONNS=$4 SECS=$5 THREADS=$6
  T0=$(load_ticks "$PID")
  BENCH_PAYLOAD="$WORK/payload.json" BENCH_SIG="$SIG" \
    /usr/bin/time -f "%U %S" -o "$WORK/wrk.cpu" \
    wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency -s "$WORK/post.lua" "$URL" | tee "$WORK/wrk.txt"
}

# Prints throughput, the server's CPU per delivery (from T0 to now), wrk's
# CPU per request and the server's RSS (IDLE_RSS, taken before the run).
load_report() {
  local WORK=$1 PID=$2 CONNS=$3 SECS=$4
  local t1 peak
  t1=$(load_ticks "$PID")
  peak=$(load_rss "$PID" VmHWM)
  python3 - "$WORK" "$T0" "$t1" "$(getconf CLK_TCK)" "$SIZE" "$CONNS" "$SECS" "$IDLE_RSS" "$peak" <<'PY'
import re, sys
work, t0, t1, hz, size, conns, secs, idle, peak = sys.argv[1:]
wrk = open(f"{work}/wrk.txt").read()
reqs = int(re.search(r"(\d+) requests in", wrk).group(1))
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk)
ok = reqs - (int(non2xx.group(1)) if non2xx else 0)
cpu_s = (int(t1) - int(t0)) / int(hz)
wrk_cpu = sum(map(float, open(f"{work}/wrk.cpu").read().split()[-2:]))
if non2xx:
    # A benchmark of refusals measures nothing: say so loudly.
    print(f"WARNING: {non2xx.group(1)} of {reqs} requests were refused (not 2xx)")
print(f"payload {size} bytes, {conns} connections, {secs} s")
print(f"throughput: {ok / int(secs):.0f} deliveries/s ({ok} answered 2xx)")
print(f"server CPU per delivery: {cpu_s / max(ok, 1) * 1e6:.1f} us")
print(f"load generator (wrk) CPU per request: {wrk_cpu / max(reqs, 1) * 1e6:.1f} us")
print(f"RSS idle: {int(idle) / 1024:.1f} MiB, peak: {int(peak) / 1024:.1f} MiB")
open(f"{work}/answered", "w").write(str(ok))
PY
}
