#!/usr/bin/env bash
# Runner overhead benchmark (issue 4). On a synthetic repository of
# realistic size (3,000 commits, 2,501 files, 59 MB packed; generated
# deterministically by bench/synthetic_repo.py with `git fast-import` and
# kept in bench/.work/, git-ignored, reused by later runs), with a task whose
# commands cost a known time (`sleep 1`, ~1.7 s of shell arithmetic, ~4.5 MB
# of output), it measures:
#
#   (a) `taskgate run --plan FILE --task bench` in a checkout against the
#       same commands run with `sh -c`, with hyperfine;
#   (b) the local runner's path (benches/runner.rs): mirror fetch cold,
#       incremental after a push of 10 commits, and warm; checkout of the
#       commit into a workspace and its removal; the gates through
#       `run_gate_specs`; a whole `LocalRunner::run_commit` after a push;
#       against `git fetch`, `git clone --depth 1` and `git clone` from the
#       same file:// URL and the commands with plain `sh -c`.
#
# Every figure is a median. Target: overhead <= 5% of the commands' time +
# 300 ms.
#
#   bash bench/runner.sh [runs=5]
#
# About 13 minutes with 5 runs on 2 cores, most of it the cold libgit2
# fetches over file:// (~75 s each).
#
# Needs git, python3, hyperfine (Debian package `hyperfine`; installed if
# missing) and builds taskgate in release.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
WORK=$PWD/bench/.work
COMMITS=3000
FILES=2500
PUSHED=10
mkdir -p "$WORK"

if ! command -v hyperfine >/dev/null; then
  echo "hyperfine is missing: installing the Debian package"
  apt-get update -qq && apt-get install -y -qq hyperfine
fi
cargo build --release --locked --quiet --bin taskgate
TASKGATE=${CARGO_TARGET_DIR:-$PWD/target}/release/taskgate

# The repository: built once, then reused.
ORIGIN=$WORK/origin-$COMMITS-$FILES.git
if [ ! -f "$ORIGIN/complete" ]; then
  echo "generating $ORIGIN ($COMMITS commits, $FILES files)"
  rm -rf "$ORIGIN" && git init -q --bare -b main "$ORIGIN"
  python3 bench/synthetic_repo.py "$COMMITS" "$FILES" | git -C "$ORIGIN" fast-import --quiet
  git -C "$ORIGIN" repack -adq
  touch "$ORIGIN/complete"
fi
SHA=$(git -C "$ORIGIN" rev-parse main)
# The same history minus the last $PUSHED commits (objects borrowed), for
# the incremental fetch.
OLD=$WORK/origin-old.git
rm -rf "$OLD" && git init -q --bare -b main "$OLD"
echo "$ORIGIN/objects" > "$OLD/objects/info/alternates"
git -C "$OLD" update-ref refs/heads/main "$SHA~$PUSHED"

# The task: commands of known cost, run in a checkout of the commit.
PLAN=$WORK/bench.yml
cat > "$PLAN" <<'YAML'
story: Runner benchmark
tasks:
  - id: bench
    acceptance:
      tests:
        - { cmd: 'sleep 1', gate: wait }
        - 'i=0; s=0; while [ $i -lt 500000 ]; do s=$((s + i % 7)); i=$((i + 1)); done; echo $s'
        - "seq -f 'test bench::case_%g ... ok' 1 150000"
YAML
RAW=$WORK/raw.sh
cat > "$RAW" <<'SH'
sh -c 'sleep 1' >/dev/null 2>&1
sh -c 'i=0; s=0; while [ $i -lt 500000 ]; do s=$((s + i % 7)); i=$((i + 1)); done; echo $s' >/dev/null 2>&1
sh -c "seq -f 'test bench::case_%g ... ok' 1 150000" >/dev/null 2>&1
SH
CHECKOUT=$WORK/checkout
rm -rf "$CHECKOUT" && git clone -q --depth 1 "file://$ORIGIN" "$CHECKOUT"

echo "== machine"
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"
echo "== repository"
echo "bare repository $(du -sh "$ORIGIN" | cut -f1), $(git -C "$ORIGIN" rev-list --count main) commits," \
  "$(git -C "$ORIGIN" ls-tree -r main | wc -l) files, checkout $(du -sh --exclude=.git "$CHECKOUT" | cut -f1); main = $SHA"

echo "== (a) taskgate run vs the raw commands"
(cd "$CHECKOUT" && hyperfine -N --style basic --warmup 1 --runs "$RUNS" \
  --export-json "$WORK/run.json" \
  -n "raw commands (sh -c)" "sh $RAW" \
  -n "taskgate run" "$TASKGATE run --plan $PLAN --task bench")
python3 - "$WORK/run.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
raw, run = r["raw commands (sh -c)"]["median"], r["taskgate run"]["median"]
over, allowed = run - raw, 0.05 * raw + 0.3
print(f"median: raw {raw * 1e3:.0f} ms, taskgate run {run * 1e3:.0f} ms; overhead "
      f"{over * 1e3:.1f} ms ({100 * over / raw:.1f}%); target <= {allowed * 1e3:.0f} ms: "
      + ("met" if over <= allowed else "NOT met"))
PY

echo "== (b) the local runner's path"
cargo bench --locked --quiet --bench runner -- --origin "$ORIGIN" --old-origin "$OLD" \
  --plan "$PLAN" --task bench --work "$WORK" --runs "$RUNS"
