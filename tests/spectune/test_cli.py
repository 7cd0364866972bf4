"""The ``spectune`` command and its packaging: every subcommand reaches a real CLI command, the wheel's package
list is the source tree's, the dashboard launcher carries the project's Streamlit config.

(The installed copy itself is exercised in a clean venv by scripts/clean_venv_check.sh, run by .ci/run.)
"""

from __future__ import annotations

import json
import tomllib

import pytest

from ingest import paths
from spectune import __version__, dashboard
from spectune.cli import SUBCOMMANDS
from tests.conftest import REPO, cli


def test_every_subcommand_is_a_command_of_its_cli():
    import importlib

    for name, (module, target, _help) in SUBCOMMANDS.items():
        if module == "spectune.dashboard":
            continue
        mod = importlib.import_module(module)
        if hasattr(mod, "add_arguments"):  # a spectune.commands module: its own parser, run(args)
            assert callable(mod.run), name
            continue
        parser = mod.build_parser()
        choices = next(a.choices for a in parser._actions if getattr(a, "choices", None))
        assert target in choices, name


def test_the_wheel_ships_every_package_of_the_source_tree():
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())
    listed = set(conf["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts)
               for root in ("analysis", "dashboard", "ingest", "runner", "spectune")
               for p in (REPO / root).rglob("__init__.py")}
    assert listed == on_disk | {"spectune.data", "spectune.streamlit"}
    assert conf["tool"]["setuptools"]["package-dir"] == {"spectune.data": "data", "spectune.streamlit": ".streamlit"}


def test_version_and_same_results_as_python_m(default_db):
    proc = cli("spectune", "--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"spectune {__version__}"
    a = cli("spectune", "winners", "--family", "Qwen", "--json", db=default_db)
    b = cli("analysis", "winners", "--family", "Qwen", "--json", db=default_db)
    assert a.returncode == b.returncode == 0 and json.loads(a.stdout) == json.loads(b.stdout)
    plan = cli("spectune", "plan", "--matrix", "runner/matrices/default.toml", "--json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["cells"] > 0


@pytest.mark.parametrize("argv,hint", [(("winers",), "did you mean 'winners'?"),
                                        (("winners", "--famly", "Qwen"), "did you mean '--family'?"),
                                        (("plan", "--matrix", "runner/matrices/default.toml", "--jsn"),
                                         "did you mean '--json'?")])
def test_misspellings_get_a_suggestion_in_one_line(default_db, argv, hint):
    proc = cli("spectune", *argv, db=default_db)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: ") and hint in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_dashboard_gets_the_project_config_and_user_flags_win():
    flags = dashboard.config_flags(paths.STREAMLIT_CONFIG, ["--server.port", "8600", "--server.address=0.0.0.0"])
    assert "--server.enableXsrfProtection=true" in flags and "--browser.gatherUsageStats=false" in flags
    assert not any(f.startswith("--server.address") for f in flags)
    cmd = dashboard.command(["--server.address=0.0.0.0"])
    assert cmd[:3] == ["streamlit", "run", str(REPO / "dashboard" / "app.py")] and cmd[-1] == "--server.address=0.0.0.0"


def test_a_checkout_finds_its_own_data():
    assert not paths.INSTALLED
    assert paths.DATA_DIR == REPO / "data" and (paths.DATA_DIR / "sim_params.toml").is_file()
    assert paths.STREAMLIT_CONFIG == REPO / ".streamlit" / "config.toml"
