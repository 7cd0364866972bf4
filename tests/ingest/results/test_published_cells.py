"""The published cells table (data/published/vllm-amd-2026-08/ shape) and its per-position file, on real stores.

The shipped folder imports as one run of cells (plus a ``none`` cell per model × dataset from the baseline column)
and one run of per-position rates; the two files import the same as the folder; a re-import adds nothing; a padded
copy (BOM, blank lines, spaces around fields) imports like the clean one; every broken copy is refused with
``error: <file>:<line>: …``, exit 2, and the store unchanged.
"""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

from ingest.__main__ import main
from tests.ingest.results.conftest import REPO, counts

FOLDER = REPO / "data" / "published" / "vllm-amd-2026-08"
CELLS = FOLDER / "cells.csv"
POSITIONS = FOLDER / "positions.csv"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _q(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return path


def test_folder_lands_cells_baselines_and_positions(empty_db: Path) -> None:
    assert main(["results", str(FOLDER), "--db", str(empty_db)]) == 0
    rows = _rows(CELLS)
    pairs = {(r["model"], r["dataset"]) for r in rows}
    got = _q(empty_db, """SELECT count(*) FILTER (WHERE method <> 'none'), count(*) FILTER (WHERE method = 'none'),
                                 count(concurrency), count(dataset), count(source_url) FROM cells""")[0]
    assert got == (len(rows), len(pairs), 0, len(rows) + len(pairs), len(rows) + len(pairs))
    assert _q(empty_db, "SELECT count(*) FROM positions")[0][0] == len(_rows(POSITIONS))
    assert _q(empty_db, "SELECT DISTINCT backend FROM runs") == [("import",)]
    assert {r[0] for r in _q(empty_db, "SELECT DISTINCT source_url FROM cells")} == {r["source_url"] for r in rows}


def test_speedup_against_none_is_the_tables(empty_db: Path) -> None:
    main(["results", str(CELLS), str(POSITIONS), "--db", str(empty_db)])
    got = _q(empty_db, """SELECT c.model, c.dataset, c.method, c.depth, c.output_throughput / b.output_throughput,
                                 c.acceptance_length, c.acceptance_rate
                          FROM cells c JOIN cells b ON b.model = c.model AND b.dataset = c.dataset
                               AND b.method = 'none' WHERE c.method <> 'none'""")
    by_key = {(m, d, me, int(dp)): (s, al, ar) for m, d, me, dp, s, al, ar in got}
    rows = _rows(CELLS)
    assert len(by_key) == len(rows)
    for r in rows:
        s, al, ar = by_key[(r["model"], r["dataset"], r["method"], int(r["depth"]))]
        assert s == pytest.approx(float(r["speedup"]), abs=0.01)
        assert (al, ar) == (float(r["acceptance_length"]), float(r["acceptance_rate"]))


def test_positions_match_their_cells(empty_db: Path) -> None:
    main(["results", str(FOLDER), "--db", str(empty_db)])
    got = _q(empty_db, """SELECT c.model, c.dataset, c.method, c.depth, p.position, p.acceptance
                          FROM positions p JOIN cells c USING (run_id, cell_id)""")
    want = {(r["model"], r["dataset"], r["method"], int(r["depth"]), int(r["position"])): float(r["acceptance_rate"])
            for r in _rows(POSITIONS)}
    assert {(m, d, me, int(dp), int(p)): a for m, d, me, dp, p, a in got} == want


def test_reimport_adds_nothing(empty_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", str(FOLDER), "--db", str(empty_db)]) == 0
    before = counts(empty_db)
    capsys.readouterr()
    assert main(["results", str(CELLS), str(POSITIONS), "--db", str(empty_db)]) == 0
    assert counts(empty_db) == before
    out = capsys.readouterr().out
    assert "already in the store" in out and "already imported" in out


def test_padded_file_imports_like_the_clean_one(tmp_path: Path, empty_db: Path) -> None:
    text = CELLS.read_text(encoding="utf-8").splitlines()
    padded = tmp_path / "cells.csv"
    body = ["\n".join(", ".join(f" {f} " for f in next(csv.reader([line]))) for line in [text[0]])]
    for line in text[1:]:
        fields = next(csv.reader([line]))
        out = []
        for f in fields:
            out.append(f'"  {f}  "' if "," in f else f"  {f}  ")
        body += [",".join(out), "", "   "]
    padded.write_text("\ufeff" + "\r\n".join(body) + "\r\n\r\n", encoding="utf-8")
    assert main(["results", str(padded), "--db", str(empty_db)]) == 0
    clean = tmp_path / "clean.duckdb"
    assert main(["results", str(CELLS), "--db", str(clean)]) == 0
    q = "SELECT cell_id, output_throughput, acceptance_length, dataset, source_url FROM cells ORDER BY cell_id"
    assert _q(empty_db, q) == _q(clean, q)


def _broken_cells(tmp_path: Path, change) -> Path:
    rows = _rows(CELLS)[:12]
    header = list(rows[0])
    change(rows)
    return _write(tmp_path / "cells.csv", header, rows)


BROKEN_CELLS = {
    "not a number": (lambda rows: rows[3].update(output_tok_s="fast"), 5, "output_tok_s 'fast' is not a number"),
    "unknown method": (lambda rows: rows[2].update(method="warp"), 4, "method 'warp'"),
    "zero tok/s": (lambda rows: rows[1].update(output_tok_s="0"), 3, "must be above 0"),
    "rate above 1": (lambda rows: rows[4].update(acceptance_rate="1.7"), 6, "acceptance_rate '1.7' outside"),
    "depth range": (lambda rows: rows[5].update(depth="2-4"), 7, "depth '2-4'"),
    "load zero": (lambda rows: rows[6].update(concurrency="0"), 8, "concurrency '0' is not a whole number ≥ 1"),
    "same cell twice": (lambda rows: rows.__setitem__(7, dict(rows[1])), 9, "the same cell as line 3"),
    "baselines disagree": (lambda rows: rows[8].update(baseline_output_tok_s="999"), 10, "baseline 999 tok/s differs"),
    "workload unknown": (lambda rows: rows[9].update(workload="", dataset="NoSuchSet"), 11, "not in datasets.csv"),
    "empty model": (lambda rows: rows[10].update(model=""), 12, "empty 'model'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_CELLS))
def test_broken_cells_table_is_refused_on_its_line(case: str, tmp_path: Path, empty_db: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    change, line, what = BROKEN_CELLS[case]
    path = _broken_cells(tmp_path, change)
    before = counts(empty_db)
    assert main(["results", str(path), "--db", str(empty_db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:{line}: ") and what in err and "\n" not in err
    assert counts(empty_db) == before


def test_ragged_row_and_missing_column(tmp_path: Path, empty_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = CELLS.read_text(encoding="utf-8").splitlines()
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("\n".join([*lines[:4], lines[4] + ",extra", *lines[5:8]]) + "\n", encoding="utf-8")
    assert main(["results", str(ragged), "--db", str(empty_db)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {ragged}:5: ")
    no_tok = tmp_path / "no_tok.csv"
    rows = _rows(CELLS)[:3]
    header = [h for h in rows[0] if h != "output_tok_s"]
    _write(no_tok, header, [{k: v for k, v in r.items() if k != "output_tok_s"} for r in rows])
    assert main(["results", str(no_tok), "--db", str(empty_db)]) == 2
    assert "unrecognised content" in capsys.readouterr().err  # without output_tok_s it is no known shape
    assert main(["results", str(no_tok), "--format", "published_cells", "--db", str(empty_db)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {no_tok}:1: missing columns output_tok_s")
    assert counts(empty_db)["cells"] == 0


def test_positions_need_their_cells(tmp_path: Path, empty_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", str(POSITIONS), "--db", str(empty_db)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {POSITIONS}:0: a per-position table is imported together")
    rows = _rows(POSITIONS)
    header = list(rows[0])
    orphan = _write(tmp_path / "positions.csv", header, [*rows[:5], {**rows[5], "model": "nobody/None-1B"}])
    assert main(["results", str(CELLS), str(orphan), "--db", str(empty_db)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {orphan}:7: no row of the cells table for nobody/None-1B")
    kept = [r for r in rows[:10] if not (r["depth"] == "3" and r["position"] == "2")]
    gap = _write(tmp_path / "gap.csv", header, kept)
    assert main(["results", str(CELLS), str(gap), "--db", str(empty_db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {gap}:") and "not 1…" in err
    deep = _write(tmp_path / "deep.csv", header, [{**rows[0], "position": "2"}])
    assert main(["results", str(CELLS), str(deep), "--db", str(empty_db)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {deep}:2: position '2' is not a draft position of depth 1")
    assert counts(empty_db)["cells"] == 0 and counts(empty_db)["positions"] == 0


def test_fresh_table_of_other_models_needs_no_workload_or_baseline(tmp_path: Path, empty_db: Path) -> None:
    """A table from another post: invented models, no workload column (from data/datasets.csv), no baseline."""
    header = ["source_url", "model", "method", "depth", "dataset", "output_tok_s"]
    rows = [{"source_url": "https://example.org/post", "model": "acme/Foo-9B", "method": "eagle3", "depth": "3",
             "dataset": "HumanEval", "output_tok_s": "812"},
            {"source_url": "https://example.org/post", "model": "acme/Foo-9B", "method": "eagle3", "depth": "3",
             "dataset": "GSM8K", "output_tok_s": "640"}]
    path = _write(tmp_path / "other.csv", header, rows)
    assert main(["results", str(path), "--db", str(empty_db)]) == 0
    got = sorted(_q(empty_db, "SELECT model, family, workload, dataset, concurrency, gpu FROM cells"))
    assert got == [("acme/Foo-9B", "unknown", "code", "HumanEval", None, "unknown"),
                   ("acme/Foo-9B", "unknown", "reasoning", "GSM8K", None, "unknown")]


def test_the_drafter_checkpoint_reaches_the_cell_and_the_deploy_command(empty_db: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The table's notes name each drafter ("draft checkpoint=…"): the cell keeps it, the deploy command uses it."""
    import json

    from analysis.__main__ import main as analysis_main

    assert main(["results", str(FOLDER), "--db", str(empty_db)]) == 0
    got = dict(_q(empty_db, "SELECT DISTINCT model || ' ' || method, draft_model FROM cells WHERE method <> 'none'"))
    assert got["moonshotai/Kimi-K2.5 dflash"] == "z-lab/Kimi-K2.5-DFlash"
    assert got["Qwen/Qwen3.5-122B-A10B mtp"] is None  # native MTP: no separate drafter
    capsys.readouterr()
    assert analysis_main(["winners", "--db", str(empty_db), "--model", "Kimi-K2.5", "--best-depth", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    commands = {c["dataset"]: c["deploy"]["command"] for c in doc["cells"]}
    assert len(commands) == 4 and all('"model":"z-lab/Kimi-K2.5-DFlash"' in cmd for cmd in commands.values())
