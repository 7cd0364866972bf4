"""The re-scoring matrices kept per store (analysis/cli/matrix_cache.py): a kept file gives back exactly what the
store gives, a write to the store or the cache switched off reads the store again, a broken file is ignored."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

from analysis.cli import matrix_cache
from analysis.rescore.matrix import load_matrices
from ingest import store
from tests.conftest import cli

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "traces"


@pytest.fixture
def cache_on(cache_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    for k, v in cache_env.items():
        monkeypatch.setenv(k, v)
    return Path(cache_env["SPECTUNE_CACHE_DIR"])


def _loader(db: Path, calls: list[int], families: tuple[str, ...] = ()):
    def load():
        calls.append(1)
        with store.session(db, read_only=True) as con:
            return load_matrices(con, families)
    return load


def _equal(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k, ma in a.items():
        mb = b[k]
        assert (ma.family, ma.gpu, ma.replicates, ma.models, ma.tensor_parallel_size, ma.draft_models) == \
               (mb.family, mb.gpu, mb.replicates, mb.models, mb.tensor_parallel_size, mb.draft_models)
        assert list(ma.cells) == list(mb.cells)
        for key, ca in ma.cells.items():
            cb = mb.cells[key]
            for f in matrix_cache.CELL_FIELDS:
                x, y = getattr(ca, f), getattr(cb, f)
                assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), (key, f, x, y)
                assert type(x) is type(y), (key, f)
            for f in ("ttft", "tpot", "out", "thr_ratio", "p99_ratio"):
                x, y = getattr(ca, f), getattr(cb, f)
                assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (key, f)


def test_kept_matrices_are_the_store_read(store_copy: Path, cache_on: Path) -> None:
    con = duckdb.connect(str(store_copy))  # cells without requests (one-sample fallback) and without replicates
    ids = [r[0] for r in con.execute("SELECT cell_id FROM cells ORDER BY cell_id LIMIT 6").fetchall()]
    con.execute("DELETE FROM requests WHERE cell_id IN (SELECT unnest(?))", [ids[:3]])
    con.execute("DELETE FROM cell_bootstrap WHERE cell_id IN (SELECT unnest(?))", [ids[3:]])
    con.execute("UPDATE requests SET input_tokens = NULL WHERE cell_id = (SELECT min(cell_id) FROM requests)")
    con.close()
    calls: list[int] = []
    first = matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    second = matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    assert len(calls) == 1 and len(list(cache_on.glob("matrices-*.npz"))) == 1
    _equal(first, second)
    assert any(c.ttft.size == 1 for m in second.values() for c in m.cells.values())  # the fallback went through
    assert any(math.isnan(c.in_mean) for m in second.values() for c in m.cells.values())
    # other filters, other file
    qwen = matrix_cache.cached_matrices(store_copy, ("Qwen",), (), _loader(store_copy, calls, ("Qwen",)))
    assert len(calls) == 2 and {f for f, _ in qwen} == {"Qwen"}


def test_a_write_to_the_store_reads_the_store_again(store_copy: Path, cache_on: Path) -> None:
    calls: list[int] = []
    before = matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    con = duckdb.connect(str(store_copy))
    con.execute("UPDATE requests SET ttft_ms = ttft_ms * 2")
    con.close()
    after = matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    assert len(calls) == 2
    key = next(iter(before))
    cell = next(iter(before[key].cells))
    assert np.array_equal(after[key].cells[cell].ttft, before[key].cells[cell].ttft * 2)
    with store.session(store_copy, read_only=True) as con:
        _equal(after, load_matrices(con))


def test_off_or_broken_reads_the_store(store_copy: Path, cache_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    fresh = matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    (kept,) = cache_on.glob("matrices-*.npz")
    kept.write_bytes(kept.read_bytes()[: kept.stat().st_size // 2])  # truncated: not a usable file
    again = matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    assert len(calls) == 2
    _equal(fresh, again)
    monkeypatch.setenv("SPECTUNE_CACHE", "off")
    for k in cache_on.glob("*"):
        k.unlink()
    matrix_cache.cached_matrices(store_copy, (), (), _loader(store_copy, calls))
    assert len(calls) == 3 and not list(cache_on.glob("*"))


def test_rescore_answers_the_same_from_kept_matrices(store_copy: Path, cache_env: dict[str, str]) -> None:
    argv = ("analysis", "rescore", str(SAMPLES / "azure_code.csv"), "--family", "Qwen", "--json")
    off = cli(*argv, db=store_copy, env={"SPECTUNE_CACHE": "off"})
    first = cli(*argv, db=store_copy, env=cache_env)
    second = cli(*argv, db=store_copy, env=cache_env)
    assert off.returncode == first.returncode == second.returncode == 0, first.stderr
    assert len(list(Path(cache_env["SPECTUNE_CACHE_DIR"]).glob("matrices-*.npz"))) == 1
    assert first.stdout == second.stdout == off.stdout and json.loads(off.stdout)["recommendations"]
