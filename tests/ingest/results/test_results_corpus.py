"""The bad-input corpus through the real CLI: exit 2, one line ``error: <file>:<line>: ...``, no traceback,
nothing written (the store file's bytes and every table's row count are unchanged)."""

from __future__ import annotations

import hashlib
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cli
from tests.ingest.results.conftest import REPO, SAMPLES, counts

CORPUS = REPO / "tests" / "corpus" / "results"
CASES: list[dict[str, Any]] = tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["case"]
GiB = 1024**3


def _sparse(path: Path) -> None:
    with path.open("wb") as fh:  # no disk blocks are written
        fh.truncate(2 * GiB)


GENERATORS: dict[str, Callable[[Path], None]] = {
    "sparse_2gb": _sparse,
    "missing": lambda path: None,
    "copy_specbench": lambda path: shutil.copyfile(SAMPLES / "specbench_qwen3-8b-eagle3.jsonl", path),
}


@pytest.fixture(scope="module")
def seeded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store that already holds an import, so 'unchanged' is checked against real rows."""
    path = tmp_path_factory.mktemp("corpus") / "store.duckdb"
    res = cli("ingest", "results", str(SAMPLES / "vllm_bench_eagle3_qwen_code.json"), "--db", str(path))
    assert res.returncode == 0, res.stderr
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_rejected(store: Path, tmp_path: Path, args: list[str], line: int, contains: str, name: str) -> None:
    db = tmp_path / "store.duckdb"
    shutil.copyfile(store, db)
    before, digest = counts(db), _sha(db)
    res = cli("ingest", "results", *args, "--db", str(db), timeout=120)
    err = res.stderr.strip()
    assert res.returncode == 2, (res.returncode, err)
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: ") and f":{line}: " in err and contains in err, err
    assert name in err, err
    assert _sha(db) == digest and counts(db) == before


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_corpus_case_is_rejected_cleanly(case: dict[str, Any], seeded_store: Path, tmp_path: Path) -> None:
    if "generate" in case:
        path = tmp_path / case["file"]
        GENERATORS[case["generate"]](path)
    else:
        path = CORPUS / case["file"]
    name = "does_not_exist" if "--baseline" in case.get("args", []) else case["file"]
    _check_rejected(seeded_store, tmp_path, [str(path), *case.get("args", [])], case["line"], case["contains"], name)


def test_corpus_covers_every_format() -> None:
    names = [c["file"] for c in CASES]
    for prefix in ("vllm_", "specbench_", "sglang_", "published_", "export_"):
        assert sum(n.startswith(prefix) for n in names) >= 4, prefix
    assert len(CASES) >= 15


def test_bad_second_file_leaves_the_store_unchanged(seeded_store: Path, tmp_path: Path) -> None:
    """Good files first, a corrupt one last: the whole invocation is rejected and nothing lands."""
    good = [str(SAMPLES / "vllm_bench_mtp_sweep.jsonl"), str(SAMPLES / "sglang_bench_speculative.jsonl")]
    bad = CORPUS / "specbench_two_models.jsonl"
    _check_rejected(seeded_store, tmp_path, [*good, str(bad)], 9, "differs from", bad.name)


@pytest.mark.parametrize(("args", "message"), [
    (["--format", "nope"], "error: argument --format: invalid choice"),
    (["--set", "colour=blue"], "error: --set colour: unknown key"),
    (["--set", "concurrency=-4"], "error: --set concurrency=-4: expected a whole number"),
    (["--baseline", str(SAMPLES / "specbench_qwen3-8b-vanilla.jsonl")],
     "error: --baseline applies to Spec-Bench output files only"),
])
def test_bad_usage_is_one_line_and_writes_nothing(args: list[str], message: str, seeded_store: Path,
                                                  tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    shutil.copyfile(seeded_store, db)
    digest = _sha(db)
    res = cli("ingest", "results", str(SAMPLES / "vllm_bench_mtp_sweep.jsonl"), *args, "--db", str(db))
    assert res.returncode == 2 and res.stderr.startswith(message), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and _sha(db) == digest
