#!/usr/bin/env bash
# Wake-ups across replicas on PostgreSQL, with the release binary: two
# replicas of `taskgate serve` on one database; replica 0 takes the
# installation's deliveries (its lease), and then N deliveries are posted
# one at a time to replica 1, each once the one before was decided and
# after a random 0-20 ms, so the holder is idle each time as between real
# webhooks. Each is decided by replica 0, woken by replica 1's NOTIFY (its
# own poll is 5 s). Then the same N are posted to replica 0 itself, for
# the in-process wake-up beside it. Prints p50/p95/p99/max of the time
# from the 202 to the decision (the time this script saw the answer, and
# the deliveries table's processed_at_ms: one clock, the machine's), and
# from the receipt (received_at_ms: before the intake's commit).
#
#   bash bench/wakeup_pg.sh [deliveries=200]
#
# BENCH_BIN runs that binary instead of building this checkout. Needs
# Debian's postgresql (its server programs) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/load.sh
N=${1:-200}
load_init 1 4099
PORT=${PORT:-4099}
BIN=${BENCH_BIN:-target/release/taskgate}
[ -n "${BENCH_BIN:-}" ] || cargo build --release --locked --quiet
source bench/pg.sh
pg_start
replicas_start 2

python3 - "$SECRET" "$PORT" "$N" "${PIDS[0]}" "$PGDIR" <<'PY'
import datetime, hashlib, hmac, json, random, subprocess, sys, time, urllib.request, uuid
secret, port, n, holder_pid, pgdir = sys.argv[1:]
port, n = int(port), int(n)
# A real `issue_comment.created` example, a comment that is no command, on
# installation 1, stamped now (older events are refused as replays): the
# processor decides it (nothing to do) with no call to GitHub.
p = json.load(open("fixtures/webhooks/issue_comment/created.1.json"))
p["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
p["comment"]["body"] = "thanks"
p["comment"]["created_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
body = json.dumps(p).encode()
sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()

def pq(sql):
    return subprocess.run(["psql", "-h", pgdir, "-U", "taskgate", "-d", "taskgate", "-Atc", sql],
                          check=True, capture_output=True, text=True).stdout.strip()

def post(replica, delivery):
    req = urllib.request.Request(f"http://127.0.0.1:{port + replica}/webhook", data=body, headers={
        "Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig})
    with urllib.request.urlopen(req) as r:
        assert r.status == 202, r.status

def decided(delivery):
    deadline = time.time() + 30
    while time.time() < deadline:
        status = pq(f"SELECT status FROM deliveries WHERE delivery_id = '{delivery}'")
        if status not in ("", "received"):
            assert status == "processed", f"{delivery}: {status}"
            return
        time.sleep(0.002)
    sys.exit(f"{delivery} not decided in 30 s")

def series(replica, tag):
    answered, both = {}, []
    for i in range(n):
        time.sleep(random.uniform(0, 0.020))
        delivery = str(uuid.uuid1())
        post(replica, delivery)
        answered[delivery] = time.time_ns() // 1_000_000
        decided(delivery)
    listed = ",".join(f"'{d}'" for d in answered)
    for row in pq(f"SELECT delivery_id, received_at_ms, processed_at_ms FROM deliveries "
                  f"WHERE delivery_id IN ({listed})").splitlines():
        delivery, received, processed = row.split("|")
        both.append((int(processed) - answered[delivery], int(processed) - int(received)))
    for i, what in ((0, "202 to decision"), (1, "receipt to decision")):
        took = sorted(b[i] for b in both)
        at = lambda q: took[min(len(took), max(1, -(-len(took) * q // 100))) - 1]
        print(f"{tag}, {what}: {len(took)} deliveries, p50 {at(50)} ms, "
              f"p95 {at(95)} ms, p99 {at(99)} ms, max {took[-1]} ms")

# Replica 0 takes the installation: its first delivery wakes it in process.
first = str(uuid.uuid1())
post(0, first)
decided(first)
owner = pq("SELECT owner FROM leases WHERE name = 'inbox:1'")
assert f"-{holder_pid}-" in owner, f"replica 0 (pid {holder_pid}) does not hold the installation: {owner}"
series(1, "across replicas (posted to 1, decided by 0)")
series(0, "in process (posted to 0, decided by 0)")
assert pq("SELECT owner FROM leases WHERE name = 'inbox:1'") == owner, "the lease moved"
PY
