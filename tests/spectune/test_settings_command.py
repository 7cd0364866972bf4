"""``spectune settings`` (spectune/commands/settings.py) as a user runs it: every declared setting with its value
and source, ``--json`` equal to the declaration, a bad value as one line (exit 2), and docs/settings.md's table
equal to the declaration."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ingest import settings
from spectune.commands.settings import HIDDEN, markdown_table
from tests.conftest import REPO


def spectune(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m spectune args`` with no SPECTUNE_* setting from this process, plus ``env``."""
    declared = {s.env for s in settings.SETTINGS}
    base = {k: v for k, v in os.environ.items() if k not in declared}
    return subprocess.run([sys.executable, "-m", "spectune", *args], cwd=REPO, capture_output=True, text=True,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})}, timeout=120)


def test_json_equals_the_declaration_with_values_and_sources() -> None:
    res = spectune("settings", "--json", env={"SPECTUNE_LOCK_TIMEOUT": "5", "SPECTUNE_VLLM_API_KEY": "sekrit",
                                              "SPECTUNE_RAY_RESOURCES": '{"MI300X": 8}'})
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    entries = doc["settings"]
    assert [{k: v for k, v in e.items() if k not in ("value", "source")} for e in entries] == \
        [s.declaration() for s in settings.SETTINGS]
    by_name = {e["name"]: e for e in entries}
    assert (by_name["lock_timeout_s"]["value"], by_name["lock_timeout_s"]["source"]) == (5.0, "environment")
    assert by_name["ray_resources"]["value"] == {"MI300X": 8.0}
    assert by_name["vllm_api_key"]["value"] == HIDDEN and "sekrit" not in res.stdout  # never printed
    assert (by_name["max_file_bytes"]["value"], by_name["max_file_bytes"]["source"]) == (1 << 30, "default")
    assert by_name["db"]["value"] is None and by_name["db"]["source"] == "default"


def test_text_lists_every_setting_with_value_source_and_help() -> None:
    res = spectune("settings", env={"SPECTUNE_DB": "/tmp/elsewhere.duckdb"})
    assert res.returncode == 0, res.stderr
    for s in settings.SETTINGS:
        assert f"${s.env}" in res.stdout and s.help in res.stdout
    assert "db = /tmp/elsewhere.duckdb  (environment; $SPECTUNE_DB)" in res.stdout
    assert "lock_timeout_s = 60.0 s  (default; $SPECTUNE_LOCK_TIMEOUT)" in res.stdout
    assert res.stdout.rstrip().endswith("store in use without --db: /tmp/elsewhere.duckdb")


def test_a_bad_value_is_one_line_and_exit_2() -> None:
    res = spectune("settings", "--json", env={"SPECTUNE_MAX_UPLOAD_MB": "lots"})
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == "error: SPECTUNE_MAX_UPLOAD_MB='lots': expected a whole number in [1, 200]"


def test_the_docs_table_is_the_declaration() -> None:
    doc = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    table = markdown_table()
    assert table in doc, "docs/settings.md is out of date: paste `spectune settings --markdown` into it"
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    assert len(rows) == len(settings.SETTINGS)  # no row for a setting that is not declared
    for s in settings.SETTINGS:
        assert f"| `{s.name}` | `{s.env}` |" in table and s.help in table
    res = spectune("settings", "--markdown")
    assert res.returncode == 0 and res.stdout.strip() == table


def test_the_command_is_listed_by_spectune_help() -> None:
    res = spectune("--help")
    assert res.returncode == 0 and "settings" in res.stdout
