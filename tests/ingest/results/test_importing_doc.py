"""docs/importing.md stays true: every format the registry knows is in its table, and every example
``spectune results data/...`` command in it runs against a fresh store and lands what it says."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ingest import sql, store
from ingest.results.registry import FORMATS
from tests.conftest import REPO, cli

DOC = REPO / "docs" / "importing.md"


def test_every_format_is_documented() -> None:
    kinds = set(re.findall(r"^\| `(\w+)` \|", DOC.read_text(), re.M))
    assert kinds == set(FORMATS)


def test_the_example_commands_run(tmp_path: Path) -> None:
    commands = [shlex.split(line) for line in DOC.read_text().splitlines()
                if line.startswith("spectune results data/")]
    assert len(commands) >= 3
    db = tmp_path / "s.duckdb"
    for argv in commands:
        res = cli("spectune", *argv[1:], "--db", str(db))
        assert res.returncode == 0, (argv, res.stderr)
        if "--json" in argv:
            json.loads(res.stdout)
    with store.session(db, read_only=True) as con:
        methods = {r[0] for r in sql.frame(con, "SELECT DISTINCT method FROM cells").rows()}
        gpus = {r[0] for r in sql.frame(con, "SELECT DISTINCT gpu FROM cells").rows()}
    assert "unknown" not in methods | gpus, "the examples pass every dimension the files lack"
    assert {"none", "eagle3"} <= methods and {"MI300X", "A100"} <= gpus
