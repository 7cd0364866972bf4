"""Settings declared once (ingest.settings): defaults, the environment's override, a bad value as one line naming
the variable, and the rule that no other module reads ``SPECTUNE_*`` from the environment (a scan of the source,
like a lint rule)."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from ingest import caps, paths, settings, store
from ingest.errors import UsageError
from tests.conftest import REPO, cli

PACKAGES = ("analysis", "dashboard", "ingest", "runner", "spectune")
# Read SPECTUNE_CACHE / SPECTUNE_CACHE_DIR for the answer cache, which issue 29's Build 3 removes with these two
# files (another branch of the same merge): drop this set once they are gone.
ENV_ACCESS = re.compile(r"\benviron\b|getenv")


def test_every_declared_setting_is_a_typed_field_of_settings_and_nothing_else() -> None:
    assert [f.name for f in fields(settings.Settings) if f.name != "from_env"] == [s.name for s in settings.SETTINGS]
    assert len({s.env for s in settings.SETTINGS}) == len(settings.SETTINGS)
    assert all(s.env.startswith("SPECTUNE_") and s.help and s.type in settings.PARSERS for s in settings.SETTINGS)


def test_defaults_when_the_environment_sets_nothing() -> None:
    s = settings.load({"PATH": "/bin", "SPECTUNE_NOT_A_SETTING": "x"})
    assert s == settings.defaults() and s.from_env == frozenset()
    assert (s.db, s.max_file_bytes, s.max_trace_bytes, s.max_upload_mb) == (None, 1 << 30, 4 << 30, 200)
    assert (s.lock_timeout_s, s.vllm_launch, s.vllm_api_key, s.ray_resources, s.ray_pythonpath, s.ray_cpus) == \
        (60.0, None, None, {}, None, None)
    assert all(s.source(d.name) == "default" for d in settings.SETTINGS)
    # what the code uses when nothing is set
    assert paths.default_db_path(s) == paths.DEFAULT_DB and store.lock_timeout_s(s) == store.LOCK_WAIT_S == 60
    assert caps.resolve(caps.IMPORT_CAP, s) == (1 << 30, "default")


def test_the_environment_overrides_each_setting_and_an_empty_value_is_unset() -> None:
    env = {"SPECTUNE_DB": "/x/s.duckdb", "SPECTUNE_MAX_FILE_BYTES": "2GiB", "SPECTUNE_MAX_TRACE_BYTES": "100",
           "SPECTUNE_MAX_UPLOAD_MB": "1", "SPECTUNE_LOCK_TIMEOUT": "1.5", "SPECTUNE_VLLM_LAUNCH": "v {model}",
           "SPECTUNE_VLLM_API_KEY": "k", "SPECTUNE_RAY_RESOURCES": '{"MI300X": 8}',
           "SPECTUNE_RAY_PYTHONPATH": "/opt/spectune", "SPECTUNE_RAY_CPUS": "2"}
    s = settings.load(env)
    assert s == settings.Settings(
        db=Path("/x/s.duckdb"), max_file_bytes=2 << 30, max_trace_bytes=100, max_upload_mb=1, lock_timeout_s=1.5,
        vllm_launch="v {model}", vllm_api_key="k", ray_resources={"MI300X": 8.0}, ray_pythonpath="/opt/spectune",
        ray_cpus=2, from_env=frozenset(d.name for d in settings.SETTINGS))
    assert paths.default_db_path(s) == Path("/x/s.duckdb") and store.lock_timeout_s(s) == 1.5
    assert caps.resolve(caps.TRACE_CAP, s) == (100, "$SPECTUNE_MAX_TRACE_BYTES")
    blank = settings.load({"SPECTUNE_DB": "", "SPECTUNE_LOCK_TIMEOUT": "  "})
    assert blank == settings.defaults()


def test_the_process_environment_is_what_load_reads_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTUNE_LOCK_TIMEOUT", "0")
    monkeypatch.setenv("SPECTUNE_DB", "/y/other.duckdb")
    assert settings.load().lock_timeout_s == 0 and settings.load().source("lock_timeout_s") == "environment"
    assert store.lock_timeout_s() == 0 and paths.default_db_path() == Path("/y/other.duckdb")


@pytest.mark.parametrize(("env", "value", "accepts"), [
    ("SPECTUNE_LOCK_TIMEOUT", "soon", "a number of seconds in [0, 86400]"),
    ("SPECTUNE_LOCK_TIMEOUT", "-1", "a number of seconds in [0, 86400]"),
    ("SPECTUNE_LOCK_TIMEOUT", "nan", "a number of seconds in [0, 86400]"),
    ("SPECTUNE_MAX_FILE_BYTES", "lots", "a size in bytes, optionally with a unit (512MiB, 2GB)"),
    ("SPECTUNE_MAX_TRACE_BYTES", "0", "a size in bytes, optionally with a unit (512MiB, 2GB)"),
    ("SPECTUNE_MAX_UPLOAD_MB", "500", "a whole number in [1, 200]"),
    ("SPECTUNE_MAX_UPLOAD_MB", "1.5", "a whole number in [1, 200]"),
    ("SPECTUNE_RAY_CPUS", "0", "a whole number ≥ 1"),
    ("SPECTUNE_RAY_RESOURCES", "{MI300X: 8}", "a JSON object of resource name"),
    ("SPECTUNE_RAY_RESOURCES", '{"MI300X": "eight"}', "a JSON object of resource name"),
    ("SPECTUNE_RAY_RESOURCES", "[8]", "a JSON object of resource name"),
])
def test_a_bad_value_is_one_line_naming_the_variable_and_what_it_accepts(env: str, value: str, accepts: str) -> None:
    with pytest.raises(UsageError) as err:
        settings.load({env: value})
    line = err.value.one_line()
    assert line.startswith(f"error: {env}={value!r}: expected {accepts}") and "\n" not in line


def test_a_bad_value_exits_2_in_one_line_from_a_command(tmp_path: Path) -> None:
    res = cli("analysis", "winners", "--json", env={"SPECTUNE_DB": str(tmp_path / "never.duckdb"),
                                                     "SPECTUNE_RAY_CPUS": "many"})
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert res.stderr.strip() == "error: SPECTUNE_RAY_CPUS='many': expected a whole number ≥ 1"
    assert not (tmp_path / "never.duckdb").exists()  # nothing written


def reads_spectune_env(source: str) -> bool:
    """The rule of docs/settings.md (and of the house metric): a module that touches the environment must not name
    a ``SPECTUNE_*`` variable — it would be reading a setting behind ingest.settings' back."""
    return bool(ENV_ACCESS.search(source)) and "SPECTUNE_" in source


def test_the_rule_catches_an_environment_read() -> None:
    assert reads_spectune_env('import os\nTIMEOUT = os.environ.get("SPECTUNE_LOCK_TIMEOUT")\n')
    assert reads_spectune_env('from os import getenv\nDB = getenv("SPECTUNE_DB")\n')
    assert reads_spectune_env((REPO / "ingest" / "settings.py").read_text(encoding="utf-8"))
    assert not reads_spectune_env('import os\nPATH = os.environ.get("PATH")\n')
    assert not reads_spectune_env('"""Set $SPECTUNE_DB to move the store (ingest.settings)."""\n')


def test_no_module_but_ingest_settings_reads_spectune_variables() -> None:
    readers = sorted(str(p.relative_to(REPO)) for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")
                     if reads_spectune_env(p.read_text(encoding="utf-8")))
    assert set(readers) == {"ingest/settings.py"}, readers
