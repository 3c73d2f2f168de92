#!/usr/bin/env bash
# The sandbox's start-up cost per command (issue 18): N times `true`, run
# the way the local runner runs a command — `/bin/sh -c true` on the host,
# then the same inside `bwrap` with the runner's arguments (rebuilt below
# from the list in src/runner/sandbox.rs, `SandboxRun::args`; keep them in
# step) — and prints the median and p95 per command of each, and their
# difference. Target: the sandbox adds at most 20 ms per command. (The
# runner's rlimits and pids cgroup cost a few syscalls; not measured here.)
#
#   bash bench/sandbox.sh [runs=200]
#
# Needs bwrap (Debian package `bubblewrap`; installed if missing) and
# python3 (for the timing loop: one fork+exec+wait per command, as tokio's
# spawn does).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-200}

if ! command -v bwrap >/dev/null; then
  echo "bwrap is missing: installing the Debian package bubblewrap"
  apt-get update -qq && apt-get install -y -qq bubblewrap
fi

WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT

# The arguments of SandboxRun::args (src/runner/sandbox.rs), network off.
args=(--unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try
      --unshare-net --disable-userns --die-with-parent --new-session
      --cap-drop ALL --hostname taskgate --ro-bind /usr /usr)
for d in /bin /sbin /lib /lib64 /lib32 /libx32; do
  if [ -L "$d" ]; then args+=(--symlink "$(readlink "$d")" "$d")
  elif [ -d "$d" ]; then args+=(--ro-bind "$d" "$d"); fi
done
for e in /etc/alternatives /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d \
         /etc/ssl /etc/ca-certificates /etc/pki /etc/passwd /etc/group /etc/hosts \
         /etc/host.conf /etc/nsswitch.conf /etc/gai.conf /etc/protocols /etc/services \
         /etc/localtime /etc/timezone /etc/mime.types /etc/os-release \
         /etc/debian_version /etc/python3*; do
  args+=(--ro-bind-try "$e" "$e")
done
args+=(--proc /proc --dev /dev --size 1073741824 --tmpfs /tmp
       --size 1073741824 --tmpfs /home/runner --bind "$WS" /workspace
       --chdir /workspace)

python3 - "$RUNS" "${args[@]}" <<'EOF'
import os, subprocess, sys, time

runs = int(sys.argv[1])
bwrap = ["bwrap", *sys.argv[2:], "--", "/bin/sh", "-c", "true"]
bare = ["/bin/sh", "-c", "true"]

def measure(argv):
    subprocess.run(argv, check=True)  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.95) - 1]

# Interleaved halves, so a burst of load hits both alike.
results = {"sh -c true": [], "bwrap … sh -c true": []}
for half in range(2):
    for name, argv in (("sh -c true", bare), ("bwrap … sh -c true", bwrap)):
        results[name].append(measure(argv))
print(f"{runs} runs x 2 each, per command (ms):")
summary = {}
for name, halves in results.items():
    median = sum(m for m, _ in halves) / 2
    p95 = sum(p for _, p in halves) / 2
    summary[name] = (median, p95)
    print(f"  {name:20} median {median:6.2f}  p95 {p95:6.2f}")
(bm, bp), (sm, sp) = summary["sh -c true"], summary["bwrap … sh -c true"]
print(f"  sandbox adds         median {sm - bm:6.2f}  p95 {sp - bp:6.2f}  (target <= 20)")
EOF
echo "machine: nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), $(bwrap --version)"
