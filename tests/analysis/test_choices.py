"""Unknown dimension values list the valid ones with a suggestion and say what the store holds; case is forgiven."""

from __future__ import annotations

import pytest

from analysis.choices import resolve_values, store_label
from ingest import store
from ingest.errors import UsageError
from tests.conftest import cli


def test_case_is_fixed_with_a_note_and_exact_values_pass(default_db):
    with store.connect(default_db, read_only=True) as con:
        dims, notes = resolve_values(con, {"family": ["qwen", "Gemma"], "gpu": [], "method": ["EAGLE3"]})
    assert dims == {"family": ("Qwen", "Gemma"), "gpu": (), "method": ("eagle3",)}
    assert len(notes) == 2 and "'Qwen'" in notes[0] and notes[0].startswith("note: --family qwen")


def test_unknown_value_lists_valid_ones_and_says_simulated(default_db):
    with store.connect(default_db, read_only=True) as con:
        assert store_label(con) == "simulated or measured"  # the simulated matrix and the published cells
        with pytest.raises(UsageError) as exc:
            resolve_values(con, {"gpu": ["MI355"]})
    text = exc.value.one_line()
    assert "no simulated or measured cells" in text and "valid: MI300X, MI355X" in text
    assert "did you mean 'MI355X'?" in text


def test_measured_store_says_measured(tmp_path):
    db = tmp_path / "m.duckdb"
    proc = cli("ingest", "results", "data/samples/results/vllm_bench_eagle3_qwen_code.json", "--set", "family=Qwen",
               "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    with store.connect(db, read_only=True) as con:
        assert store_label(con) == "measured"
    bad = cli("analysis", "winners", "--gpu", "H100", "--db", str(db))
    assert bad.returncode == 2 and "no measured cells" in bad.stderr and "valid: MI300X" in bad.stderr


@pytest.mark.parametrize("argv", [
    ("analysis", "winners", "--family", "Qwn", "--json"),
    ("analysis", "curve", "--family", "Qwen", "--method", "eagle", "--workload", "code", "--json"),
    ("analysis", "rescore", "data/samples/traces/azure_code.csv", "--gpu", "mi355", "--json"),
])
def test_cli_exits_2_with_one_line(default_db, argv):
    proc = cli(*argv, db=default_db)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "did you mean" in proc.stderr and "valid:" in proc.stderr


def test_cli_accepts_other_case_with_a_note_on_stderr(default_db):
    proc = cli("analysis", "winners", "--family", "qwen", "--gpu", "mi355x", "--json", db=default_db)
    assert proc.returncode == 0
    assert "read as 'Qwen'" in proc.stderr and "read as 'MI355X'" in proc.stderr
    import json

    cells = json.loads(proc.stdout)["cells"]
    assert cells and {c["family"] for c in cells} == {"Qwen"} and {c["gpu"] for c in cells} == {"MI355X"}
