"""Matrix keys for server options: a method's ``schedule`` (vLLM's num_speculative_tokens_per_batch_size) and
``synthetic_acceptance_rates`` (rejection_sample_method "synthetic"), and ``run.per_request_spec_decode``.
Each is validated as vLLM 0.32 validates it, with a one-line error naming the key; a schedule is one more server
config whose cells have their own ids; synthetic-acceptance configs are refused on a CPU host before anything
starts, with vLLM's own reason. (The simulator models schedules: tests/runner/test_simulate_modes.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.records import CellKey
from runner.backends.vllm import SYNTHETIC_CPU_REASON, check_synthetic
from runner.matrix import load_matrix
from tests.conftest import cli

BASE = """
name = "s"
gpus = ["cpu"]
[methods.none]
[methods.ngram]
{method}
[families.F]
model = "m"
[workloads.code]
[load]
concurrency = [1, 16]
[run]
{run}
"""


def write(tmp: Path, method: str = "", run: str = "") -> Path:
    path = tmp / "m.toml"
    path.write_text(BASE.format(method=method, run=run))
    return path


def test_a_schedule_is_one_more_server_config_with_its_own_cells(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, "depths = [3]\nschedule = [[1, 8, 5], [9, 64, 3]]"))
    configs = m.server_configs()
    assert [(c.method, c.depth, c.schedule) for c in configs] == [
        ("none", 0, ()), ("ngram", 3, ()), ("ngram", 5, ((1, 8, 5), (9, 64, 3)))]
    assert configs[2].label() == "F/ngram:schedule(1-8:5,9-64:3)@cpu"
    cells = m.cells()
    assert len(cells) == 6 and len({c.cell_id for c in cells}) == 6
    sched = [c for c in cells if c.schedule]
    assert len(sched) == 2 and all(c.depth == 5 for c in sched)
    assert sched[0].as_dict()["schedule"] == "[[1, 8, 5], [9, 64, 3]]"
    # a cell without options keeps the id it always had
    plain = CellKey("ngram", 3, "F", "m", "code", "cpu", 1)
    assert plain.cell_id == next(c for c in cells if not c.schedule and c.depth == 3).cell_id
    assert plain.as_dict()["schedule"] is None
    only = load_matrix(write(tmp_path, "schedule = [[1, 4, 2], [5, 1024, 1]]"))
    assert [(c.depth, c.schedule) for c in only.server_configs()][1:] == [(2, ((1, 4, 2), (5, 1024, 1)))]


@pytest.mark.parametrize(("schedule", "why"), [
    ("[]", "expected a non-empty list"),
    ("[[1, 8]]", "each range must be 3 integers"),
    ("[[1, 8, 2.5]]", "each range must be 3 integers"),
    ("[[0, 8, 3]]", "batch sizes must be positive"),
    ("[[1, 8, 3], [8, 64, 2]]", "ranges overlap or are out of order"),
    ("[[9, 64, 3], [1, 8, 5]]", "the first range must start at batch size 1"),
    ("[[1, 8, 3], [10, 64, 2]]", "gap between [1, 8, 3] and [10, 64, 2]: batch sizes 9..9 have no K"),
    ("[[1, 8, 17]]", "K must be in [0, 16]"),
    ("[[8, 1, 3]]", "range start must be <= end"),
    ("[[1, 8, 0]]", "every K is 0"),
])
def test_a_bad_schedule_is_a_one_line_error_naming_the_key(tmp_path: Path, schedule: str, why: str) -> None:
    with pytest.raises(InputError) as exc:
        load_matrix(write(tmp_path, f"depths = [3]\nschedule = {schedule}"))
    text = str(exc.value)
    assert "methods.ngram.schedule: " in text and why in text and "\n" not in text
    assert exc.value.line == 7


def test_synthetic_rates_are_checked_as_vllm_checks_them(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, "depths = [1, 3]\nsynthetic_acceptance_rates = [0.9, 0.7, 0.5]"))
    assert [c.synthetic_rates for c in m.server_configs()] == [(), (0.9,), (0.9, 0.7, 0.5)]
    assert "~synthetic(0.9,0.7,0.5)" in m.server_configs()[2].label()
    ids = {c.cell_id for c in m.cells()}
    assert CellKey("ngram", 3, "F", "m", "code", "cpu", 1).cell_id not in ids, "a cost cell is not the method's cell"
    for rates, why in (("[0.5, 0.7]", "non-increasing"), ("[1.2, 0.5, 0.1]", "in [0, 1]"),
                       ("[0.9, 0.8]", "2 rate(s) but the method drafts up to 3"), ('["a"]', "expected a non-empty")):
        with pytest.raises(InputError) as exc:
            load_matrix(write(tmp_path, f"depths = [1, 3]\nsynthetic_acceptance_rates = {rates}"))
        assert why in str(exc.value)


def test_per_request_level_is_a_known_value(tmp_path: Path) -> None:
    assert load_matrix(write(tmp_path, "depths = [3]")).per_request_spec_decode == "summary"
    off = load_matrix(write(tmp_path, "depths = [3]", 'per_request_spec_decode = "off"'))
    assert off.per_request_spec_decode == "off"
    with pytest.raises(InputError) as exc:
        load_matrix(write(tmp_path, "depths = [3]", 'per_request_spec_decode = "full"'))
    assert "run.per_request_spec_decode: expected one of summary, detailed, off, got 'full'" in str(exc.value)


def test_synthetic_acceptance_is_refused_on_this_cpu_host_before_anything_starts(tmp_path: Path) -> None:
    path = write(tmp_path, "depths = [3]\nsynthetic_acceptance_rates = [0.9, 0.7, 0.5]",
                 'launch = "/no/such/vllm serve {model} --port {port} {args}"')
    m = load_matrix(path)
    with pytest.raises(InputError, match=SYNTHETIC_CPU_REASON):
        check_synthetic(m, gpu_model="cpu")
    check_synthetic(m, gpu_model="MI300X")  # a GPU host runs it
    # through the CLI on this (GPU-less) host: exit 2, one line, vLLM's reason, no run folder, no server
    res = cli("runner", "run", "--matrix", str(path), "--backend", "vllm", "--db", str(tmp_path / "s.duckdb"),
              "--runs-dir", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip()
    assert line.startswith(f"error: {path}:7: methods.ngram.synthetic_acceptance_rates: ") and "\n" not in line
    assert SYNTHETIC_CPU_REASON in line
    assert not (tmp_path / "runs").exists()
    # the same through extra (vLLM's own keys) is refused too
    extra = write(tmp_path, 'depths = [3]\nextra = { rejection_sample_method = "synthetic", '
                            'synthetic_acceptance_length = 2.5 }')
    with pytest.raises(InputError, match=r"methods\.ngram\.extra: synthetic acceptance"):
        check_synthetic(load_matrix(extra), gpu_model="cpu")


def test_the_simulator_refuses_synthetic_rates_rather_than_simulating_another_server(tmp_path: Path) -> None:
    path = tmp_path / "sim.toml"
    text = BASE.format(method="depths = [3]\nsynthetic_acceptance_rates = [0.9, 0.7, 0.5]", run="")
    text = text.replace('gpus = ["cpu"]', 'gpus = ["MI300X"]')
    path.write_text(text.replace('[families.F]\nmodel = "m"', '[families.Gemma]\nmodel = "google/gemma-4-31B-it"'))
    res = cli("runner", "run", "--matrix", str(path), "--backend", "sim", "--db", str(tmp_path / "s.duckdb"),
              "--json")
    summary = json.loads(res.stdout)
    assert summary["cells_ok"] == 2 and summary["cells_failed"] == 2
    for f in summary["failures"]:
        assert f["cell"].startswith("Gemma/ngram:3~synthetic(0.9,0.7,0.5)@MI300X")
        assert "the simulator does not model" in f["error"]
