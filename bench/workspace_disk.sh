#!/usr/bin/env bash
# A run's disk (issue 46 item 2): what a workspace of its own tmpfs costs
# beside a plain folder, on a real repository (this one, at HEAD). Each
# of N rounds, for each way:
#   plain   mkdir + checkout (git, borrowing the mirror's objects as the
#           runner's `alternates` do) + rm -rf             (before)
#   tmpfs   mkdir + mount a tmpfs of 4096 MiB + checkout + umount + rmdir
#           (now: src/runner/sandbox/disk.rs)
#   copy    the alternative not taken: a checked-out workspace copied into
#           a fresh tmpfs and back out (cp -a twice), as a design that
#           copies per command would pay for every command
# and prints the median and p95 of each, in ms.
#
#   sudo bash bench/workspace_disk.sh [rounds=20]
#
# Needs root (mount), git, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-20}
[ "$(id -u)" = 0 ] || { echo "needs root (mount -t tmpfs)"; exit 1; }

WORK=$(mktemp -d)
trap 'umount -q "$WORK"/t 2>/dev/null || true; rm -rf "$WORK"' EXIT
git clone -q --bare --no-hardlinks . "$WORK/mirror.git"
SHA=$(git rev-parse HEAD)
FILES=$(git ls-tree -r HEAD | wc -l)
SIZE=$(git archive HEAD | wc -c)

git init -q "$WORK/src" && echo "$WORK/mirror.git/objects" > "$WORK/src/.git/objects/info/alternates"
git -C "$WORK/src" -c advice.detachedHead=false checkout -q --detach "$SHA"

python3 - "$ROUNDS" "$WORK" <<'PY'
import os, subprocess, sys, time
rounds, work = int(sys.argv[1]), sys.argv[2]
def sh(cmd): subprocess.run(["bash", "-c", cmd], check=True)
sha = subprocess.check_output(["git", "rev-parse", "HEAD"], text=True).strip()
co = (f'git init -q {{d}} && echo {work}/mirror.git/objects > {{d}}/.git/objects/info/alternates'
      f' && git -C {{d}} -c advice.detachedHead=false checkout -q --detach {sha}')
ways = {
  "plain": f'd={work}/p; mkdir $d; ' + co.format(d="$d") + '; rm -rf $d',
  "tmpfs": f'd={work}/t; mkdir $d; mount -t tmpfs -o size=4294967296,mode=0700 tmpfs $d; '
           + co.format(d="$d") + '; umount -l $d; rmdir $d',
  "copy":  f'd={work}/c; mkdir $d; mount -t tmpfs -o size=4294967296,mode=0700 tmpfs $d; '
           f'cp -a {work}/src/. $d/; rm -rf {work}/back; mkdir {work}/back; cp -a $d/. {work}/back/; '
           f'umount -l $d; rmdir $d; rm -rf {work}/back',
}
for name, cmd in ways.items():
    sh(cmd)  # warm-up
    t = []
    for _ in range(rounds):
        s = time.perf_counter(); sh(cmd); t.append((time.perf_counter() - s) * 1000)
    t.sort()
    print(f"{name:6} median {t[len(t)//2]:7.1f} ms   p95 {t[int(len(t)*0.95)-1]:7.1f} ms")
PY
echo "repository: $FILES files, $((SIZE / 1024)) KiB at $(git rev-parse --short HEAD); $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
