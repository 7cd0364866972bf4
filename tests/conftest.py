"""Shared test fixtures: the repo root, a CLI runner, a built default store, small matrices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

REPO = Path(__file__).resolve().parent.parent

SMALL_MATRIX = """
name = "small"
gpus = ["MI300X", "MI355X"]
[methods.none]
[methods.eagle3]
depths = [2, 3]
[methods.ngram]
depths = [3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[families.Gemma]
model = "google/gemma-4-31B-it"
[workloads.code]
max_tokens = 256
[workloads.chat]
max_tokens = 256
[load]
concurrency = [1, 16]
[run]
requests_per_cell = 60
"""


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def cli(module: str, *args: str, db: Path | None = None, timeout: float = 600,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m module args`` from the repo root; returns the completed process (text)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    if db is not None:
        full_env["SPECTUNE_DB"] = str(db)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> tuple[Path, FileLock]:
    """A folder every pytest-xdist worker of this run sees (the run's base temp), and a lock to build it once.

    Without workers it is a fresh folder of this session. Session fixtures that build something expensive and
    read-only (the default store, the 12 M-row store) build it once under the lock; the others wait and reuse it.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        return folder, FileLock(str(folder / ".lock"))
    folder = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    folder.mkdir(exist_ok=True)
    return folder, FileLock(str(folder) + ".lock")


@pytest.fixture(scope="session")
def default_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded default data built into a fresh store (read-only use, please)."""
    from ingest.default_data import build_default_db

    folder, lock = shared_folder(tmp_path_factory, "default")
    path = folder / "default.duckdb"
    with lock:
        if not (folder / "built").exists():
            build_default_db(path)
            (folder / "built").write_text("ok")
    return path


@pytest.fixture(scope="session")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A store of 12.1 M generated request rows (tests/big_store.py; about a minute), shared by the AppTest and
    Chromium scale tests; read-only use. Returns (path, {requests, cells, generate_s, ingest_s}).
    ``SPECTUNE_BIG_STORE=PATH`` runs the same tests on a store built beforehand (the 100 M-row benchmark store)."""
    from tests.big_store import build_big_store, existing_big_store

    given = os.environ.get("SPECTUNE_BIG_STORE")
    if given:
        return existing_big_store(Path(given))
    folder, lock = shared_folder(tmp_path_factory, "big_store")
    with lock:
        if (folder / "built.json").exists():
            return (folder / "big.duckdb"), json.loads((folder / "built.json").read_text())
        path, facts = build_big_store(folder)
        (folder / "built.json").write_text(json.dumps(facts))
        return path, facts


@pytest.fixture
def small_matrix(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL_MATRIX)
    return path


# Longest first (`scripts/test.sh` runs `--dist loadfile --no-loadscope-reorder`): each worker takes the next file
# when it is done, so a long file started last runs on alone while the other worker idles. These files took the
# most seconds in CI on this 2-core machine (2026-12-03, `--durations`), slowest first; every other file follows
# in pytest-xdist's own order (most tests first). Order only: which tests run, and each file's own order, is
# unchanged. test_factorized (half the families since: ~275 -> ~160 s), test_concurrency (two fewer reference
# runs) and test_quick (a 5 s watch round, one ingest, the session's default store) are placed by their new times.
SLOWEST_FILES = (
    "tests/runner/test_vllm_real.py",
    "tests/runner/vllm/test_ground_truth.py",
    "tests/runner/test_factorized.py",
    "tests/runner/vllm/test_tune_real.py",
    "tests/reliability/test_concurrency.py",
    "tests/ingest/watch/test_real_ab.py",
    "tests/benchmarks/test_quick.py",
    "tests/reliability/test_corpus_cli.py",
    "tests/reliability/test_injection.py",
    "tests/runner/vllm/test_real_vllm.py",
    "tests/runner/test_adaptive.py",
    "tests/runner/test_tune.py",
    "tests/runner/test_plan.py",
    "tests/ingest/watch/test_real_vllm.py",
    "tests/runner/test_resume.py",
    "tests/benchmarks/test_rescore_read.py",
    "tests/runner/test_cluster.py",
    "tests/analysis/production/test_real_fleet.py",
    "tests/ingest/test_requestlog_real_vllm.py",
    "tests/reliability/test_soak.py",
    "tests/ingest/watch/test_prometheus.py",
)


def file_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items with whole files reordered: :data:`SLOWEST_FILES` first, then the others by test count (most first,
    as pytest-xdist's reorder), each file's items kept together in their own order."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    rank = {f: i for i, f in enumerate(SLOWEST_FILES)}
    files = sorted(by_file, key=lambda f: (rank.get(f, len(rank)), -len(by_file[f])))
    return [item for f in files for item in by_file[f]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = file_order(items)
