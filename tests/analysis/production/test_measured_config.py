"""The recommended command is the config that was measured: the runner stores the other speculative-config keys
each server ran with (cells.speculative_extra), and drift's recommendation — through analysis.rescore — carries
them instead of vLLM's example n-gram defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest import sql, store
from tests.analysis.production import fleet
from tests.conftest import cli

MATRIX = """
name = "ngram-fleet"
gpus = ["MI355X"]
[methods.none]
[methods.ngram]
depths = [2, 3, 4]
{extra}
[families.Qwen]
model = "Qwen/Qwen3-32B"
[workloads.code]
[load]
concurrency = [4, 16]
[run]
requests_per_cell = 60
"""


def _run(tmp: Path, extra: str) -> Path:
    (tmp / "m.toml").write_text(MATRIX.format(extra=extra))
    db = tmp / "s.duckdb"
    res = cli("runner", "run", "--matrix", str(tmp / "m.toml"), "--backend", "sim", "--db", str(db))
    assert res.returncode == 0, res.stderr
    return db


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = _run(tmp_path_factory.mktemp("lookup3"), "extra = { prompt_lookup_max = 3, prompt_lookup_min = 2 }")
    # production acceptance far above the benchmark's: a deeper n-gram now wins
    t = fleet.target("ng", "acme/code", "Qwen", "ngram", 3, "MI355X", "code")
    fleet.write(db, fleet.series(t, 0.8, seed=2))
    return db


def test_cells_store_the_config_keys_their_server_ran_with(measured: Path, tmp_path: Path) -> None:
    with store.session(measured, read_only=True) as con:
        rows = sql.frame(con, "SELECT method, speculative_extra FROM cells ORDER BY method, depth, concurrency").rows()
    assert {m for m, _ in rows} == {"none", "ngram"}
    assert all(x is None for m, x in rows if m == "none")
    assert all(json.loads(x) == {"prompt_lookup_max": 3, "prompt_lookup_min": 2} for m, x in rows if m == "ngram")
    # a matrix that does not say: what the runner launched with (vLLM's example window), stated, not implied
    plain = _run(tmp_path, "")
    with store.session(plain, read_only=True) as con:
        extras = set(sql.frame(con, "SELECT speculative_extra FROM cells WHERE method = 'ngram'")["speculative_extra"])
    assert extras == {'{"prompt_lookup_max":4,"prompt_lookup_min":2}'}


def test_drift_recommends_the_measured_lookup_window_not_the_default(measured: Path) -> None:
    res = cli("analysis", "drift", "--db", str(measured), "--json")
    assert res.returncode == 3, res.stderr
    (seg,) = json.loads(res.stdout)["segments"]
    rec = seg["recommendation"]
    assert seg["status"] == "winner_changed" and rec["method"] == "ngram" and rec["depth"] != 3
    flag = rec["vllm_args"].removeprefix("--speculative-config ").strip("'")
    assert json.loads(flag) == {"method": "ngram", "num_speculative_tokens": rec["depth"], "prompt_lookup_max": 3,
                                "prompt_lookup_min": 2}
    text = cli("analysis", "drift", "--db", str(measured)).stdout
    assert '"prompt_lookup_max":3' in text and '"prompt_lookup_max":4' not in text
