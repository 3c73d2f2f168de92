#!/usr/bin/env bash
# Makes the real test-report fixtures under fixtures/reports/<tool>/ that
# crates/taskgate-core/src/results/ is tested on: each tool runs a small project of its own with
# one passing, one failing and one skipped test, and writes its report.
#
#   bash scripts/reports.sh [TOOL...]     (default: every tool)
#
# Tools: pytest jest node nextest libtest go prove maven
#
# Everything is installed from the package registries into a temp dir
# (pytest from PyPI in a venv, jest and jest-junit from npm) or from Debian
# (golang-go, libtap-formatter-junit-perl, maven's Debian repository). A tool
# that cannot be had is skipped with a note; the files it made before stay.
# Reports are written as the tool wrote them, except that the temp dir's
# path is replaced by /tmp/reports (so a rerun changes only what the tool
# changed: times, versions). fixtures/reports/README.md records the commands
# and the versions (`versions.txt` is rewritten by each run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/fixtures/reports
WORK=$(mktemp -d /tmp/taskgate-reports.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
VERSIONS=$OUT/versions.txt
: >"$VERSIONS.new"

note() { echo "== $*" >&2; }
version() { echo "$1: $2" >>"$VERSIONS.new"; }
# Copies a report into fixtures/reports/<tool>/<name>, the temp dir's path
# replaced by a fixed one.
keep() {
  local tool=$1 src=$2 name=$3
  mkdir -p "$OUT/$tool"
  sed "s#$WORK#/tmp/reports#g" "$src" >"$OUT/$tool/$name"
  echo "   wrote fixtures/reports/$tool/$name" >&2
}
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

tool_pytest() {
  note "pytest (PyPI, in a venv)"
  local d=$WORK/pytest
  mkdir -p "$d/tests"
  python3 -m venv "$d/venv"
  "$d/venv/bin/pip" install -q pytest
  version pytest "$("$d/venv/bin/pytest" --version 2>&1)"
  cat >"$d/tests/test_fetch.py" <<'PY'
import pytest


def add(a, b):
    return a + b


def test_adds():
    assert add(2, 2) == 4


def test_fetch_returns_body():
    body = {"status": 500}
    assert body["status"] == 200, "server said 500"


@pytest.mark.skip(reason="needs the network")
def test_download():
    pass


class TestParser:
    def test_parses_empty(self):
        assert add(0, 0) == 0

    def test_raises_on_garbage(self):
        raise ValueError("unexpected <token> & more")
PY
  (cd "$d" && "$d/venv/bin/pytest" --junitxml=junit.xml -q tests || true)
  keep pytest "$d/junit.xml" junit-xunit2.xml
  # xunit1 is the family that writes `file` and `line` on each testcase.
  (cd "$d" && "$d/venv/bin/pytest" --junitxml=junit1.xml -o junit_family=xunit1 -q tests || true)
  keep pytest "$d/junit1.xml" junit-xunit1.xml
}

tool_jest() {
  note "jest + jest-junit (npm)"
  local d=$WORK/jest
  mkdir -p "$d"
  cat >"$d/package.json" <<'JSON'
{ "name": "reports-jest", "private": true, "version": "1.0.0" }
JSON
  (cd "$d" && npm install -s --no-audit --no-fund jest jest-junit >/dev/null)
  version jest "$(cd "$d" && npx jest --version)"
  version jest-junit "$(cd "$d" && node -p 'require("jest-junit/package.json").version')"
  cat >"$d/sum.test.js" <<'JS'
const sum = (a, b) => a + b;

describe('sum', () => {
  test('adds two numbers', () => {
    expect(sum(1, 2)).toBe(3);
  });

  test('adds negatives', () => {
    expect(sum(-1, -2)).toBe(-4);
  });

  test.skip('adds strings', () => {
    expect(sum('a', 'b')).toBe('ab');
  });
});
JS
  (cd "$d" && JEST_JUNIT_OUTPUT_DIR=. JEST_JUNIT_OUTPUT_NAME=junit.xml \
    JEST_JUNIT_ADD_FILE_ATTRIBUTE=true \
    npx jest --ci --reporters=default --reporters=jest-junit || true)
  keep jest "$d/junit.xml" junit.xml
}

tool_node() {
  note "node --test (built in)"
  local d=$WORK/node
  mkdir -p "$d"
  version node "$(node --version)"
  cat >"$d/math.test.mjs" <<'JS'
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

test('adds', () => {
  assert.equal(1 + 1, 2);
});

test('divides', () => {
  assert.equal(1 / 2, 0.25, 'half is not a quarter');
});

test('rounds', { skip: 'not written yet' }, () => {});

test('parses later', { todo: 'needs a parser' }, () => {
  throw new Error('no parser');
});

describe('strings', () => {
  test('joins', () => {
    assert.equal(['a', 'b'].join('-'), 'a-b');
  });
  test('splits', () => {
    assert.deepEqual('a,b'.split(','), ['a', 'c']);
  });
});
JS
  (cd "$d" && node --test --test-reporter=tap >tap.tap 2>&1 || true)
  keep node "$d/tap.tap" math.tap
  if (cd "$d" && node --test --test-reporter=junit --test-reporter-destination=junit.xml >/dev/null 2>&1 || [ -s junit.xml ]); then
    keep node "$d/junit.xml" junit.xml
  else
    note "node $(node --version) has no junit reporter; skipped"
  fi
}

# A cargo project with one passing, one failing, one ignored test, shared by
# nextest and libtest JSON. Built in its own target dir, offline.
cargo_project() {
  local d=$1
  [ -f "$d/Cargo.toml" ] && return 0
  mkdir -p "$d/src" "$d/.config"
  cat >"$d/Cargo.toml" <<'TOML'
[package]
name = "reports"
version = "0.1.0"
edition = "2021"

[dependencies]

[workspace]
TOML
  cat >"$d/src/lib.rs" <<'RS'
pub fn parse(s: &str) -> Option<u32> {
    s.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_number() {
        assert_eq!(parse(" 42 "), Some(42));
    }

    #[test]
    fn parses_hex() {
        assert_eq!(parse("0x2a"), Some(42), "hex is not read");
    }

    #[test]
    #[ignore = "slow"]
    fn parses_everything() {}
}
RS
  cat >"$d/.config/nextest.toml" <<'TOML'
[profile.ci.junit]
path = "junit.xml"
store-success-output = true
TOML
}

tool_nextest() {
  note "cargo-nextest (junit profile)"
  local d=$WORK/cargo
  cargo_project "$d"
  if ! cargo nextest --version >/dev/null 2>&1; then
    note "cargo-nextest from crates.io (a few minutes)"
    cargo install -q --locked cargo-nextest --root "$WORK/cargo-bin"
    export PATH="$WORK/cargo-bin/bin:$PATH"
  fi
  version cargo-nextest "$(cargo nextest --version | head -1)"
  (cd "$d" && CARGO_TARGET_DIR=$d/target cargo nextest run --offline --profile ci --run-ignored all >/dev/null 2>&1 || true)
  keep nextest "$d/target/nextest/ci/junit.xml" junit.xml
}

tool_libtest() {
  note "libtest JSON (cargo test -- -Z unstable-options --format json)"
  local d=$WORK/cargo
  cargo_project "$d"
  version cargo "$(cargo --version)"
  (cd "$d" && CARGO_TARGET_DIR=$d/target RUSTC_BOOTSTRAP=1 cargo test --offline --lib -q -- \
    -Z unstable-options --format json --report-time >libtest.json 2>/dev/null || true)
  keep libtest "$d/libtest.json" libtest.json
}

tool_go() {
  note "go test -json (Debian golang-go)"
  apt_install golang-go || { note "golang-go not installable; skipped"; return 0; }
  local d=$WORK/go
  mkdir -p "$d/calc" "$d/broken"
  version go "$(go version)"
  cat >"$d/go.mod" <<'MOD'
module example.com/reports

go 1.19
MOD
  cat >"$d/calc/calc.go" <<'GO'
package calc

func Add(a, b int) int { return a + b }
GO
  cat >"$d/calc/calc_test.go" <<'GO'
package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 2) != 4 {
		t.Fatal("2+2")
	}
}

func TestSub(t *testing.T) {
	t.Errorf("Add(2, -1) = %d, want %d", Add(2, -1), 3)
}

func TestSkipped(t *testing.T) {
	t.Skip("needs a database")
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b int
		want int
	}{{"zero", 0, 0, 0}, {"one", 1, 0, 2}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Add(c.a, c.b); got != c.want {
				t.Errorf("got %d, want %d", got, c.want)
			}
		})
	}
}
GO
  cat >"$d/broken/broken.go" <<'GO'
package broken

func Answer() int { return "42" }
GO
  cat >"$d/broken/broken_test.go" <<'GO'
package broken

import "testing"

func TestAnswer(t *testing.T) {
	if Answer() != 42 {
		t.Fatal("no")
	}
}
GO
  (cd "$d" && GOFLAGS=-mod=mod GOCACHE=$d/cache GOPATH=$d/gopath GOPROXY=off \
    go test -json ./calc >calc.json 2>/dev/null || true)
  keep go "$d/calc.json" calc.json
  (cd "$d" && GOCACHE=$d/cache GOPATH=$d/gopath GOPROXY=off \
    go test -json ./... >all.json 2>all.stderr || true)
  keep go "$d/all.json" build-failure.json
  # Go 1.19 writes the compiler's errors to stderr: both streams, as a CI
  # step that redirects them to one file has them.
  (cd "$d" && GOCACHE=$d/cache GOPATH=$d/gopath GOPROXY=off \
    go test -json ./... >all-2.json 2>&1 || true)
  keep go "$d/all-2.json" build-failure-with-stderr.json
}

tool_prove() {
  note "perl Test::More, prove (TAP and TAP::Formatter::JUnit)"
  apt_install libtap-formatter-junit-perl || note "TAP::Formatter::JUnit not installable"
  local d=$WORK/prove
  mkdir -p "$d/t"
  version perl "$(perl -e 'printf "%vd", $^V') Test::More $(perl -MTest::More -e 'print $Test::More::VERSION')"
  cat >"$d/t/basic.t" <<'PL'
use strict;
use warnings;
use Test::More tests => 5;

ok(1 + 1 == 2, 'adds');
is(lc('ABC'), 'abd', 'lowercases');
SKIP: {
    skip 'no network here', 1;
    ok(0, 'downloads');
}
TODO: {
    local $TODO = 'not done';
    ok(0, 'sorts unicode');
}
subtest 'strings' => sub {
    plan tests => 2;
    ok(length('ab') == 2, 'length');
    is(uc('a'), 'B', 'uppercase');
};
PL
  (cd "$d" && perl t/basic.t >basic.tap 2>basic.stderr || true)
  keep prove "$d/basic.tap" basic.tap
  # Test::More writes its diagnostics to stderr: both streams, as a log has them.
  (cd "$d" && perl t/basic.t >basic-diag.tap 2>&1 || true)
  keep prove "$d/basic-diag.tap" basic-with-diagnostics.tap
  (cd "$d" && prove -v t/ >prove-v.txt 2>&1 || true)
  keep prove "$d/prove-v.txt" prove-v.txt
  if perl -MTAP::Formatter::JUnit -e1 2>/dev/null; then
    version TAP::Formatter::JUnit "$(perl -MTAP::Formatter::JUnit -e 'print $TAP::Formatter::JUnit::VERSION')"
    (cd "$d" && prove --formatter TAP::Formatter::JUnit t/ >junit.xml 2>/dev/null || true)
    keep prove "$d/junit.xml" junit.xml
  fi
}

tool_maven() {
  note "Maven Surefire"
  local d=$WORK/maven
  mkdir -p "$d/src/main/java/demo" "$d/src/test/java/demo"
  cat >"$d/pom.xml" <<'XML'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId>
  <artifactId>reports</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
  </properties>
  <dependencies>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>4.x</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
</project>
XML
  cat >"$d/src/main/java/demo/Calc.java" <<'JAVA'
package demo;

public class Calc {
    public static int add(int a, int b) { return a + b; }
}
JAVA
  cat >"$d/src/test/java/demo/CalcTest.java" <<'JAVA'
package demo;

import static org.junit.Assert.assertEquals;
import org.junit.Ignore;
import org.junit.Test;

public class CalcTest {
    @Test public void adds() { assertEquals(4, Calc.add(2, 2)); }
    @Test public void subtracts() { assertEquals("2 - 1", 3, Calc.add(2, -1)); }
    @Ignore("flaky on CI") @Test public void multiplies() { }
}
JAVA
  # Maven Central is not reachable here; Debian's maven-repo (with
  # maven-debian-helper's offline settings) holds surefire and junit4.
  apt_install maven-debian-helper libsurefire-java junit4 >/dev/null 2>&1 ||
    { note "maven's Debian packages not installable; skipped"; return 0; }
  version maven "$(mvn -B --version 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'); surefire from Debian's maven-repo ($(ls /usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin/ | grep -v debian | tr '\n' ' ' | sed 's/ $//'))"
  if (cd "$d" && mvn -q -o -s /etc/maven/settings-debian.xml \
    -Dmaven.repo.local=/usr/share/maven-repo test >mvn.log 2>&1 || true) &&
    compgen -G "$d/target/surefire-reports/TEST-*.xml" >/dev/null; then
    for f in "$d"/target/surefire-reports/TEST-*.xml; do keep maven "$f" "$(basename "$f")"; done
  else
    note "mvn could not build offline from Debian's repository; skipped (see $d/mvn.log)"
    tail -5 "$d/mvn.log" >&2 || true
  fi
}

tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(pytest jest node nextest libtest go prove maven)
for t in "${tools[@]}"; do
  "tool_$t" || note "$t failed; skipped"
done
# Keep the versions of tools not rerun this time.
if [ -f "$VERSIONS" ]; then
  while IFS= read -r line; do
    grep -qF "${line%%:*}:" "$VERSIONS.new" || echo "$line" >>"$VERSIONS.new"
  done <"$VERSIONS"
fi
sort "$VERSIONS.new" >"$VERSIONS" && rm -f "$VERSIONS.new"
cat "$VERSIONS" >&2
