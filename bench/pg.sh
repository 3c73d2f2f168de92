# Shared by the PostgreSQL benchmarks (bench/intake_pg.sh,
# bench/wakeup_pg.sh): a throwaway cluster (synchronous_commit on, the
# default) and replicas of `taskgate serve` sharing its database. Sourced
# after bench/load.sh's load_init and load_prepare, not run.
#
#   pg_start          starts the cluster in a fresh directory (in /dev/shm
#                     when there is one); sets PGDIR, PGPM (its postmaster's
#                     pid) and DB_URL; on exit, stops it, every replica and
#                     removes it and WORK
#   pq DB SQL         runs SQL in database DB, unaligned
#   replicas_start N  starts N replicas of $BIN on ports PORT … PORT+N-1,
#                     each with its own work directory; sets PIDS; returns
#                     once each answers /healthz
#   ticks_of PID…     the processes' user+system CPU so far, in clock ticks
#   pg_pids           the cluster's processes

pg_start() {
  PGBIN=$(dirname "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
  PGDIR=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
  CLEANUP=$PGDIR
  local as_pg=()
  if [ "$(id -u)" -eq 0 ]; then
    chown nobody "$PGDIR"
    as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  fi
  "${as_pg[@]}" "$PGBIN/initdb" -D "$PGDIR/data" -U taskgate --auth=trust -E UTF8 >/dev/null
  cat >> "$PGDIR/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$PGDIR'
synchronous_commit = on
max_connections = 100
CONF
  "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w start >/dev/null
  PGPM=$(head -1 "$PGDIR/data/postmaster.pid")
  PIDS=()
  trap pg_stop_all EXIT
  pq postgres "CREATE DATABASE taskgate" >/dev/null
  DB_URL="postgres://taskgate@$(python3 -c 'import sys,urllib.parse;print(urllib.parse.quote(sys.argv[1],safe=""))' "$PGDIR")/taskgate"
}

pg_stop_all() {
  for pid in "${PIDS[@]:-}" ${FAKE:-}; do kill "$pid" 2>/dev/null || true; done
  kill -QUIT "$PGPM" 2>/dev/null || true
  sleep 0.5
  rm -rf "$WORK" "$PGDIR"
}

pq() { psql -h "$PGDIR" -U taskgate -d "$1" -Atc "$2"; }

replicas_start() {
  local n=$1 i
  for i in $(seq 0 $((n - 1))); do
    APP_ID=${APP_ID:-1} PRIVATE_KEY_PATH=fixtures/keys/test-app.pem WEBHOOK_SECRET=$SECRET \
      GITHUB_API_URL=${GITHUB_API_URL:-http://127.0.0.1:9} HOST=127.0.0.1 PORT=$((PORT + i)) \
      DATABASE_URL="$DB_URL" TASKGATE_WORK_DIR="$WORK/work-$i" RUST_LOG=${BENCH_LOG:-error} \
      "$BIN" serve &
    PIDS+=($!)
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$((PORT + i))/healthz" >/dev/null && break; sleep 0.1; done
  done
  sleep 1
}

ticks_of() { local t=0 p; for p in "$@"; do t=$((t + $(load_ticks "$p" 2>/dev/null || echo 0))); done; echo $t; }
pg_pids() { echo "$PGPM"; ps --ppid "$PGPM" -o pid= ; }
