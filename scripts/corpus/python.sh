# Sourced by scripts/failures.sh (uses its case_dir and capture): Python's
# everyday failures — pytest's failure shapes, unittest, plain scripts, and
# the linters and type checkers from PyPI (flake8, pylint, isort, bandit,
# mypy, ruff, black).
# Sourced, so $work and the helpers come from failures.sh; the projects'
# sources are quoted literally on purpose.
# shellcheck shell=bash disable=SC2016,SC2154

# --- pytest: how tests fail --------------------------------------------------
if case_dir pytest-class-method; then
  cat >test_cart.py <<'PY'
class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price):
        self.items.append((name, price))

    def total(self):
        return sum(p for _, p in self.items[1:])


class TestCart:
    def test_empty_cart_totals_zero(self):
        assert Cart().total() == 0

    def test_total_adds_every_item(self):
        cart = Cart()
        cart.add("pen", 2)
        cart.add("ink", 5)
        assert cart.total() == 7
PY
  capture pytest-class-method test_failure 'pytest' \
    'TestCart::test_total_adds_every_item' 'assert 5 == 7' finding=test_cart.py:20
fi
if case_dir pytest-parametrize; then
  cat >test_slug.py <<'PY'
import pytest


def slugify(text):
    return text.lower().replace(" ", "-")


@pytest.mark.parametrize(
    "text, slug",
    [("Hello World", "hello-world"), ("Déjà Vu", "deja-vu"), ("a  b", "a-b")],
)
def test_slugify(text, slug):
    assert slugify(text) == slug
PY
  capture pytest-parametrize test_failure 'pytest -q' 'test_slugify[' '2 failed, 1 passed' known_miss
fi
if case_dir pytest-exception-in-test; then
  cat >stats.py <<'PY'
def mean(values):
    return sum(values) / len(values)
PY
  cat >test_stats.py <<'PY'
from stats import mean


def test_mean_of_values():
    assert mean([1, 2, 3]) == 2


def test_mean_of_nothing_is_zero():
    assert mean([]) == 0
PY
  capture pytest-exception-in-test test_failure 'pytest' \
    'test_mean_of_nothing_is_zero' 'ZeroDivisionError'
fi
if case_dir pytest-raises-not-raised; then
  cat >test_parse.py <<'PY'
import pytest


def parse_port(text):
    return int(text) if text.isdigit() else 0


def test_rejects_words():
    with pytest.raises(ValueError):
        parse_port("http")
PY
  capture pytest-raises-not-raised test_failure 'python -m pytest' \
    'test_rejects_words' 'DID NOT RAISE'
fi
if case_dir pytest-fixture-error; then
  cat >test_db.py <<'PY'
import pytest


@pytest.fixture
def db():
    raise ConnectionError("database at localhost:5432 refused the connection")


def test_users_table_is_empty(db):
    assert db.count("users") == 0
PY
  capture pytest-fixture-error test_failure 'pytest' \
    'test_users_table_is_empty' 'ConnectionError'
fi
if case_dir pytest-fixture-not-found; then
  cat >test_api.py <<'PY'
def test_health_endpoint(client):
    assert client.get("/health").status_code == 200
PY
  capture pytest-fixture-not-found test_failure 'pytest' \
    'test_health_endpoint' "fixture 'client' not found"
fi
if case_dir pytest-xfail-strict; then
  cat >test_known.py <<'PY'
import pytest


@pytest.mark.xfail(strict=True, reason="rounding bug #12")
def test_rounds_half_to_even():
    assert round(2.5) == 2
PY
  capture pytest-xfail-strict test_failure 'pytest -rA' 'test_rounds_half_to_even' 'XPASS(strict)'
fi
if case_dir pytest-approx; then
  cat >test_geometry.py <<'PY'
import math

import pytest


def circle_area(r):
    return 3.14 * r * r


def test_circle_area_is_pi_r_squared():
    assert circle_area(2) == pytest.approx(math.pi * 4)
PY
  capture pytest-approx test_failure 'pytest' 'test_circle_area_is_pi_r_squared' \
    'assert 12.56 == 12.566370614359172'
fi
if case_dir pytest-dict-diff-verbose; then
  cat >test_config.py <<'PY'
def load():
    return {"host": "localhost", "port": 8080, "debug": True}


def test_defaults():
    assert load() == {"host": "localhost", "port": 80, "debug": False}
PY
  capture pytest-dict-diff-verbose test_failure 'pytest -vv' 'test_defaults' \
    finding=test_config.py:6
fi
if case_dir pytest-stop-first; then
  mkdir tests
  printf 'def test_one():\n    assert "a" * 2 == "aa"\n\ndef test_two():\n    assert "abc".upper() == "Abc"\n\ndef test_three():\n    assert False\n' >tests/test_text.py
  capture pytest-stop-first test_failure 'pytest -x tests' \
    'tests/test_text.py::test_two' "assert 'ABC' == 'Abc'"
fi
if case_dir pytest-tb-line; then
  printf 'def test_sum():\n    assert sum([1, 2]) == 4\n\ndef test_len():\n    assert len("abc") == 2\n' >test_builtins.py
  capture pytest-tb-line test_failure 'pytest --tb=line' 'test_sum' '2 failed'
fi
if case_dir pytest-teardown-error; then
  cat >test_files.py <<'PY'
import pytest


@pytest.fixture
def workdir(tmp_path):
    yield tmp_path
    raise RuntimeError("could not remove the lock file")


def test_writes_a_file(workdir):
    (workdir / "a.txt").write_text("hi")
    assert (workdir / "a.txt").exists()
PY
  capture pytest-teardown-error test_failure 'pytest' 'test_writes_a_file' 'RuntimeError'
fi
if case_dir pytest-doctest; then
  cat >money.py <<'PY'
def cents(amount):
    """Amount in cents.

    >>> cents(1.25)
    125
    >>> cents(0.29)
    29
    """
    return int(amount * 100)
PY
  capture pytest-doctest test_failure 'pytest --doctest-modules money.py' 'money.cents'
fi
if case_dir pytest-missing-module-in-test; then
  printf 'import boto3\n\ndef test_bucket_name():\n    assert boto3.resource("s3").Bucket("b").name == "b"\n' >test_s3.py
  capture pytest-missing-module-in-test missing_dependency 'pytest' 'boto3' finding=test_s3.py:1
fi

# --- unittest ------------------------------------------------------------------
if case_dir unittest-error; then
  cat >test_inventory.py <<'PY'
import unittest


class Inventory:
    def __init__(self):
        self.stock = {}

    def remove(self, item):
        self.stock[item] -= 1


class InventoryTest(unittest.TestCase):
    def test_remove_unknown_item_is_ignored(self):
        Inventory().remove("bolt")

    def test_new_inventory_is_empty(self):
        self.assertEqual(Inventory().stock, {})
PY
  capture unittest-error test_failure 'python -m unittest' \
    'test_remove_unknown_item_is_ignored' 'KeyError'
fi
if case_dir unittest-assert-raises; then
  cat >test_version.py <<'PY'
import unittest


def parse_version(text):
    return tuple(int(p) for p in text.split(".") if p.isdigit())


class ParseVersionTest(unittest.TestCase):
    def test_rejects_garbage(self):
        with self.assertRaises(ValueError):
            parse_version("one.two")

    def test_reads_three_parts(self):
        self.assertEqual(parse_version("1.2.3"), (1, 2, 3))
PY
  capture unittest-assert-raises test_failure 'python -m unittest discover -v' \
    'test_rejects_garbage' 'ValueError not raised'
fi
if case_dir unittest-import-error; then
  printf 'import unittest\nimport requests\n\nclass T(unittest.TestCase):\n    def test_get(self):\n        pass\n' >test_http.py
  capture unittest-import-error missing_dependency 'python -m unittest test_http' 'requests'
fi
if case_dir unittest-multiple-failures; then
  cat >test_strings.py <<'PY'
import unittest


class StringsTest(unittest.TestCase):
    def test_title_case(self):
        self.assertEqual("hello world".title(), "Hello world")

    def test_strip(self):
        self.assertEqual("  x ".strip(), "x")

    def test_split_limit(self):
        self.assertListEqual("a,b,c".split(",", 1), ["a", "b", "c"])
PY
  capture unittest-multiple-failures test_failure 'python -m unittest' \
    'test_split_limit' 'failures=2'
fi

# --- plain Python programs -----------------------------------------------------
if case_dir python-value-error; then
  printf 'import sys\n\ndef port(text):\n    return int(text)\n\nprint("listening on", port("80a"))\n' >serve.py
  capture python-value-error runtime_error 'python serve.py' \
    "ValueError: invalid literal for int() with base 10: '80a'" 'serve.py:4'
fi
if case_dir python-assert-script; then
  printf 'rows = [1, 2, 3]\nprint("checking", len(rows), "rows")\nassert len(rows) == 4, f"expected 4 rows, got {len(rows)}"\n' >check_rows.py
  capture python-assert-script runtime_error 'python check_rows.py' \
    'AssertionError: expected 4 rows, got 3' 'check_rows.py:3'
fi
if case_dir python-indentation-error; then
  printf 'def main():\n    print("a")\n      print("b")\n\nmain()\n' >indent.py
  capture python-indentation-error build_failure 'python indent.py' \
    'IndentationError' 'indent.py:3'
fi
if case_dir python-recursion; then
  printf 'def depth(n):\n    return depth(n + 1)\n\nprint(depth(0))\n' >deep.py
  capture python-recursion runtime_error 'python deep.py' 'RecursionError' 'deep.py:2'
fi
if case_dir python-attribute-error; then
  printf 'class User:\n    def __init__(self, name):\n        self.name = name\n\nu = User("ada")\nprint(u.email.lower())\n' >user.py
  capture python-attribute-error runtime_error 'python3 user.py' \
    "AttributeError: 'User' object has no attribute 'email'" 'user.py:6'
fi

# --- linters and type checkers -------------------------------------------------
lintee='import os
import sys


def greet(name):
    message = "hello " + name
    return "hello %s" % nme


def very_long_line():
    return "this line is far too long for the style guide that the project follows, it goes on and on"
'
if case_dir flake8-errors; then
  echo "$lintee" >greet.py
  capture flake8-errors lint_failure 'flake8 .' 'greet.py:1' 'F401' finding=./greet.py:1
fi
if case_dir flake8-syntax-error; then
  printf 'def f(:\n    pass\n' >broken.py
  capture flake8-syntax-error lint_failure 'flake8 broken.py' 'broken.py:1' 'E999'
fi
if case_dir pylint-errors; then
  echo "$lintee" >greet.py
  capture pylint-errors lint_failure 'pylint greet.py' 'greet.py' 'undefined-variable'
fi
if case_dir pylint-import-error; then
  printf '"""Client."""\nimport httpx\n\n\ndef fetch(url):\n    """Fetch."""\n    return httpx.get(url).text\n' >client.py
  capture pylint-import-error lint_failure 'pylint --disable=C client.py' 'client.py:2' 'import-error'
fi
if case_dir isort-check; then
  printf 'import sys\nimport os\nfrom collections import OrderedDict, defaultdict\nimport json\n' >imports.py
  capture isort-check lint_failure 'isort --check-only --diff .' 'isort' 'imports.py'
fi
if case_dir bandit-findings; then
  cat >deploy.py <<'PY'
import subprocess


def run(cmd):
    return subprocess.call(cmd, shell=True)


def token():
    password = "hunter2"
    return password
PY
  capture bandit-findings lint_failure 'bandit -q -r .' 'bandit' 'deploy.py'
fi
if case_dir mypy-arg-type; then
  cat >orders.py <<'PY'
def total(prices: list[float], discount: float) -> float:
    return sum(prices) * (1 - discount)


print(total([1.0, 2.0], "10%"))
PY
  capture mypy-arg-type lint_failure 'mypy orders.py' 'orders.py:5' 'arg-type' finding=orders.py:5
fi
if case_dir mypy-import-not-found; then
  printf 'import requests_cache\n\nrequests_cache.install_cache("x")\n' >cache.py
  capture mypy-import-not-found lint_failure 'mypy --strict cache.py' 'cache.py:1' 'import-not-found'
fi
if case_dir mypy-syntax-error; then
  printf 'def f(x: int) -> int\n    return x\n' >bad.py
  capture mypy-syntax-error lint_failure 'mypy bad.py' 'bad.py:1' 'syntax'
fi
if case_dir ruff-format-check; then
  printf 'x = {  "a":1,"b" :2 }\ndef f( a,b ):\n  return a+b\n' >fmt_me.py
  capture ruff-format-check lint_failure 'ruff format --check .' 'ruff' 'fmt_me.py'
fi
if case_dir ruff-check-undefined-name; then
  printf 'def area(r):\n    return pi * r ** 2\n' >area.py
  capture ruff-check-undefined-name lint_failure 'ruff check --no-cache .' 'F821' 'area.py:2'
fi
if case_dir ruff-syntax-error; then
  printf 'def f(:\n    pass\n' >broken.py
  capture ruff-syntax-error lint_failure 'ruff check --no-cache broken.py' 'broken.py:1'
fi
if case_dir black-check-many; then
  printf 'x = {  "a":1 }\n' >one.py
  printf 'def f( a ):\n  return a\n' >two.py
  printf 'y = 1\n' >three.py
  capture black-check-many lint_failure 'black --check .' 'black' '2 files would be reformatted' 'one.py'
fi
if case_dir black-cannot-parse; then
  printf 'print "hello"\n' >legacy.py
  capture black-cannot-parse lint_failure 'black --check legacy.py' 'legacy.py:1' 'cannot parse' known_miss
fi
