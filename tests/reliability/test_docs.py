"""docs/reliability.md names the test behind every guarantee; every name must exist (file and function)."""

from __future__ import annotations

import ast
import re

from tests.conftest import REPO

DOC = REPO / "docs" / "reliability.md"
REF = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)")


def _functions(path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_named_here_exists() -> None:
    refs = REF.findall(DOC.read_text())
    assert len(refs) >= 40, len(refs)  # every section names its tests
    missing = []
    for file, name in refs:
        path = REPO / file
        if not path.exists() or name not in _functions(path):
            missing.append(f"{file}::{name}")
    assert not missing, missing


# Controls and housekeeping: they keep other tests honest but are not guarantees of their own.
NOT_GUARANTEES = {"test_tiny_store_builder_is_real", "test_fuzz_inputs_exist",
                  "test_every_reliability_test_is_documented"}


def test_every_reliability_test_is_documented() -> None:
    """The other direction: a reliability test the doc does not mention is a guarantee nobody can find."""
    named = {name for _, name in REF.findall(DOC.read_text())}
    undocumented = [f"{path.name}::{name}" for path in sorted((REPO / "tests" / "reliability").glob("test_*.py"))
                    for name in sorted(_functions(path))
                    if name.startswith("test_") and name not in named and name not in NOT_GUARANTEES]
    assert not undocumented, undocumented
