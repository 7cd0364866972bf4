"""Hostile values through every way in: CLI flags, the dashboard's URL (st.query_params), CSV exports.

Hostile = quotes, ``;``, ``--``, ``' OR 1=1 --``, unicode look-alikes, RTL overrides, NUL, 10 kB strings,
spreadsheet formulas (tests/reliability/conftest.py:HOSTILE). Shown:
- CLI: each command exits 0 with a clean (empty or literal) result or 2 with one ``error:`` line; no
  traceback, no DuckDB error text; a filter value never widens a result (``' OR 1=1 --`` matches nothing);
  read commands leave the store unchanged; values that are accepted as labels are stored literally.
  Hundreds of invocations run through tests/reliability/cli_driver.py (one process per command family,
  which also lets NUL through — argv cannot carry it); a sample runs as real ``python -m`` subprocesses.
- URL: every page with every URL key set to hostile values renders without an exception, never echoes
  the raw value anywhere in the page (text, charts, tables), drops it from the URL, and leaves the store
  unchanged.
- CSV export: cells a spreadsheet would run as a formula get a leading apostrophe, in every text-like
  column type; nested columns export instead of crashing.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ingest import sql, store
from tests.conftest import REPO
from tests.reliability.conftest import HOSTILE, NUL_VALUES, assert_clean_usage_error, fingerprint, run_cli

SQL_ERROR = re.compile(r"(Parser|Binder|Catalog|Conversion|Constraint|Invalid Input|Serialization|Transaction|"
                       r"Syntax|Out of Range) Error|duckdb\.|_duckdb|\bSELECT\b.*\bFROM\b")
VALUES = (*HOSTILE, *NUL_VALUES)
VLLM_SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
TRACE_SAMPLE = REPO / "data" / "samples" / "traces" / "azure_code.csv"


def _drive(argvs: list[list[str]], db: Path) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "tests.reliability.cli_driver"], input=json.dumps(argvs),
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(db)},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _clean(res: dict[str, Any], argv: list[str]) -> None:
    """Exit 0 or 2; no traceback; no SQL error text; a failure is one line."""
    out, err = str(res["stdout"]), str(res["stderr"])
    where = f"{[a[:60] for a in argv[:5]]} → {res['code']}: {err[:300]} … {err[-300:]}"
    assert res["code"] in (0, 2), where
    assert "Traceback" not in out + err, where
    assert not SQL_ERROR.search(err), where
    if res["code"] == 2:
        lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning: ")]
        assert len(lines) == 1 and lines[0].startswith("error: "), where
        assert out.strip() == "", where


# ---- read commands: filters never widen, the store never changes -----------------------------------

def _read_argvs(db: Path) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    d = ["--db", str(db), "--json"]
    for v in VALUES:
        for flag in ("--family", "--gpu", "--workload", "--method", "--run"):
            out.append(("winners", ["analysis", "winners", flag, v, *d]))
        out.append(("curve", ["analysis", "curve", "--family", v, "--method", "eagle3", "--workload", "code", *d]))
        out.append(("curve", ["analysis", "curve", "--family", "Qwen", "--method", v, "--workload", "code",
                              "--gpu", v, *d]))
        out.append(("rescore", ["analysis", "rescore", str(TRACE_SAMPLE), "--family", v, *d]))
        out.append(("rescore", ["analysis", "rescore", str(TRACE_SAMPLE), "--gpu", v, *d]))
        out.append(("rescore", ["analysis", "rescore", str(TRACE_SAMPLE), "--default", v, *d]))
        out.append(("rescore", ["analysis", "rescore", str(TRACE_SAMPLE), "--workload", v, "--family", "Qwen", *d]))
        out.append(("rescore-id", ["analysis", "rescore", v, *d]))  # not a file: tried as a stored trace id
        out.append(("compare", ["analysis", "compare", v, "tiny", *d]))
    return out


def test_hostile_filter_values_never_widen_a_result_nor_touch_the_store(tiny_store: Path) -> None:
    before = fingerprint(tiny_store)
    cases = _read_argvs(tiny_store)
    results = _drive([argv for _, argv in cases], tiny_store)
    for (kind, argv), res in zip(cases, results, strict=True):
        _clean(res, argv)
        if kind in ("winners", "curve", "rescore-id"):
            # no hostile value names a real family/GPU/method/run/trace: nothing may match
            assert res["code"] == 2, (argv[:5], str(res["stdout"])[:300])
        elif kind == "rescore" and res["code"] == 0:
            doc = json.loads(res["stdout"])
            flag = argv[3]
            if flag in ("--family", "--gpu"):
                raise AssertionError(f"{flag} {argv[4][:40]!r} matched cells: {str(doc)[:300]}")
            if flag == "--workload":  # a label for unlabelled requests: only ever echoed as data, never run
                assert all(r["family"] == "Qwen" for r in doc["recommendations"])
    assert fingerprint(tiny_store) == before


def test_winners_still_answers_for_real_values(tiny_store: Path) -> None:
    """The control for the test above: the same commands with real values do return cells."""
    res = _drive([["analysis", "winners", "--family", "Qwen", "--db", str(tiny_store), "--json"]], tiny_store)[0]
    assert res["code"] == 0 and json.loads(res["stdout"])["cells"]


# ---- write commands: refused cleanly or stored literally ----------------------------------------

def _variant(src: Path, i: int, folder: Path) -> Path:
    """A copy of a result file with a different hash (so every import is new, not a duplicate)."""
    doc = json.loads(src.read_text())
    doc["label"] = f"variant-{i}"
    path = folder / f"bench-{i}.json"
    path.write_text(json.dumps(doc))
    return path


def _rows_of_run(db: Path, run_id: str) -> str:
    with store.session(db, read_only=True) as con:
        frames = [sql.frame(con, f"SELECT * EXCLUDE (written_at) FROM {t} WHERE run_id = ? ORDER BY ALL", [run_id])
                  for t in ("cells",)]
        frames += [sql.frame(con, f"SELECT * FROM {t} WHERE run_id = ? ORDER BY ALL", [run_id])
                   for t in ("requests", "positions", "cell_bootstrap")]
    return hashlib.sha256(b"".join(f.write_ndjson().encode() for f in frames)).hexdigest()  # lists too


def test_hostile_set_values_are_refused_or_stored_literally(tiny_store: Path, tmp_path: Path) -> None:
    before = fingerprint(tiny_store)
    original = _rows_of_run(tiny_store, "tiny")
    cases = []
    for i, v in enumerate(VALUES):
        for key in ("family", "workload", "gpu", "method", "depth", "concurrency"):
            path = _variant(VLLM_SAMPLE, len(cases), tmp_path)
            cases.append((key, v, ["ingest", "results", str(path), "--set", f"{key}={v}", "--db", str(tiny_store),
                                   "--json"]))
        del i
    results = _drive([argv for *_, argv in cases], tiny_store)
    accepted = 0
    for (key, v, argv), res in zip(cases, results, strict=True):
        _clean(res, argv)
        if res["code"] != 0:
            continue
        accepted += 1
        run_id = json.loads(res["stdout"])["files"][0]["run_id"]
        with store.session(tiny_store, read_only=True) as con:
            stored = sql.frame(con, f"SELECT DISTINCT {key} FROM cells WHERE run_id = ?", [run_id])[key].to_list()
        want = v.strip().lower() if key in ("workload", "method") else v.strip()  # these are normalised lower-case
        assert stored == [type(stored[0])(want)], (key, v[:40], stored)  # the literal value, nothing else
    assert accepted > 0  # quotes, ';', '--', unicode letters are legitimate label text and must work
    after = fingerprint(tiny_store)
    assert set(after) == set(before)  # no table dropped or created
    assert _rows_of_run(tiny_store, "tiny") == original  # earlier rows untouched


def test_hostile_trace_names_and_workloads_are_refused_or_stored_literally(tiny_store: Path, tmp_path: Path) -> None:
    original = _rows_of_run(tiny_store, "tiny")
    cases = []
    for i, v in enumerate(VALUES):
        path = tmp_path / f"t{i}.csv"
        path.write_text(f"input_tokens,output_tokens\n{100 + i},50\n{200 + i},60\n")
        cases.append((v, ["ingest", "trace", str(path), "--workload", v, "--name", v, "--db", str(tiny_store),
                          "--json"]))
    results = _drive([argv for _, argv in cases], tiny_store)
    for (v, argv), res in zip(cases, results, strict=True):
        _clean(res, argv)
        if res["code"] == 0:
            doc = json.loads(res["stdout"])
            with store.session(tiny_store, read_only=True) as con:
                name = sql.one(con, "SELECT name FROM traces WHERE trace_id = ?", [doc["trace_id"]])[0]
            assert name == v, (v[:40], name[:40])
    assert _rows_of_run(tiny_store, "tiny") == original


def test_a_sample_through_real_python_m(tiny_store: Path) -> None:
    before = fingerprint(tiny_store)
    for v in ("' OR 1=1 --", "Qwen'; DROP TABLE cells; --", "\u202eKimi", "A" * 10_000):
        proc = run_cli("analysis", "winners", "--family", v, "--db", str(tiny_store), "--json")
        line = assert_clean_usage_error(proc)
        assert "cells with this family" in line and "valid:" in line and not SQL_ERROR.search(proc.stderr)
        proc = run_cli("analysis", "rescore", str(TRACE_SAMPLE), "--default", v, "--db", str(tiny_store), "--json")
        assert_clean_usage_error(proc)
    assert fingerprint(tiny_store) == before


# ---- the dashboard's URL -------------------------------------------------------------------------

def _declared(path: Path) -> set[str]:
    """URL keys declared in one file: first argument of Param(...) / widgets.p_*(...), plus the shared helpers."""
    keys = set()
    text = path.read_text()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if (name == "Param" or name.startswith("p_")) and isinstance(node.args[0].value, str):
                keys.add(node.args[0].value)
    shared = {"p_metric(": {"metric"}, "p_depth(": {"depth"}, "p_slo(": {"slo_ttft", "slo_tpot"},
              "drill.params(": {"cell", "dlat"}}
    for call, names in shared.items():
        if call in text:
            keys |= names
    return keys


def url_keys() -> set[str]:
    """Every URL key the dashboard declares anywhere."""
    return set().union(*(_declared(p) for p in (REPO / "dashboard").rglob("*.py")))


PAGES = sorted(p.name for p in (REPO / "dashboard" / "views").glob("*.py"))
assert PAGES, "no dashboard pages found: the injection test would test nothing"
URL_VALUES = ("Zq7' OR 1=1 --", "Zq7\"; DROP TABLE cells; --", "Zq7<script>alert(1)</script>", "Zq7\u202eKimi",
              "Zq7\x00x", "Zq7" + "A" * 10_000, "=Zq7|' /C calc'!A0", "[Zq7](javascript:alert(1))", "١٦", "1e999")


def _rendered(at) -> bytes:
    """Everything the page sent to the browser, as bytes (text, chart specs, table data)."""
    out = []
    stack = [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "SerializeToString"):
            out.append(proto.SerializeToString())
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            stack.extend(children.values())
    return b"\n".join(out)


@pytest.fixture(scope="module")
def app_store(default_db: Path, tmp_path_factory: pytest.TempPathFactory):
    """The app pointed at a copy of the default-data store (never data/), with production watch samples so the
    Production page has something to render."""
    import shutil

    from tests.analysis.production import fleet

    db = tmp_path_factory.mktemp("injection") / "app.duckdb"
    shutil.copy(default_db, db)
    fleet.write(db, fleet.series(fleet.target("t1", "acme/code", "Kimi", "mtp", 3, "MI355X", "code"), 0.6, seed=1))
    old = os.environ.get("SPECTUNE_DB")
    os.environ["SPECTUNE_DB"] = str(db)
    yield db
    if old is None:
        os.environ.pop("SPECTUNE_DB", None)
    else:
        os.environ["SPECTUNE_DB"] = old


@pytest.mark.parametrize("page", PAGES)
def test_every_url_key_with_hostile_values_on_every_page(app_store: Path, page: str) -> None:
    from streamlit.testing.v1 import AppTest

    keys = url_keys()
    assert len(keys) >= 20, keys
    before = fingerprint(app_store)
    for value in URL_VALUES:
        at = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=120)
        at.run()
        at.switch_page(f"views/{page}")
        for k in sorted(keys):
            at.query_params[k] = [value, value + "2"] if k in ("fam", "gpu", "wl", "meth", "conc") else value
        at.run()
        assert not at.exception, (page, value[:30], [e.message[:300] for e in at.exception])
        shown = _rendered(at)
        assert len(shown) > 1000, (page, "nothing rendered: the check below would be vacuous")
        raw = value.encode()
        if "Zq7" in value:  # the markup-bearing values (short numeric look-alikes may show as themselves)
            assert raw not in shown, (page, value[:30], "raw URL value echoed into the page")
        for dangerous in (b"<script", b"\xe2\x80\xae", b"](javascript:", b"' OR 1=1"):  # (NUL: protobuf has its own)
            if dangerous in raw:
                assert dangerous not in shown, (page, value[:30], dangerous)
        stem = page.removesuffix(".py")
        seeded = [k for k in _declared(REPO / "dashboard" / "views" / page)  # keys this run actually parsed
                  if f"{stem}.{k}" in at.session_state or f"_init.{stem}.{k}" in at.session_state]
        for k in seeded:  # (other pages' keys, or keys of a page that stopped early, stay untouched by design)
            got = at.query_params.get(k, [])
            left = [x for x in ([got] if isinstance(got, str) else got) if "Zq7" in x or x == value]
            assert not left, (page, k, value[:30], "hostile value left in the URL")
    assert fingerprint(app_store) == before


# ---- CSV export ---------------------------------------------------------------------------------

FORMULAS = ["=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1", "\n=1", " =HYPERLINK(\"x\")",
            "＝1+1", "=cmd|' /C calc'!A0"]


def test_csv_export_escapes_formulas_in_every_text_like_column() -> None:
    from dashboard.export import csv_bytes

    safe = ["plain", "Qwen", "eagle3:3", "1.5x"]
    values = FORMULAS + safe
    frame = pl.DataFrame({"s": values, "n": list(range(-3, len(values) - 3))}).with_columns(
        pl.col("s").cast(pl.Categorical).alias("cat"), pl.col("s").cast(pl.Enum(values)).alias("enum"),
        pl.col("s").map_elements(lambda x: [x, x], return_dtype=pl.List(pl.String)).alias("lst"),
        pl.struct(pl.col("s")).alias("st"))
    rows = list(csv.reader(io.StringIO(csv_bytes(frame).decode())))
    header, body = rows[0], rows[1:]
    # CSV headers are human titles (dashboard/export.py); the columns are the frame's, in order
    assert [h.lower() for h in header] == ["s", "n", "cat", "enum", "lst", "st"] and len(body) == len(values)
    header = [h.lower() for h in header]
    for row, original in zip(body, values, strict=True):
        for col, cell in zip(header, row, strict=True):
            if col == "n":
                assert cell.lstrip("-").isdigit()  # numbers stay numbers (a negative number is not a formula)
                continue
            first = cell.lstrip(" ")[:1]
            assert first not in ("=", "+", "-", "@", "\t", "\r", "\n", "＝"), (col, cell)
            if col in ("s", "cat", "enum") and original in safe:
                assert cell == original  # nothing else is altered
            if col in ("s", "cat", "enum") and original in FORMULAS:
                assert cell == "'" + original
