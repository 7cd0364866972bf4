"""Candidate modes in a matrix file (docs/matrix.md, "Candidate modes"): a method's depths run `fixed`, its
``schedule`` one `schedule` server config, its ``adaptive = { max_depth = K }`` one `adaptive` server config
(vLLM's enable_adaptive_verification, DSpark only). Bad values are one line naming file:line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.errors import InputError
from runner.matrix import load_matrix, with_schedule
from runner.vllm.server import build_server_args
from tests.conftest import cli

BASE = """name = "modes"
gpus = ["MI300X"]
[methods.none]
[methods.{method}]
{body}
[families.Qwen]
model = "Qwen/Qwen3.5-122B-A10B"
[workloads.code]
[load]
concurrency = [1, 32]
"""


def write(tmp: Path, body: str, method: str = "dspark") -> Path:
    path = tmp / "m.toml"
    path.write_text(BASE.format(method=method, body=body))
    return path


def test_each_mode_is_its_own_server_config_and_cell_ids(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, "depths = [4, 8]\nschedule = [[1, 8, 8], [9, 64, 3]]\n"
                                    "adaptive = { max_depth = 8 }"))
    configs = m.server_configs()
    assert [(c.depth, c.mode) for c in configs] == [(0, "fixed"), (4, "fixed"), (8, "fixed"), (8, "schedule"),
                                                    (8, "adaptive")]
    assert configs[-1].label() == "Qwen/dspark:adaptive(≤8)@MI300X"
    cells = m.cells()
    assert len({c.cell_id for c in cells}) == len(cells) == 10
    assert {c.mode for c in cells} == {"fixed", "schedule", "adaptive"}
    adaptive = [c for c in cells if c.adaptive]
    assert all(c.as_dict()["mode"] == "adaptive" and c.depth == 8 for c in adaptive)
    # the server is launched with vLLM's own key, and the cap as num_speculative_tokens
    args = build_server_args("dspark", 8, adaptive=True, draft_model="/d")
    spec = json.loads(args[args.index("--speculative-config") + 1])
    assert spec == {"method": "dspark", "num_speculative_tokens": 8, "model": "/d",
                    "enable_adaptive_verification": True}
    only = load_matrix(write(tmp_path, "adaptive = { max_depth = 6 }"))  # alone: only the adaptive arm runs
    assert [(c.method, c.depth, c.mode) for c in only.server_configs()] == [("none", 0, "fixed"),
                                                                          ("dspark", 6, "adaptive")]


@pytest.mark.parametrize(("body", "method", "why"), [
    ("adaptive = { max_depth = 8 }", "mtp", "supports adaptive verification (enable_adaptive_verification) only "
                                            "for dspark, not mtp"),
    ("adaptive = true", "dspark", "expected a table such as { max_depth = 8 }"),
    ("adaptive = { max_depth = 0 }", "dspark", "max_depth: expected an integer in [1, 16]"),
    ("adaptive = { max_depth = 17 }", "dspark", "max_depth: expected an integer in [1, 16]"),
    ('adaptive = { max_depth = "8" }', "dspark", "max_depth: expected an integer"),
    ("adaptive = { depth = 8 }", "dspark", "unknown key(s) depth (expected max_depth)"),
    ("extra = { enable_adaptive_verification = true }", "dspark", "a mode of its own; write it as "
                                                                  "methods.dspark.adaptive"),
    ("extra = { num_speculative_tokens_per_batch_size = [[1, 4, 3]] }", "ngram", "write it as "
                                                                               "methods.ngram.schedule"),
])
def test_a_bad_mode_is_one_line_naming_file_and_line(tmp_path: Path, body: str, method: str, why: str) -> None:
    path = write(tmp_path, "depths = [3]\n" + body, method)
    with pytest.raises(InputError) as exc:
        load_matrix(path)
    assert why in str(exc.value) and "\n" not in str(exc.value)
    assert exc.value.line == 6
    res = cli("runner", "plan", "--matrix", str(path))
    assert res.returncode == 2 and res.stderr.startswith(f"error: {path}:6: methods.{method}.")
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_predicted_schedule_becomes_one_more_server_config(tmp_path: Path) -> None:
    """runner.matrix.with_schedule: what a tuner calls to measure a schedule it predicted."""
    m = load_matrix(write(tmp_path, "depths = [3, 8]"))
    before = {c.cell_id for c in m.cells()}
    got = with_schedule(m, "dspark", [[1, 4, 8], [5, 64, 3]])
    assert [(c.depth, c.mode) for c in got.server_configs()] == [(0, "fixed"), (3, "fixed"), (8, "fixed"),
                                                                 (8, "schedule")]
    assert before < {c.cell_id for c in got.cells()}  # the fixed cells keep their ids
    with pytest.raises(InputError, match="gap between"):
        with_schedule(m, "dspark", [[1, 4, 8], [6, 64, 3]])
    with pytest.raises(InputError, match=r"methods\.mtp: not a speculative method of this matrix"):
        with_schedule(m, "mtp", [[1, 4, 8]])


def test_plan_names_each_server_configs_mode(tmp_path: Path) -> None:
    path = write(tmp_path, "depths = [3]\nschedule = [[1, 4, 8], [5, 64, 3]]\nadaptive = { max_depth = 8 }")
    res = cli("runner", "plan", "--matrix", str(path), "--json")
    assert res.returncode == 0, res.stderr
    got = [(c["label"], c["mode"], c["schedule"]) for c in json.loads(res.stdout)["server_configs"]]
    assert got == [("Qwen/none@MI300X", "fixed", None), ("Qwen/dspark:3@MI300X", "fixed", None),
                   ("Qwen/dspark:schedule(1-4:8,5-64:3)@MI300X", "schedule", [[1, 4, 8], [5, 64, 3]]),
                   ("Qwen/dspark:adaptive(≤8)@MI300X", "adaptive", None)]
