"""Smoke test of ``benchmarks/rescore_read.py``: the re-score CLI timed as a subprocess next to the exact-reader
baseline, an older tree (here this one) and the matrices computed live, documents compared, with spectune's
bytecode in the state asked for. No timing assertions (speed is measured, not tested)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def test_rescore_read_times_the_cli_with_compiled_bytecode_and_compares_documents(tmp_path):
    out_json = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "benchmarks/rescore_read.py", "--rows", "2000", "--formats", "csv",
                          "parquet", "--repeats", "1", "--workdir", str(tmp_path), "--before", str(REPO),
                          "--bytecode", "compiled", "--out", str(out_json)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads(out_json.read_text())
    assert doc["bytecode"] == "compiled"
    assert any((REPO / "analysis" / "__pycache__").glob("*.pyc"))  # compiled mode leaves bytecode to read
    for key in ("rescore_0m_csv", "rescore_0m_parquet"):
        fig = doc["figures"][key]
        assert fig["requests"] > 0
        assert fig["documents_identical"] is True and fig["documents_identical_before"] is True
        assert fig["documents_identical_live_matrices"] is True  # kept matrices and live ones: one document
        for run in ("cli", "cli_exact", "cli_before", "cli_live_matrices"):
            assert fig[run]["repeats"] == 1 and fig[run]["median"] > 0 and fig[run]["peak_rss_mb"] > 0
    kept = doc["figures"]["matrices"]
    assert kept["matrices_identical"] is True and kept["matrices"]["cells"] > 0
    assert kept["matrices"]["median"] > 0 and kept["matrices_live"]["median"] > 0
