"""First start on the command line (ingest/paths.py ``announce_first_start``, ingest/default_data.py
``stderr_progress``): the build of the default store is said on stderr within a second of the command's start, step
by step, while stdout stays one JSON document. A real subprocess, its stderr read as it comes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from tests.conftest import REPO


def test_the_first_winners_says_it_is_building_within_a_second(tmp_path):
    db = tmp_path / "first" / "spectune.duckdb"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(db)}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "analysis", "winners", "--json", "--family", "MiniMax"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def read_stderr() -> None:
        for line in proc.stderr:
            lines.append((time.monotonic() - started, line.rstrip("\n")))

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    stdout = proc.stdout.read()
    proc.wait(timeout=300)
    reader.join(timeout=10)
    assert proc.returncode == 0, lines
    first_at, first = lines[0]
    assert first.startswith("first start: building the default store") and str(db) in first
    assert first_at <= 1.0, f"first progress line {first_at:.2f} s after start"
    steps = [text for _, text in lines if "[" in text and "/4," in text]
    assert [s.split("[")[1].split(",")[0] for s in steps] == ["1/4", "2/4", "3/4", "4/4"], lines
    assert json.loads(stdout)["cells"]  # stdout: the JSON document alone
    assert db.exists()
