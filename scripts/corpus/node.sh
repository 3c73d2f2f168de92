# Sourced by scripts/failures.sh (uses its case_dir and capture): Node's
# everyday failures — jest, mocha, vitest, node --test, bats, eslint, tsc,
# prettier and plain node programs, with the tools from npm.
# Sourced, so $work and the helpers come from failures.sh; the projects'
# sources are quoted literally on purpose.
# shellcheck shell=bash disable=SC2016,SC2154

pkg='{ "name": "app", "version": "1.0.0", "private": true }'
pkg_esm='{ "name": "app", "version": "1.0.0", "private": true, "type": "module" }'

# A project's own tools are in its node_modules (for `npx --no-install`):
# those cases link the work directory's.

# --- jest ------------------------------------------------------------------------
if case_dir jest-to-equal; then
  echo "$pkg" >package.json
  cat >user.test.js <<'JS'
function parseUser(line) {
  const [name, age] = line.split(",");
  return { name, age };
}

test("parses a name and an age", () => {
  expect(parseUser("ada,36")).toEqual({ name: "ada", age: 36 });
});
JS
  capture jest-to-equal test_failure 'jest' 'parses a name and an age' 'user.test.js:7'
fi
if case_dir jest-thrown-error; then
  echo "$pkg" >package.json
  cat >config.test.js <<'JS'
function port(config) {
  return config.server.port;
}

describe("port", () => {
  test("reads the server port", () => {
    expect(port({ server: { port: 80 } })).toBe(80);
  });
  test("defaults when there is no server section", () => {
    expect(port({})).toBe(8080);
  });
});
JS
  capture jest-thrown-error test_failure 'jest' \
    'defaults when there is no server section' 'TypeError'
fi
if case_dir jest-suite-syntax-error; then
  echo "$pkg" >package.json
  printf 'test("adds", () => {\n  expect(1 + 1).toBe(2);\n);\n' >math.test.js
  capture jest-suite-syntax-error build_failure 'jest' 'math.test.js' known_miss
fi
if case_dir jest-cannot-find-module; then
  echo "$pkg" >package.json
  printf 'const dayjs = require("dayjs");\n\ntest("formats", () => {\n  expect(dayjs("2026-01-02").format("YYYY")).toBe("2026");\n});\n' >date.test.js
  capture jest-cannot-find-module missing_dependency 'jest' 'dayjs'
fi
if case_dir jest-timeout; then
  echo "$pkg" >package.json
  cat >server.test.js <<'JS'
function waitForServer() {
  return new Promise(() => {});
}

test("server answers", async () => {
  await waitForServer();
}, 500);
JS
  capture jest-timeout test_failure 'jest' 'server answers' 'Exceeded timeout'
fi
if case_dir jest-no-tests; then
  echo "$pkg" >package.json
  printf 'module.exports = 1;\n' >index.js
  capture jest-no-tests spec_mismatch 'jest' 'No tests found'
fi
if case_dir jest-two-files; then
  echo "$pkg" >package.json
  ln -s "$work/npm/node_modules" node_modules
  printf 'test("upper", () => {\n  expect("a".toUpperCase()).toBe("A");\n});\ntest("repeat", () => {\n  expect("ab".repeat(2)).toBe("abab ");\n});\n' >strings.test.js
  printf 'test("sorts numbers", () => {\n  expect([10, 9, 1].sort()).toEqual([1, 9, 10]);\n});\n' >arrays.test.js
  capture jest-two-files test_failure 'npx --no-install jest --ci' '.test.js' '2 failed'
fi
if case_dir jest-snapshot-ci; then
  echo "$pkg" >package.json
  printf 'test("renders the banner", () => {\n  expect({ title: "Hello", width: 80 }).toMatchSnapshot();\n});\n' >banner.test.js
  capture jest-snapshot-ci test_failure 'jest --ci' 'renders the banner' 'snapshot'
fi

# --- mocha ---------------------------------------------------------------------
if case_dir mocha-assert; then
  echo "$pkg" >package.json
  mkdir test
  cat >test/price.test.js <<'JS'
const assert = require("node:assert");

function withTax(cents) {
  return Math.round(cents * 1.2);
}

describe("withTax", function () {
  it("adds twenty percent", function () {
    assert.strictEqual(withTax(1000), 1200);
  });
  it("rounds to whole cents", function () {
    assert.strictEqual(withTax(333), 399);
  });
});
JS
  capture mocha-assert test_failure 'mocha' 'rounds to whole cents' 'test/price.test.js:12'
fi
if case_dir mocha-deep-equal-many; then
  echo "$pkg" >package.json
  ln -s "$work/npm/node_modules" node_modules
  mkdir test
  cat >test/list.test.js <<'JS'
const assert = require("node:assert");

describe("lists", function () {
  it("dedupes", function () {
    assert.deepStrictEqual([...new Set([1, 1, 2])], [1, 2, 2]);
  });
  it("flattens", function () {
    assert.deepStrictEqual([[1], [2, [3]]].flat(), [1, 2, 3]);
  });
  it("counts", function () {
    assert.strictEqual([1, 2, 3].length, 3);
  });
});
JS
  capture mocha-deep-equal-many test_failure 'npx --no-install mocha' 'dedupes' '2 failing'
fi
if case_dir mocha-timeout; then
  echo "$pkg" >package.json
  mkdir test
  printf 'describe("queue", function () {\n  it("drains", function (done) {\n    setTimeout(() => {}, 10);\n  });\n});\n' >test/queue.test.js
  capture mocha-timeout test_failure 'mocha --timeout 300' 'drains' 'Timeout of 300ms exceeded'
fi
if case_dir mocha-no-files; then
  echo "$pkg" >package.json
  capture mocha-no-files spec_mismatch 'mocha' 'No test files found'
fi
if case_dir mocha-require-missing; then
  echo "$pkg" >package.json
  mkdir test
  printf 'const chai = require("chai");\n\nit("works", function () {\n  chai.expect(1).to.equal(1);\n});\n' >test/chai.test.js
  capture mocha-require-missing missing_dependency 'mocha' 'chai'
fi
if case_dir npm-test-mocha; then
  printf '{ "name": "app", "version": "1.0.0", "private": true, "scripts": { "test": "mocha" } }\n' >package.json
  mkdir test
  printf 'const assert = require("node:assert");\n\nit("joins paths", function () {\n  assert.strictEqual(["a", "b"].join("/"), "a\\\\b");\n});\n' >test/path.test.js
  capture npm-test-mocha test_failure 'npm test' 'joins paths'
fi

# --- vitest --------------------------------------------------------------------
if case_dir vitest-assert; then
  echo "$pkg_esm" >package.json
  cat >sum.test.js <<'JS'
import { expect, test } from "vitest";

const sum = (xs) => xs.reduce((a, b) => a + b, 1);

test("sums an empty list to zero", () => {
  expect(sum([])).toBe(0);
});

test("sums two numbers", () => {
  expect(sum([2, 3])).toBe(5);
});
JS
  capture vitest-assert test_failure 'vitest run' 'sums an empty list to zero' 'sum.test.js:6'
fi
if case_dir vitest-thrown; then
  echo "$pkg_esm" >package.json
  cat >parse.test.js <<'JS'
import { describe, expect, it } from "vitest";

function parse(json) {
  return JSON.parse(json).items.map((i) => i.id);
}

describe("parse", () => {
  it("reads item ids", () => {
    expect(parse('{"items":[{"id":1}]}')).toEqual([1]);
  });
  it("reads an empty document", () => {
    expect(parse("{}")).toEqual([]);
  });
});
JS
  capture vitest-thrown test_failure 'vitest run' 'reads an empty document' 'TypeError'
fi
if case_dir vitest-no-tests; then
  echo "$pkg_esm" >package.json
  printf 'export const x = 1;\n' >index.js
  capture vitest-no-tests spec_mismatch 'vitest run' 'No test files found'
fi
if case_dir vitest-import-missing; then
  echo "$pkg_esm" >package.json
  printf 'import { expect, test } from "vitest";\nimport { format } from "date-fns";\n\ntest("formats", () => {\n  expect(format(new Date(0), "yyyy")).toBe("1970");\n});\n' >date.test.js
  capture vitest-import-missing missing_dependency 'vitest run' 'date-fns'
fi

# --- node --test ---------------------------------------------------------------
if case_dir node-test-deep-equal; then
  echo "$pkg" >package.json
  cat >merge.test.js <<'JS'
const test = require("node:test");
const assert = require("node:assert");

function merge(a, b) {
  return { ...b, ...a };
}

test("later values win", () => {
  assert.deepStrictEqual(merge({ x: 1 }, { x: 2 }), { x: 2 });
});
JS
  capture node-test-deep-equal test_failure 'node --test' 'later values win'
fi
if case_dir node-test-subtests; then
  echo "$pkg" >package.json
  cat >queue.test.js <<'JS'
const { describe, it } = require("node:test");
const assert = require("node:assert");

describe("queue", () => {
  it("starts empty", () => {
    assert.strictEqual([].length, 0);
  });
  it("pops in order", () => {
    const q = [1, 2, 3];
    assert.strictEqual(q.pop(), 1);
  });
});
JS
  capture node-test-subtests test_failure 'node --test' 'pops in order'
fi
if case_dir node-test-syntax-error; then
  echo "$pkg" >package.json
  printf 'const test = require("node:test");\n\ntest("x", () => {\n  let a = ;\n});\n' >broken.test.js
  capture node-test-syntax-error build_failure 'node --test' 'broken.test.js' known_miss
fi

# --- plain node programs -------------------------------------------------------
if case_dir node-esm-missing-package; then
  echo "$pkg_esm" >package.json
  printf 'import express from "express";\n\nexpress().listen(3000);\n' >server.js
  capture node-esm-missing-package missing_dependency 'node server.js' 'express'
fi
if case_dir node-unhandled-rejection; then
  echo "$pkg" >package.json
  printf 'async function load() {\n  throw new Error("config file is empty");\n}\n\nload();\n' >load.js
  capture node-unhandled-rejection runtime_error 'node load.js' 'config file is empty' 'load.js:2'
fi
if case_dir node-syntax-error; then
  echo "$pkg" >package.json
  printf 'const items = [1, 2, 3;\nconsole.log(items);\n' >list.js
  capture node-syntax-error build_failure 'node list.js' 'SyntaxError' 'list.js:1' known_miss
fi

# --- bats ------------------------------------------------------------------------
if case_dir bats-fail; then
  printf '#!/bin/sh\necho "usage: greet NAME"\n' >greet.sh
  chmod +x greet.sh
  cat >greet.bats <<'BATS'
@test "greets by name" {
  run ./greet.sh ada
  [ "$status" -eq 0 ]
  [ "$output" = "hello ada" ]
}

@test "prints usage without a name" {
  run ./greet.sh
  [ "$output" = "usage: greet NAME" ]
}
BATS
  capture bats-fail test_failure 'bats greet.bats' 'greets by name'
fi
if case_dir bats-command-fails; then
  cat >build.bats <<'BATS'
setup() {
  mkdir -p out
}

@test "build writes the archive" {
  tar -czf out/app.tar.gz src
  [ -f out/app.tar.gz ]
}
BATS
  capture bats-command-fails test_failure 'bats build.bats' 'build writes the archive'
fi

# --- eslint, tsc, prettier -----------------------------------------------------
eslint_config='export default [{ rules: { "no-undef": "error", "no-unused-vars": "error", "eqeqeq": "error" }, languageOptions: { sourceType: "module", globals: { console: "readonly" } } }];'
if case_dir eslint-no-undef; then
  echo "$pkg_esm" >package.json
  echo "$eslint_config" >eslint.config.js
  mkdir src
  printf 'export function total(items) {\n  let sum = 0;\n  for (const i of item) sum += i.price;\n  if (sum == "0") console.log("free");\n  return sum;\n}\n' >src/cart.js
  capture eslint-no-undef lint_failure 'eslint src' 'src/cart.js' 'no-undef'
fi
if case_dir eslint-parse-error; then
  echo "$pkg_esm" >package.json
  echo "$eslint_config" >eslint.config.js
  printf 'export const f = (a, => a;\n' >broken.js
  capture eslint-parse-error lint_failure 'eslint .' 'broken.js' 'Parsing error'
fi
if case_dir eslint-no-config; then
  echo "$pkg" >package.json
  printf 'var x = 1;\n' >a.js
  capture eslint-no-config tooling_error 'eslint .' 'eslint.config' known_miss
fi
if case_dir tsc-type-mismatch; then
  mkdir src
  printf '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "es2022", "module": "nodenext" }, "include": ["src"] }\n' >tsconfig.json
  cat >src/order.ts <<'TS'
interface Order {
  id: number;
  total: number;
}

export function load(raw: string): Order {
  const data = JSON.parse(raw) as { id: string; total: number };
  return { id: data.id, total: data.total };
}
TS
  capture tsc-type-mismatch build_failure 'tsc -p .' 'TS2322' 'src/order.ts:8' finding=src/order.ts:8
fi
if case_dir tsc-cannot-find-module; then
  mkdir src
  printf '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "es2022", "module": "nodenext" }, "include": ["src"] }\n' >tsconfig.json
  printf 'import { z } from "zod";\n\nexport const User = z.object({ name: z.string() });\n' >src/schema.ts
  capture tsc-cannot-find-module missing_dependency 'tsc -p .' 'zod' 'src/schema.ts:1' known_miss
fi
if case_dir tsc-noemit-files; then
  printf 'function greet(name: string): string {\n  return "hi " + name;\n}\n\ngreet(42);\ngreet();\n' >greet.ts
  capture tsc-noemit-files build_failure 'tsc --noEmit greet.ts' 'greet.ts:5' 'TS2345'
fi
if case_dir prettier-check; then
  echo "$pkg" >package.json
  printf 'const a = {b:1,\n  c:2}\nfunction f( x ){return x}\n' >app.js
  printf 'export const ok = 1;\n' >ok.js
  capture prettier-check lint_failure 'prettier --check .' 'prettier' 'app.js' known_miss
fi
if case_dir prettier-syntax-error; then
  echo "$pkg" >package.json
  printf 'const a = {b:1,,};\n' >bad.js
  capture prettier-syntax-error lint_failure 'prettier --check bad.js' 'bad.js'
fi
