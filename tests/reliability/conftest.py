"""Shared helpers for the reliability tests: store fingerprints, a seeded store, hostile values, CLI runs.

A *fingerprint* is every store table's row count plus an order-independent hash of its full contents,
so "the store is unchanged" is checked row by row, not just by counts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest import sql, store
from tests.conftest import REPO

TINY_MATRIX = """
name = "tiny"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [2, 3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
[workloads.code]
max_tokens = 128
[workloads.chat]
max_tokens = 128
[load]
concurrency = [1, 16]
[run]
requests_per_cell = 30
"""

# Values an attacker (or a careless script) puts into flags and URLs.
HOSTILE: tuple[str, ...] = (
    "'", '"', "Qwen'; DROP TABLE cells; --", "' OR 1=1 --", "\" OR \"\"=\"", "x); DELETE FROM runs; --",
    "Qwen --", "/* */", "%", "_", "\\", "${SPECTUNE_DB}", "$(touch /tmp/spectune_pwned)", "`id`",
    "../../etc/passwd", "Qwen\u202e", "\u202eKimi", "Gem\u200bma", "ＱＷＥＮ", "🦙", "Ωμέγα", "名前",
    "=cmd|' /C calc'!A0", "+1", "-1", "@SUM(1)", "\t", "a\nb", "a\rb", "", " ", "A" * 10_000,
)
# A NUL cannot go through argv (the OS refuses it); it is tested where it can arrive: URLs, files.
NUL_VALUES: tuple[str, ...] = ("Qwen\x00", "\x00' OR 1=1 --")


def fingerprint(db: Path) -> dict[str, tuple[int, int]]:
    """{table: (rows, sum of row hashes)} of every table in the store."""
    with store.session(db, read_only=True) as con:
        names = [r[0] for r in sql.frame(con, "SELECT table_name FROM information_schema.tables "
                                              "WHERE table_schema = 'main' ORDER BY 1").rows()]
        out = {}
        for name in names:  # names come from the catalogue itself, quoted as identifiers
            row = sql.one(con, f'SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0) FROM "{name}" t')
            out[name] = (int(row[0]), int(row[1]))
    return out


def run_cli(module: str, *args: str, db: Path | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m module args`` from the repo root, with SPECTUNE_DB pointing away from data/."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    if db is not None:
        full_env["SPECTUNE_DB"] = str(db)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=timeout, errors="replace")


def assert_clean_usage_error(proc: subprocess.CompletedProcess, *, prefix: str = "error: ") -> str:
    """Exit 2, exactly one stderr line starting with ``error:``, no traceback anywhere. Returns the line."""
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, err[-2000:]
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning: ")]
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith(prefix), lines[0][:300]
    return lines[0]


def build_tiny_store(path: Path) -> Path:
    """A real store holding one simulated run (8 cells) and one stored trace."""
    from ingest.trace_store import store_trace
    from ingest.traces.assigned import read_assigned
    from runner.execute import RunOptions, run_matrix
    from runner.matrix import load_matrix

    matrix = path.parent / "tiny.toml"
    matrix.write_text(TINY_MATRIX)
    run_matrix(load_matrix(matrix), RunOptions(backend="sim", db=path, run_id="tiny"))
    tf, assignment = read_assigned(REPO / "data" / "samples" / "traces" / "azure_code.csv", "auto", None, None, None)
    with store.session(path) as con:
        store_trace(con, tf, assignment=assignment, source_path="azure_code.csv")
    return path


@pytest.fixture(scope="session")
def tiny_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_store(tmp_path_factory.mktemp("tiny") / "tiny.duckdb")


@pytest.fixture
def tiny_store(tiny_store_template: Path, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the tiny store (tests may try to damage it)."""
    db = tmp_path / "store.duckdb"
    shutil.copyfile(tiny_store_template, db)
    yield db
