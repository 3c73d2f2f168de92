# Shared by the webhook benchmarks (bench/intake.sh, bench/probot.sh):
# the signed ~10 KB delivery, wrk's request script, and the measurement of
# a server process under that load. Sourced, not run.
#
#   load_init CONNS PORT ARGS  reads the script's arguments ([connections]
#                              [seconds=20] [threads=2], CONNS and PORT the
#                              defaults), makes WORK, and on exit stops
#                              $SERVER and removes WORK and $CLEANUP
#   load_prepare WORK          writes $WORK/payload.json and $WORK/post.lua,
#                              sets SIZE; each request gets its own id,
#                              written in its body too, and is signed
#                              (a body seen before is a replay to taskgate,
#                              issue 45); BENCH_EVENT picks the
#                              delivery: issues.opened (default) or
#                              issue_comment.created (a comment that is no
#                              command, the path every command takes)
#   load_github                sets GITHUB_API_URL and APP_ID for the server:
#                              BENCH_GITHUB=down (default) an address nothing
#                              listens on; up, the fake GitHub as a process
#                              of its own (crates/fakehub/examples/serve.rs,
#                              the delivery's repository installed), its PID
#                              in FAKE, its CPU counted by load_fake_cpu
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
  FAKE=""
  trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null || true; [ -n "$FAKE" ] && kill $FAKE 2>/dev/null || true; rm -rf "$WORK" $CLEANUP' EXIT
}

load_prepare() {
  local WORK=$1
  command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
  [ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
  # A real example of the event, installation added, stamped now and
  # padded to ~10 KB.
  BENCH_EVENT=${BENCH_EVENT:-issues.opened}
  python3 - "$WORK/payload.json" "$BENCH_EVENT" <<'PY'
import datetime, json, sys
event = sys.argv[2]
fixture, thing, at, text = {
    "issues.opened": ("fixtures/webhooks/issues/opened.1.json", "issue", "updated_at", "body"),
    "issue_comment.created": ("fixtures/webhooks/issue_comment/created.1.json", "comment", "created_at", "body"),
}[event]
p = json.load(open(fixture))
p["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
# Stamped now: taskgate refuses an event older than its delivery log's
# retention as a possible replay (src/intake/age.rs), and the examples
# were made in 2019.
p[thing][at] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
raw = json.dumps(p, separators=(",", ":"))
# The marker is replaced by each request's delivery id (post.lua), so no
# two bodies are alike: taskgate takes a body seen before under another id
# for a replay (issue 45) and records it as a duplicate.
p[thing][text] = (p[thing].get(text) or "") + ("BENCHID" * 6)[:36] + "x" * max(0, 10240 - 36 - len(raw))
open(sys.argv[1], "w").write(json.dumps(p, separators=(",", ":")))
PY
  SIZE=$(stat -c %s "$WORK/payload.json")

  cat > "$WORK/post.lua" <<'LUA'
local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clock, bench_timespec *tp);
  typedef struct evp_md_st EVP_MD;
  const EVP_MD *EVP_sha256(void);
  unsigned char *HMAC(const EVP_MD *md, const void *key, int key_len,
                      const unsigned char *d, size_t n, unsigned char *out, unsigned int *out_len);
]]
local crypto = ffi.load("libcrypto.so.3")
local f = io.open(os.getenv("BENCH_PAYLOAD"), "rb"); local body = f:read("*a"); f:close()
local secret = os.getenv("BENCH_SECRET")
local event = os.getenv("BENCH_EVENT_NAME")
-- Placeholders of the final lengths: the delivery id in the header and in
-- the body (bench/load.sh put it there), the signature in its header.
local MARK = string.rep("BENCHID", 6):sub(1, 36)
local SIGMARK = string.rep("S", 64)
local mac, mac_len = ffi.new("unsigned char[32]"), ffi.new("unsigned int[1]")
local function signature(text)
  crypto.HMAC(crypto.EVP_sha256(), secret, #secret, text, #text, mac, mac_len)
  local hex = {}
  for i = 0, 31 do hex[i + 1] = string.format("%02x", mac[i]) end
  return table.concat(hex)
end
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
local clock, node, head, before, after
function init(args)
  math.randomseed(os.time() * 100 + tid)
  clock = 0x8000 + math.random(0, 0x3fff)
  node = string.format("%06x%06x", tid, math.random(0, 0xffffff))
  -- The request is the same but for its id and signature: cut it once
  -- around the markers; each request is then a few concatenations and one
  -- HMAC (libcrypto's).
  local whole = wrk.format("POST", "/webhook", {
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = event,
    ["X-GitHub-Delivery"] = MARK,
    ["X-Hub-Signature-256"] = "sha256=" .. SIGMARK,
  }, body)
  head = whole:sub(1, #whole - #body)
  local at = body:find(MARK, 1, true)
  before, after = body:sub(1, at - 1), body:sub(at + #MARK)
end
function request()
  ffi.C.clock_gettime(0, now)
  local ticks = (now.tv_sec + 12219292800ULL) * 10000000ULL + now.tv_nsec / 100
  if ticks <= last then ticks = last + 1 end
  last = ticks
  local lo, hi = tonumber(ticks % 4294967296ULL), tonumber(ticks / 4294967296ULL)
  local id = string.format("%08x-%04x-1%03x-%04x-%s",
    lo, hi % 65536, math.floor(hi / 65536) % 4096, clock, node)
  local b = before .. id .. after
  local h = head:gsub(MARK, id, 1)
  return (h:gsub(SIGMARK, signature(b), 1)) .. b
end
LUA
}

load_github() {
  GITHUB_API_URL=http://127.0.0.1:9
  APP_ID=1
  case ${BENCH_GITHUB:-down} in
    down) return ;;
    up) ;;
    *) echo "BENCH_GITHUB is up or down, not $BENCH_GITHUB" >&2; exit 2 ;;
  esac
  local bin=${BENCH_FAKEHUB:-target/debug/examples/serve}
  [ -n "${BENCH_FAKEHUB:-}" ] || cargo build --locked --quiet -p fakehub --example serve
  local repo
  repo=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["repository"]["full_name"])' "$WORK/payload.json")
  "$bin" "$repo" 1 > "$WORK/fake.out" &
  FAKE=$!
  for _ in $(seq 100); do [ "$(wc -l < "$WORK/fake.out")" -ge 2 ] && break; sleep 0.1; done
  GITHUB_API_URL=$(sed -n 1p "$WORK/fake.out")
  APP_ID=$(sed -n 2p "$WORK/fake.out")
}

# The fake GitHub's CPU from the start of the run, per delivery, when it runs.
load_fake_cpu() {
  [ -n "$FAKE" ] || return 0
  python3 -c 'import sys; t0, t1, hz, n = map(int, sys.argv[1:]); print(f"fake GitHub CPU per delivery: {(t1 - t0) / hz / max(n, 1) * 1e6:.1f} us")' \
    "$FAKE_T0" "$(load_ticks "$FAKE")" "$(getconf CLK_TCK)" "$1"
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
  # BENCH_PERF=FILE: a CPU profile of the server during the run (perf,
  # DWARF call graphs: the release build keeps line tables, no frame
  # pointers), for `perf report -i FILE --no-children`.
  if [ -n "${BENCH_PERF:-}" ]; then
    perf record -F 299 --call-graph dwarf,16384 -o "$BENCH_PERF" -p "$PID" -- sleep "$SECS" 2>/dev/null &
  fi
  FAKE_T0=$([ -n "$FAKE" ] && load_ticks "$FAKE" || echo 0)
  BENCH_PAYLOAD="$WORK/payload.json" BENCH_SECRET="$SECRET" BENCH_EVENT_NAME="${BENCH_EVENT%%.*}" \
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
