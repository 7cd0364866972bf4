"""The suite's file order (tests/conftest.py): the slowest files first, every test kept, each file's tests together
and in their own order — what lets `--dist loadfile --no-loadscope-reorder` start the long files first."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from tests.conftest import REPO, SLOWEST_FILES, file_order


@dataclass
class Item:
    nodeid: str


def test_slowest_files_come_first_and_nothing_is_lost_or_split():
    ids = ["tests/a/test_x.py::t1", "tests/runner/test_plan.py::p1", "tests/a/test_x.py::t2",
           "tests/b/test_y.py::y1", "tests/runner/test_factorized.py::f1", "tests/runner/test_plan.py::p2",
           "tests/b/test_y.py::y2", "tests/b/test_y.py::y3"]
    got = [i.nodeid for i in file_order([Item(x) for x in ids])]
    assert sorted(got) == sorted(ids)  # every test, once
    assert got == ["tests/runner/test_factorized.py::f1", "tests/runner/test_plan.py::p1",
                   "tests/runner/test_plan.py::p2",  # the listed slow files, slowest first
                   "tests/b/test_y.py::y1", "tests/b/test_y.py::y2", "tests/b/test_y.py::y3",  # then most tests first
                   "tests/a/test_x.py::t1", "tests/a/test_x.py::t2"]


def test_pytest_collects_in_that_order_and_the_list_names_real_files():
    assert all((REPO / f).is_file() for f in SLOWEST_FILES), [f for f in SLOWEST_FILES if not (REPO / f).is_file()]
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/test_cli.py", "tests/runner/test_plan.py", "tests/runner/test_factorized.py"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    files = [line.split("::", 1)[0] for line in out.stdout.splitlines() if "::" in line]
    order = list(dict.fromkeys(files))
    assert order == ["tests/runner/test_factorized.py", "tests/runner/test_plan.py", "tests/test_cli.py"]
    assert len(files) == len(set(line for line in out.stdout.splitlines() if "::" in line))
