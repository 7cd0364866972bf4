"""SGLang bench_speculative.py sweeps as its default grid writes them, via the CLI.

scripts/playground/bench_speculative.py runs every (steps, topk, num_draft_tokens) with steps·topk + 1 ≥
num_draft_tokens and records the values it passed; SGLang's ServerArgs then sets num_draft_tokens =
steps + 1 whenever topk == 1, so the chains (5, 1, 2) and (5, 1, 4) both verify 5 draft tokens a step.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.conftest import cli

RECORDS = [  # default sweep values at batch size 1 (steps 5 × topk {1, 2} × num_draft_tokens {2, 4, 8})
    {"batch_size": 1, "steps": 0, "topk": 0, "num_draft_tokens": 0, "acc_length": 1.0, "step_time": 0.01066,
     "speed": 93.809, "completion_tokens": 512.0},
    {"batch_size": 1, "steps": 5, "topk": 1, "num_draft_tokens": 2, "acc_length": 3.174, "step_time": 0.01696,
     "speed": 187.146, "completion_tokens": 512.0},
    {"batch_size": 1, "steps": 5, "topk": 1, "num_draft_tokens": 4, "acc_length": 3.171, "step_time": 0.01699,
     "speed": 186.639, "completion_tokens": 512.0},
    {"batch_size": 4, "steps": 3, "topk": 2, "num_draft_tokens": 4, "acc_length": 2.402, "step_time": 0.01781,
     "speed": 134.868, "completion_tokens": 512.0},
]


def test_chain_acceptance_rate_uses_the_steps_the_server_ran(tmp_path: Path) -> None:
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    db = tmp_path / "store.duckdb"
    res = cli("ingest", "results", str(path), "--set", "method=eagle3", "--set", "model=Qwen/Qwen3-8B",
              "--set", "gpu=H100", "--set", "workload=chat", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        cells = {(c["concurrency"], c["depth"]): c for c in con.sql("SELECT * FROM cells").pl().to_dicts()}
    finally:
        con.close()
    chain = cells[(1, 5)]  # the faster of the two identical chains is kept
    assert chain["acceptance_length"] == 3.174
    assert chain["acceptance_rate"] == pytest.approx((3.174 - 1) / 5, rel=1e-12)  # not / (2 - 1) = 217 %
    tree = cells[(4, 3)]  # topk 2: 3 draft tokens besides the root are verified a step
    assert tree["acceptance_rate"] == pytest.approx((2.402 - 1) / 3, rel=1e-12)
    assert all(c["acceptance_rate"] is None or 0 <= c["acceptance_rate"] <= 1 for c in cells.values())
    assert cells[(1, 0)]["method"] == "none" and cells[(1, 0)]["acceptance_rate"] is None
