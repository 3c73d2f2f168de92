#!/usr/bin/env bash
# shellcheck disable=SC2016  # expected summaries quote backticks literally
# Regenerates the classifier-convention cases of fixtures/failures/: real
# logs of real tools failing, for the exit statuses, signals and messages
# that docs/decisions/classifier-conventions.md reads (pytest's own exit
# codes, coreutils `timeout`, crashes, package managers' missing scripts,
# plain commands saying "no").
#
# Usage (from anywhere; needs python3 with venv, node/npm, gcc, make, cargo):
#
#   bash scripts/failures.sh [CASE...]
#
# With no CASE it makes every case below; with names it makes only those.
# It installs the tools it needs from the package registries into a work
# directory ($TASKGATE_FAILURES_WORK, default /tmp/taskgate-failures):
# pytest from PyPI into a venv, yarn and pnpm from npm. Versions are pinned
# below. Each case is a small failing project made in its own directory and
# run the way taskgate's runner runs a gate command: `sh -c CMD`, stdin from
# /dev/null, stdout and stderr merged, a scrubbed environment (TERM=dumb,
# NO_COLOR=1, CI=true, TASKGATE=1). For each case it writes:
#
#   fixtures/failures/<case>.log   the merged output, byte for byte
#   fixtures/failures/<case>.json  the command, its exit status (or the
#                                  signal that killed it), and what the
#                                  classifier must conclude
#
# The .json's `kind` and `summary_contains` are the expectation, written
# here by hand; the .log is never edited. Logs name paths under the work
# directory and the tools' versions, so regenerating changes those lines.
# The other cases in fixtures/failures/ were made before this script and
# are not touched by it.
#
# The cases of scripts/corpus/*.sh (one file per tool family, sourced at the
# end) grow the corpus with the everyday failures of more tools: flake8,
# pylint, isort, bandit, mypy, ruff, black; mocha, vitest, jest, node --test,
# eslint, tsc, prettier, bats; cargo, rustc, go, gcc/g++, valgrind, make;
# Debian's shellcheck, perl's prove, javac, java, Maven. Their tools
# come from the same registries, pinned below; shellcheck is installed with
# apt-get when it is missing. `cargo bench --bench classify` measures the
# classifier against all of them (docs/benchmarks.md).

set -euo pipefail

PYTEST_VERSION=9.2.0
YARN_VERSION=1.22.22
PNPM_VERSION=10.34.9
# The tools of scripts/corpus/*.sh, as "name==version" (PyPI) and
# "name@version" (npm).
PY_TOOLS=(flake8==7.5.0 pylint==4.1.4 isort==9.0.2 bandit==1.9.4 mypy==2.4.1
  ruff==0.17.6 black==26.10.1)
NPM_TOOLS=(jest@30.5.2 mocha@12.0.3 vitest@4.1.12 eslint@10.15.0 typescript@7.0.2
  prettier@3.10.1 bats@1.13.0)

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/fixtures/failures"
work=${TASKGATE_FAILURES_WORK:-/tmp/taskgate-failures}
only=("$@")

mkdir -p "$work/home" "$work/cases"

# --- tools -----------------------------------------------------------------
if [ ! -x "$work/venv/bin/pytest" ] ||
  [ "$("$work/venv/bin/python" -c 'import pytest; print(pytest.__version__)')" != "$PYTEST_VERSION" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check "pytest==$PYTEST_VERSION"
fi
if [ ! -x "$work/npm/node_modules/.bin/pnpm" ] || [ ! -x "$work/npm/node_modules/.bin/yarn" ]; then
  mkdir -p "$work/npm"
  (cd "$work/npm" && npm install --silent --no-audit --no-fund --prefix . \
    "yarn@$YARN_VERSION" "pnpm@$PNPM_VERSION" >/dev/null)
fi
for tool in "${PY_TOOLS[@]}"; do
  if ! "$work/venv/bin/pip" freeze --disable-pip-version-check 2>/dev/null | grep -qix "$tool"; then
    "$work/venv/bin/pip" install --quiet --disable-pip-version-check "${PY_TOOLS[@]}"
    break
  fi
done
for tool in "${NPM_TOOLS[@]}"; do
  name=${tool%@*}
  if [ "$(node -p "try { require('$work/npm/node_modules/$name/package.json').version } catch { '' }")" != "${tool##*@}" ]; then
    (cd "$work/npm" && npm install --silent --no-audit --no-fund --prefix . "${NPM_TOOLS[@]}" >/dev/null)
    break
  fi
done
if ! command -v shellcheck >/dev/null; then
  apt-get install -y -q shellcheck >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q shellcheck >/dev/null; }
fi
# npm does not link bats's own script into .bin; its bin/ goes on the path.
tool_path="$work/venv/bin:$work/npm/node_modules/.bin:$work/npm/node_modules/bats/bin:$HOME/.cargo/bin:/usr/local/bin:/usr/bin:/bin"

# --- running one case --------------------------------------------------------
# capture CASE KIND 'CMD' [SUMMARY_CONTAINS...] [finding=PATH:LINE] [known_miss]:
# runs CMD in $work/cases/CASE (which the caller has filled) and writes the
# .log and the .json. KIND and the facts are the truth, whatever the
# classifier says; `known_miss` marks a case it gets wrong today (the corpus
# test tolerates it, the benchmark counts it as a miss).
capture() {
  local name=$1 kind=$2 cmd=$3
  shift 3
  env -i PATH="$tool_path" HOME="$work/home" LANG=C.UTF-8 USER=taskgate \
    TERM=dumb NO_COLOR=1 CI=true TASKGATE=1 \
    RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
    CARGO_TARGET_DIR="$work/cargo-target" \
    python3 - "$work/cases/$name" "$out/$name" "$cmd" "$kind" "$@" <<'PY'
import json, subprocess, sys
cwd, dest, cmd, kind, *facts = sys.argv[1:]
with open(dest + ".log", "wb") as log:
    p = subprocess.run(["sh", "-c", cmd], cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=log, stderr=subprocess.STDOUT)
case = {"command": cmd}
if p.returncode < 0:
    case["exit_code"] = None
    case["signal"] = -p.returncode
else:
    case["exit_code"] = p.returncode
case["kind"] = kind
case["summary_contains"] = [f for f in facts if not f.startswith("finding=") and f != "known_miss"]
for f in facts:
    if f.startswith("finding="):
        case["finding"] = f.removeprefix("finding=")
if "known_miss" in facts:
    case["known_miss"] = True
with open(dest + ".json", "w") as f:
    json.dump(case, f, indent=2, ensure_ascii=False)
    f.write("\n")
status = f"signal {case['signal']}" if "signal" in case else f"exit {p.returncode}"
print(f"{dest.rsplit('/', 1)[-1]}: {status}")
PY
}

# case NAME: true if NAME is to be made now; (re)creates its directory.
case_dir() {
  local name=$1
  if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " == *" $name "* ]]; then
    return 1
  fi
  rm -rf "$work/cases/$name"
  mkdir -p "$work/cases/$name"
  cd "$work/cases/$name"
}

# --- plain commands saying "no" ---------------------------------------------
if case_dir shell-grep-no-match; then
  echo hi >greeting.txt
  capture shell-grep-no-match test_failure 'grep -q hello greeting.txt' \
    '`grep -q hello greeting.txt`' 'exited with status 1' 'no line matched'
fi
if case_dir shell-grep-missing-file; then
  capture shell-grep-missing-file spec_mismatch 'grep -q hello greeting.txt' \
    'missing artifact: greeting.txt'
fi
if case_dir shell-diff-differs; then
  printf 'alpha\nbeta\n' >expected.txt
  printf 'alpha\ngamma\n' >actual.txt
  capture shell-diff-differs test_failure 'diff expected.txt actual.txt' \
    '`diff expected.txt actual.txt`' 'exited with status 1' 'the files differ'
fi
if case_dir shell-test-condition; then
  echo 1.1.0 >VERSION
  capture shell-test-condition test_failure 'test "$(cat VERSION)" = 1.2.0' \
    'exited with status 1' 'the condition is false'
fi
if case_dir shell-script-exit3; then
  printf '#!/bin/sh\necho "checking config"\necho "port 8080 != 9090"\nexit 3\n' >check.sh
  chmod +x check.sh
  capture shell-script-exit3 test_failure './check.sh' \
    '`./check.sh` exited with status 3' 'last output: port 8080 != 9090'
fi
if case_dir shell-script-not-found-midway; then
  printf '#!/bin/sh\nshellcheck ci.sh > lint.txt\ngrep -q "no issues" lint.txt\n' >ci.sh
  chmod +x ci.sh
  capture shell-script-not-found-midway tooling_error './ci.sh' \
    'command not found: shellcheck'
fi
if case_dir make-recipe-grep; then
  echo hi >greeting.txt
  printf 'test:\n\tgrep -q hello greeting.txt\n' >Makefile
  capture make-recipe-grep test_failure 'make test' \
    'make target `test` failed (Makefile:2)' 'exited with status 1'
fi

# --- signals and crashes -----------------------------------------------------
crash_c='#include <stdio.h>
int main(void) { int *p = 0; puts("starting"); fflush(stdout); *p = 1; return 0; }'
abort_c='#include <assert.h>
#include <stdio.h>
int main(void) { int x = 1; puts("checking x"); fflush(stdout); assert(x == 2); return 0; }'
fpe_c='#include <stdio.h>
int main(int argc, char **argv) { (void)argv; puts("dividing"); fflush(stdout); return 10 / (argc - 1); }'
if case_dir c-segfault; then
  echo "$crash_c" >crash.c && gcc -o crash crash.c
  capture c-segfault runtime_error './crash' 'SIGSEGV' '139' 'last output: starting'
fi
if case_dir c-abort-assert; then
  echo "$abort_c" >abort.c && gcc -o abort abort.c
  capture c-abort-assert runtime_error './abort' 'SIGABRT' "Assertion \`x == 2' failed"
fi
if case_dir c-fpe; then
  echo "$fpe_c" >fpe.c && gcc -o fpe fpe.c
  capture c-fpe runtime_error './fpe' 'SIGFPE' '136'
fi
if case_dir shell-kill-segv; then
  capture shell-kill-segv runtime_error 'echo starting; kill -SEGV $$' 'SIGSEGV' 'no exit status'
fi
if case_dir shell-kill-term; then
  capture shell-kill-term tooling_error 'echo serving; kill -TERM $$' 'SIGTERM' 'from outside'
fi
if case_dir shell-kill-kill; then
  capture shell-kill-kill runtime_error 'echo loading; kill -KILL $$' 'SIGKILL' 'out of memory'
fi
if case_dir make-segfault; then
  echo "$crash_c" >crash.c && gcc -o crash crash.c
  printf 'run:\n\t./crash\n' >Makefile
  capture make-segfault runtime_error 'make run' 'SIGSEGV' 'Makefile:2: run'
fi
if case_dir bash-script-segfault; then
  echo "$crash_c" >crash.c && gcc -o crash crash.c
  printf '#!/bin/bash\necho "step 1"\n./crash\necho "step 2 done"\nexit 1\n' >run.sh
  chmod +x run.sh
  capture bash-script-segfault runtime_error './run.sh' 'SIGSEGV' 'Segmentation fault'
fi
if case_dir python-segfault; then
  printf 'import ctypes\nprint("reading", flush=True)\nctypes.string_at(0)\n' >crash.py
  capture python-segfault runtime_error 'python3 -X faulthandler crash.py' 'SIGSEGV'
fi
if case_dir cargo-test-segfault; then
  mkdir src
  printf '[package]\nname = "segv"\nversion = "0.1.0"\nedition = "2021"\n' >Cargo.toml
  cat >src/lib.rs <<'RS'
#[cfg(test)]
mod tests {
    #[test]
    fn reads_through_a_null_pointer() {
        let p: *const i32 = std::ptr::null();
        let v = unsafe { std::ptr::read_volatile(p) };
        assert_eq!(v, 0);
    }
}
RS
  capture cargo-test-segfault runtime_error 'cargo test --quiet' 'SIGSEGV' 'signal: 11'
fi

# --- coreutils timeout -------------------------------------------------------
if case_dir timeout-term; then
  capture timeout-term timeout 'timeout 1 sleep 5' 'timed out after 1 s' 'exits 124'
fi
if case_dir timeout-kill; then
  capture timeout-kill timeout 'timeout -s KILL 1 sleep 5' 'timed out after 1 s' 'SIGKILL'
fi
if case_dir timeout-kill-after; then
  capture timeout-kill-after timeout \
    "timeout -k 1 1 sh -c 'trap \"\" TERM; echo waiting; sleep 5'" 'timed out' 'last output: waiting'
fi
if case_dir timeout-invalid-duration; then
  capture timeout-invalid-duration tooling_error 'timeout 1x sleep 2' \
    '`timeout` itself failed (exit 125)' 'invalid time interval'
fi
if case_dir timeout-command-not-found; then
  capture timeout-command-not-found tooling_error 'timeout 5 golangci-lint run' \
    'command not found: golangci-lint'
fi

# --- pytest's own exit codes -------------------------------------------------
if case_dir pytest-no-tests; then
  printf 'def helper():\n    return 1\n' >test_util.py
  capture pytest-no-tests spec_mismatch 'pytest' 'pytest ran no tests (exit 5)'
fi
if case_dir pytest-deselected; then
  printf 'def test_add():\n    assert 1 + 1 == 2\n\ndef test_sub():\n    assert 2 - 1 == 1\n' >test_calc.py
  capture pytest-deselected spec_mismatch 'pytest -k multiply' \
    'pytest ran no tests (exit 5)' '2 deselected'
fi
if case_dir pytest-usage-unknown-option; then
  printf 'def test_ok():\n    assert True\n' >test_ok.py
  capture pytest-usage-unknown-option tooling_error 'pytest --cov=app' \
    'unrecognized arguments: --cov=app'
fi
if case_dir pytest-file-not-found; then
  mkdir tests
  capture pytest-file-not-found spec_mismatch 'python -m pytest tests/test_api.py' \
    'tests/test_api.py'
fi
if case_dir pytest-internal-error; then
  printf 'def pytest_collection_modifyitems(items):\n    raise RuntimeError("plugin state is corrupt")\n' >conftest.py
  printf 'def test_ok():\n    assert True\n' >test_ok.py
  capture pytest-internal-error tooling_error 'pytest' \
    'pytest internal error (exit 3)' 'RuntimeError: plugin state is corrupt'
fi
if case_dir pytest-collection-syntax-error; then
  printf 'def test_total(:\n    assert total([1, 2]) == 3\n' >test_total.py
  capture pytest-collection-syntax-error build_failure 'pytest' 'SyntaxError' 'in test_total.py:1' \
    finding=test_total.py:1
fi
if case_dir pytest-cannot-import-name; then
  printf 'def load(path):\n    return open(path).read()\n' >app.py
  printf 'from app import parse\n\ndef test_parse():\n    assert parse("a=1") == {"a": "1"}\n' >test_app.py
  capture pytest-cannot-import-name missing_dependency 'pytest' \
    'cannot import `parse` from `app`'
fi
if case_dir pytest-conftest-import; then
  printf 'import fakeredis\n' >conftest.py
  printf 'def test_ok():\n    assert True\n' >test_ok.py
  capture pytest-conftest-import missing_dependency 'pytest' 'fakeredis'
fi

# --- package managers: a missing script or command ---------------------------
package_json='{ "name": "app", "version": "1.0.0", "private": true, "scripts": { "build": "echo build" } }'
if case_dir npm-missing-script; then
  echo "$package_json" >package.json
  capture npm-missing-script tooling_error 'npm test' 'missing script `test`' 'npm'
fi
if case_dir npm-run-missing-script; then
  echo "$package_json" >package.json
  capture npm-run-missing-script tooling_error 'npm run lint' 'missing script `lint`' 'npm'
fi
if case_dir yarn-missing-script; then
  echo "$package_json" >package.json
  capture yarn-missing-script tooling_error 'yarn run lint' 'missing script `lint`' 'yarn'
fi
if case_dir pnpm-missing-script; then
  echo "$package_json" >package.json
  capture pnpm-missing-script tooling_error 'pnpm run lint' 'missing script `lint`' 'pnpm'
fi
if case_dir npx-no-executable; then
  echo "$package_json" >package.json
  capture npx-no-executable tooling_error 'npx --no-install vitest run' 'npx would have to download vitest:'
fi
if case_dir make-missing-makefile-target; then
  printf 'build:\n\techo build\n' >Makefile
  capture make-missing-makefile-target tooling_error 'make lint' \
    "No rule to make target 'lint'"
fi

# --- more tools: one file per family ----------------------------------------
for family in "$root"/scripts/corpus/*.sh; do
  # shellcheck source=/dev/null
  source "$family"
done
