"""Fast start: a read-only command imports neither SQLAlchemy, pyarrow nor other subcommands' modules.

(How fast is measured in benchmarks/startup.py, not asserted here.) Each case runs the real command in a fresh
interpreter and lists the heavy modules it loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("sqlalchemy", "duckdb_engine", "pyarrow", "analysis.compare", "analysis.rescore.core", "ingest.traces",
         "ingest.results", "runner.matrix", "streamlit", "altair", "ray", "aiohttp", "httpx")
PROBE = """
import json, runpy, sys, io, contextlib
sys.argv = [sys.argv[1], *sys.argv[2:]]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in sys.modules)))
"""


def _loaded(db, *argv: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(db)}
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv,allowed", [
    (("analysis", "winners", "--json"), ()),
    (("analysis", "curve", "--family", "Qwen", "--method", "mtp", "--workload", "code", "--json"), ()),
    (("analysis", "--help"), ()),
    (("ingest", "--help"), ()),
    (("spectune", "--help"), ()),
    (("spectune", "winners", "--json"), ()),
    (("analysis", "compare", "previous", "latest", "--json"), ("analysis.compare",)),
])
def test_read_only_commands_import_nothing_heavy(default_db, argv, allowed):
    loaded = _loaded(default_db, *argv)
    heavy = {m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)}
    assert {m for m in heavy if not any(m == a or m.startswith(a + ".") for a in allowed)} == set()
