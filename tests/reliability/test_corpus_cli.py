"""The whole bad-input corpus through every reader and every CLI that reads it, as a user would run it.

For each broken file (tests/corpus/{traces,results,matrix}, listed in their MANIFEST.toml):
- the reader raises InputError (nothing else) with the manifest's line and message;
- the command (a real subprocess: ``ingest trace``, ``analysis rescore``, ``ingest results``, ``runner run``,
  ``runner plan``) exits 2 with exactly one stderr line ``error: <file>:<line>: <what was expected>``,
  no traceback, and the store it was pointed at is unchanged row for row (fingerprint before/after).
The subprocesses run a few at a time in one session fixture; each case is still its own test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ingest.errors import InputError
from runner.matrix import load_matrix
from tests.conftest import REPO
from tests.reliability.conftest import build_tiny_store, fingerprint, run_cli

CORPUS = REPO / "tests" / "corpus"
WORKERS = 3


def _manifest(name: str) -> list[dict[str, Any]]:
    return tomllib.loads((CORPUS / name / "MANIFEST.toml").read_text())["case"]


def _trace_generators() -> dict[str, Any]:
    """The trace corpus's own recipes for generated cases (one source of truth for what they build)."""
    spec = importlib.util.spec_from_file_location(
        "_trace_corpus", REPO / "tests" / "ingest" / "traces" / "test_traces_corpus.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GENERATORS


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as fh:
        fh.truncate(size)


RESULT_GENERATORS = {
    "sparse_2gb": lambda p: _sparse(p, 2 * 1024**3),
    "missing": lambda p: None,
    "copy_specbench": lambda p: shutil.copyfile(
        REPO / "data" / "samples" / "results" / "specbench_qwen3-8b-eagle3.jsonl", p),
}

MATRIX_GENERATORS = {  # files that cannot be committed: a FIFO would block a reader forever, a device never ends
    "fifo": lambda p: os.mkfifo(p),
    "link_dev_zero": lambda p: p.symlink_to("/dev/zero"),
    "link_dev_urandom": lambda p: p.symlink_to("/dev/urandom"),
    "sparse_3gb": lambda p: _sparse(p, 3 * 1024**3),
}


def matrix_file(case: dict[str, Any], gen_dir: Path) -> Path:
    """The matrix case's file: committed, or built by its recipe under ``gen_dir``."""
    if "generate" not in case:
        return CORPUS / "matrix" / case["file"]
    path = gen_dir / "matrix" / case["file"]
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() and not path.is_symlink():
        MATRIX_GENERATORS[case["generate"]](path)
    return path


@dataclass(frozen=True)
class Case:
    id: str
    store: str  # which private store the command is pointed at (one per command family)
    argv: tuple[str, ...]  # module + arguments
    path: str  # the file as written on the command line (errors must name it)
    line: int
    contains: str


def _map_args(mapping: dict[str, str]) -> list[str]:
    out = []
    for fld, col in mapping.items():
        if fld == "timestamp_unit":
            out += ["--timestamp-unit", col]
        else:
            out += ["--map", f"{fld}={col}"]
    return out


def _trace_cases(gen_dir: Path) -> list[Case]:
    generators = _trace_generators()
    out = []
    for c in _manifest("traces"):
        if "limits" in c:  # the case needs a smaller cap than the CLI's defaults: reader-level only
            continue
        if "generate" in c:
            path = gen_dir / "traces" / c["file"]
            path.parent.mkdir(exist_ok=True)
            if not path.exists() and not path.is_dir():
                generators[c["generate"]](path)
            arg = str(path)
        else:
            arg = str((CORPUS / "traces" / c["file"]).relative_to(REPO))
        extra = ["--format", c["format"], *_map_args(c.get("mapping", {}))]
        if "workload" in c:
            extra += ["--workload", c["workload"]]
        tid = f"{c['file']}-{c['format']}"
        out.append(Case(f"trace:{tid}", "trace", ("ingest", "trace", arg, *extra), arg, c["line"], c["contains"]))
        if (REPO / "analysis" / "cli" / "rescore.py").exists():
            out.append(Case(f"rescore:{tid}", "rescore", ("analysis", "rescore", arg, *extra), arg, c["line"],
                            c["contains"]))
    return out


def _result_cases(gen_dir: Path) -> list[Case]:
    if not (CORPUS / "results" / "MANIFEST.toml").exists():
        return []
    out = []
    for c in _manifest("results"):
        if "generate" in c:
            path = gen_dir / "results" / c["file"]
            path.parent.mkdir(exist_ok=True)
            if not path.exists():
                RESULT_GENERATORS[c["generate"]](path)
            arg = str(path)
        else:
            arg = str((CORPUS / "results" / c["file"]).relative_to(REPO))
        args = [str(a) for a in c.get("args", [])]
        if c.get("format"):
            args += ["--format", c["format"]]
        named = next((a for a in args if a.startswith("tests/corpus/") and not Path(REPO / a).exists()), arg)
        out.append(Case(f"results:{c['file']}", "results", ("ingest", "results", arg, *args), named, c["line"],
                        c["contains"]))
    return out


def _matrix_cases(gen_dir: Path) -> list[Case]:
    out = []
    for c in _manifest("matrix"):
        path = matrix_file(c, gen_dir)
        arg = str(path) if "generate" in c else str(path.relative_to(REPO))
        out.append(Case(f"run:{c['file']}", "run", ("runner", "run", "--matrix", arg, "--json"), arg, c["line"],
                        c["contains"]))
        out.append(Case(f"plan:{c['file']}", "plan", ("runner", "plan", "--matrix", arg), arg, c["line"],
                        c["contains"]))
    return out


def _all_cases(gen_dir: Path) -> list[Case]:
    return [*_trace_cases(gen_dir), *_result_cases(gen_dir), *_matrix_cases(gen_dir)]


@dataclass
class Sweep:
    results: dict[str, dict[str, Any]]  # case id -> {code, stdout, stderr}
    cases: dict[str, Case]
    before: dict[str, dict]
    after: dict[str, dict]


def _argv(case: Case, db: Path) -> list[str]:
    module, *args = case.argv
    if not (module == "runner" and args[0] == "plan"):
        args = [*args, "--db", str(db)]
    return [module, *args]


def _drive(argvs: list[list[str]], db: Path) -> list[dict[str, Any]]:
    """All invocations of one command family in one driver process (tests/reliability/cli_driver.py)."""
    proc = subprocess.run([sys.executable, "-m", "tests.reliability.cli_driver"], input=json.dumps(argvs),
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(db)},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _real(case: Case, db: Path) -> dict[str, Any]:
    """One invocation as a real ``python -m`` subprocess."""
    proc = run_cli(*_argv(case, db), env={"SPECTUNE_DB": str(db)}, timeout=600)
    return {"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def _sample(cases: list[Case]) -> list[Case]:
    """Cases also run as real subprocesses: the hostile ones, plus the first few of each command family."""
    hostile = ("sparse", "huge", "bomb", "gzip", "deep", "binary", "nul", "junk", "utf16", "long_line", "missing",
               "fifo", "dev_", "padding", "surrogate")
    chosen, per_family = [], {}
    for c in cases:
        per_family[c.store] = per_family.get(c.store, 0) + 1
        if per_family[c.store] <= 3 or any(h in c.id for h in hostile):
            chosen.append(c)
    return chosen


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, tiny_store_template: Path) -> Sweep:
    root = tmp_path_factory.mktemp("sweep")
    cases = _all_cases(root)
    families = sorted({c.store for c in cases})
    stores = {name: root / f"{name}.duckdb" for name in families}
    for db in stores.values():
        shutil.copyfile(tiny_store_template, db)
    before = {n: fingerprint(p) for n, p in stores.items()}
    results: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = {}
        for name in families:
            mine = [c for c in cases if c.store == name]
            futures[name] = (mine, pool.submit(_drive, [_argv(c, stores[name]) for c in mine], stores[name]))
        real = {c.id: pool.submit(_real, c, stores[c.store]) for c in _sample(cases)}
        for mine, fut in futures.values():
            results.update(zip([c.id for c in mine], fut.result(), strict=True))
        for cid, fut in real.items():
            results[f"python-m:{cid}"] = fut.result()
    after = {n: fingerprint(p) for n, p in stores.items()}
    by_id = {c.id: c for c in cases}
    by_id.update({f"python-m:{c.id}": c for c in _sample(cases)})
    return Sweep(results, by_id, before, after)


def _collect_ids() -> list[str]:
    """Case ids without building anything (generated files are made inside the fixture)."""
    out = []
    for c in _manifest("traces"):
        if "limits" in c:
            continue
        tid = f"{c['file']}-{c['format']}"
        out.append(f"trace:{tid}")
        if (REPO / "analysis" / "cli" / "rescore.py").exists():
            out.append(f"rescore:{tid}")
    if (CORPUS / "results" / "MANIFEST.toml").exists():
        out += [f"results:{c['file']}" for c in _manifest("results")]
    for c in _manifest("matrix"):
        out += [f"run:{c['file']}", f"plan:{c['file']}"]
    return out


@pytest.mark.parametrize("case_id", _collect_ids())
def test_cli_exits_2_with_one_line_naming_file_and_line(sweep: Sweep, case_id: str) -> None:
    _check(sweep, case_id)


def test_sample_as_real_python_m_subprocesses(sweep: Sweep) -> None:
    real = [cid for cid in sweep.results if cid.startswith("python-m:")]
    assert len(real) >= 15, real
    failures = []
    for cid in real:
        try:
            _check(sweep, cid)
        except AssertionError as exc:
            failures.append(f"{cid}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


def _check(sweep: Sweep, case_id: str) -> None:
    case, res = sweep.cases[case_id], sweep.results[case_id]
    err = str(res["stderr"]).strip()
    assert res["code"] == 2, (res["code"], err[-1500:])
    assert "Traceback" not in str(res["stderr"]) + str(res["stdout"]), err[-1500:]
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning: ")]
    assert len(lines) == 1, err[-1500:]
    if case.argv[0:2] in (("ingest", "trace"), ("analysis", "rescore")) and _forced_unknown(case):
        assert lines[0].startswith("error: argument --format: invalid choice"), lines[0][:400]
        return  # argparse refuses an unknown --format before any file is opened
    if case.argv[0] == "analysis" and not Path(REPO / case.path).exists():
        # rescore takes a file OR a stored trace id: a path that does not exist is tried as an id
        assert "is neither a file nor a trace id" in lines[0], lines[0][:400]
        return
    named = re.match(r"error: (.*?):(\d+): ", lines[0])
    assert named, lines[0][:400]
    path, line = named.group(1), int(named.group(2))
    inside = (REPO / case.path).is_dir() and path.startswith(case.path + "/")  # an export folder's own file
    assert (path == case.path or inside) and line == case.line, lines[0][:400]
    assert case.contains in lines[0], lines[0][:400]
    assert str(res["stdout"]).strip() == "", str(res["stdout"])[:400]  # no partial JSON from a failed command


def _forced_unknown(case: Case) -> bool:
    from ingest.traces import FORMAT_CHOICES

    i = case.argv.index("--format") if "--format" in case.argv else -1
    return i >= 0 and case.argv[i + 1] not in FORMAT_CHOICES


def test_no_failed_command_changed_its_store(sweep: Sweep) -> None:
    assert sweep.results, "the sweep ran nothing"
    for name in sweep.before:
        assert sweep.after[name] == sweep.before[name], name


def test_corpus_is_large_enough_and_every_file_is_listed() -> None:
    counted = 0
    for name in ("traces", "results", "matrix"):
        folder = CORPUS / name
        committed = {p.name for p in folder.iterdir()
                     if p.name not in ("MANIFEST.toml", "make_corpus.py", "__pycache__")}
        listed = {c["file"] for c in _manifest(name) if "generate" not in c}
        assert committed == listed, (name, committed ^ listed)
        counted += len(committed)
    assert len(_manifest("matrix")) >= 10
    assert counted >= 40, counted


@pytest.mark.parametrize("case", _manifest("matrix"), ids=[c["file"] for c in _manifest("matrix")])
def test_matrix_reader_raises_input_error_on_the_right_line(case: dict[str, Any], tmp_path: Path) -> None:
    path = matrix_file(case, tmp_path)
    with pytest.raises(InputError) as info:
        load_matrix(path)
    err = info.value
    assert err.line == case["line"] and case["contains"] in err.message, err.one_line()
    assert "\n" not in err.one_line() and err.one_line().startswith(f"error: {path}:{case['line']}: ")


def test_tiny_store_builder_is_real(tmp_path: Path) -> None:
    """The stores the sweep points at hold real rows, so 'unchanged' compares something."""
    fp = fingerprint(build_tiny_store(tmp_path / "t.duckdb"))
    assert fp["cells"][0] > 0 and fp["requests"][0] > 0 and fp["trace_requests"][0] > 0
