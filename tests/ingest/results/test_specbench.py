"""Spec-Bench answer files in the shapes its other writers produce (inference_sps.py, inference_pld.py), via the CLI.

evaluation/eval.py writes ``choices[0] = {index, turns, decoding_steps, new_tokens, wall_time, accept_lengths}``;
inference_sps.py writes ``idxs`` (last step index) instead of ``decoding_steps`` and, at some commits, the key
``"accept_lengths:"`` (colon included); inference_pld.py's forward returns ``new_token - 1`` as the step count.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.conftest import cli
from tests.ingest.results.conftest import SAMPLES

SPEC = SAMPLES / "specbench_qwen3-8b-eagle3.jsonl"
WORKLOADS = {"coding": "code", "math_reasoning": "reasoning", "math": "reasoning", "reasoning": "reasoning",
             "writing": "chat", "roleplay": "chat", "extraction": "chat", "stem": "chat", "humanities": "chat"}
DEPTH = 5


def _sps(choice: dict) -> dict:
    """inference_sps.py (hemingkx/Spec-Bench bc8a422): idxs = step index of the last step, "accept_lengths:"."""
    return {"index": 0, "turns": choice["turns"], "idxs": [s - 1 for s in choice["decoding_steps"]],
            "new_tokens": choice["new_tokens"], "wall_time": choice["wall_time"],
            "accept_lengths:": choice["accept_lengths"]}


def _pld(choice: dict) -> dict:
    """inference_pld.py: pld_forward returns idx = new_token - 1, which eval.py stores as decoding_steps."""
    return {**choice, "decoding_steps": [n - 1 for n in choice["new_tokens"]]}


def _expected_requests(answers: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """Per workload, per turn in file order: (drafted, accepted) from the original eval.py step counts."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for a in answers:
        c = a["choices"][0]
        bounds = np.cumsum([0, *c["decoding_steps"]])
        for t in range(len(c["new_tokens"])):
            steps = c["accept_lengths"][bounds[t]:bounds[t + 1]]
            out[WORKLOADS.get(a["category"], a["category"])].append((len(steps) * DEPTH, sum(s - 1 for s in steps)))
    return out


@pytest.mark.parametrize("variant", [_sps, _pld], ids=["inference_sps", "inference_pld"])
def test_other_writers_keep_acceptance_and_per_request_counts(variant, tmp_path: Path) -> None:
    answers = [json.loads(line) for line in SPEC.read_text().splitlines()]
    path = tmp_path / f"{variant.__name__}.jsonl"
    path.write_text("".join(json.dumps({**a, "choices": [variant(a["choices"][0])]}) + "\n" for a in answers))
    db = tmp_path / "store.duckdb"
    res = cli("ingest", "results", str(path), "--set", f"depth={DEPTH}", "--set", "method=draft_model",
              "--set", "gpu=A100", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        cells = {c["workload"]: c for c in con.sql("SELECT * FROM cells").pl().to_dicts()}
        reqs = con.sql("SELECT c.workload, r.drafted_tokens, r.accepted_tokens FROM requests r "
                       "JOIN cells c USING (run_id, cell_id) ORDER BY c.workload, r.request_index").pl()
    finally:
        con.close()
    expected = _expected_requests(answers)
    assert set(cells) == set(expected)
    for wl, rows in expected.items():
        acc = [v for a in answers if WORKLOADS.get(a["category"], a["category"]) == wl
               for v in a["choices"][0]["accept_lengths"]]
        tau = float(np.mean(acc))
        assert cells[wl]["acceptance_length"] == pytest.approx(tau, rel=1e-12)
        assert cells[wl]["acceptance_rate"] == pytest.approx((tau - 1) / DEPTH, rel=1e-12)
        mine = reqs.filter(reqs["workload"] == wl)
        assert list(zip(mine["drafted_tokens"], mine["accepted_tokens"], strict=True)) == rows, wl
        assert cells[wl]["draft_tokens"] == sum(d for d, _ in rows)
        assert cells[wl]["accepted_tokens"] == sum(a for _, a in rows)


def test_step_counts_only_help_and_never_refuse_a_file(tmp_path: Path) -> None:
    """Step counts are auxiliary (used only to cut steps into turns): an `idx = new_token - 1` of -1, as
    inference_pld.py would write for a turn without tokens, must not make the whole file invalid."""
    answers = [json.loads(line) for line in SPEC.read_text().splitlines()]
    answers[0]["choices"][0]["decoding_steps"][0] = -1
    path = tmp_path / "odd_steps.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    db = tmp_path / "store.duckdb"
    res = cli("ingest", "results", str(path), "--set", f"depth={DEPTH}", "--set", "gpu=A100", "--db", str(db))
    assert res.returncode == 0, res.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        missing = con.sql("SELECT count(*) FROM requests WHERE drafted_tokens IS NULL").fetchall()[0][0]
    finally:
        con.close()
    assert missing == 0  # the turns were still cut by new_tokens
