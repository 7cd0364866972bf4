"""The ``spectune`` command and its packaging: ``--help`` lists every command of the table, each command's help
works and loads only its own module, the ``python -m`` aliases answer as ``spectune`` does, the wheel's package
list is the source tree's, the dashboard launcher carries the project's Streamlit config.

(The installed copy itself is exercised in a clean venv by scripts/clean_venv_check.sh, run by .ci/run.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import pytest

from ingest import paths
from spectune import __version__
from spectune.cli import ALIASES, COMMANDS
from spectune.commands import dashboard
from tests.conftest import REPO, cli

# Runs a module as `python -m` does and prints its exit code and the spectune command modules it loaded.
PROBE = """
import json, runpy, sys, io, contextlib
sys.argv = [sys.argv[1], *sys.argv[2:]]
code = 0
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
print(json.dumps([code, sorted(m for m in sys.modules if m.startswith("spectune.commands."))]))
"""


def _help(*argv: str) -> tuple[int, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    code, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    return code, loaded


def _listed(help_text: str) -> set[str]:
    """The command names of a ``--help`` (each starts a line indented by four; wrapped help is indented more)."""
    return {line.split()[0] for line in help_text.splitlines() if line[:4] == "    " and line[4:5].strip()}


def test_help_lists_every_command_of_the_table_with_its_help():
    proc = cli("spectune", "--help")
    assert proc.returncode == 0, proc.stderr
    listed = " ".join(proc.stdout.split())  # argparse wraps the help column
    for name, (_module, help_text) in COMMANDS.items():
        assert f" {name} " in listed and " ".join(help_text.split()) in listed.replace("- ", "-"), name
    assert _listed(proc.stdout) == set(COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_help_exits_0_and_loads_only_its_own_module(name):
    code, loaded = _help("spectune", name, "--help")
    assert code in (0, None)
    assert loaded == [COMMANDS[name][0]]


def test_the_top_help_loads_no_command_module():
    assert _help("spectune", "--help") == (0, [])


@pytest.mark.parametrize("package", list(ALIASES))
def test_an_alias_lists_its_commands_only(package):
    prog, _description, names = ALIASES[package]
    proc = cli(package, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {prog} ")
    assert _listed(proc.stdout) == set(names)


@pytest.mark.parametrize("spectune_argv,alias_argv", [
    (("curve", "--family", "Qwen", "--method", "mtp", "--workload", "code", "--json"),
     ("analysis", "curve", "--family", "Qwen", "--method", "mtp", "--workload", "code", "--json")),
    (("plan", "--matrix", "runner/matrices/default.toml", "--json"),
     ("runner", "plan", "--matrix", "runner/matrices/default.toml", "--json")),
    (("winners", "--family", "NoSuchFamily", "--json"), ("analysis", "winners", "--family", "NoSuchFamily", "--json")),
    (("trace", "no/such/trace.csv", "--json"), ("ingest", "trace", "no/such/trace.csv", "--json")),
    (("export", "--run", "x"), ("ingest", "export", "--run", "x")),
])
def test_an_alias_gives_the_same_output_and_exit_code(default_db, spectune_argv, alias_argv):
    a = cli("spectune", *spectune_argv, db=default_db)
    b = cli(*alias_argv, db=default_db)
    assert (a.returncode, a.stdout) == (b.returncode, b.stdout)
    assert a.stderr.replace("spectune", "") == b.stderr.replace(f"python -m {alias_argv[0]}", "")


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
