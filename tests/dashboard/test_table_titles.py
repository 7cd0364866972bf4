"""Every page in the real app (AppTest), every on-screen table and every download button: tables (and chart
tooltips) show human column titles (never a machine name: a snake_case identifier such as
``gain_vs_default_pct`` or ``run_id``), values keep their types, candidate cells use the one notation
(``dflash·5``, ``none`` alone), and the retired ``dflash:5`` / ``none:0`` appear nowhere a user looks — page
text, widget options, table cells, rendered chart specs, CSV / SVG / HTML downloads. CSV headers are human
titles; Parquet keeps the machine names.

The downloads are the buttons' own callables (recorded as Streamlit registers them), so what is checked is the
file a click would give.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from analysis.labels import CANDIDATE_COLUMNS, CANDIDATE_PATTERN, COLUMN_TITLES, OLD_NOTATION, title
from tests.conftest import REPO
from tests.dashboard.conftest import chart_specs, open_page, plotly_figures

MACHINE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")  # `gpu`, `run_id`, `gain_vs_default_pct`
CANDIDATE_TITLES = {title(c) for c in CANDIDATE_COLUMNS}
KNOWN = set(COLUMN_TITLES.values())
TRACES = REPO / "data" / "samples" / "traces"


class Downloads:
    """What each download button on the last run would give: file name → a callable returning the bytes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: dict[str, Callable[[], bytes | str]] = {}
        deferred, static = MediaFileManager.add_deferred, MediaFileManager.add

        def add_deferred(mgr, data_callable, mimetype, coordinates, file_name=None, **kw):
            self.files[file_name] = data_callable
            return deferred(mgr, data_callable, mimetype, coordinates, file_name, **kw)

        def add(mgr, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
            if is_for_static_download:
                self.files[file_name] = lambda data=data: data
            return static(mgr, data, mimetype, coordinates, file_name, is_for_static_download)

        monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
        monkeypatch.setattr(MediaFileManager, "add", add)

    def reset(self) -> None:
        self.files.clear()

    def of(self, suffix: str) -> dict[str, bytes]:
        out = {}
        for name, make in self.files.items():
            if name.endswith(suffix):
                data = make()
                out[name] = data.encode() if isinstance(data, str) else data
        return out


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> Downloads:
    return Downloads(monkeypatch)


def shown_text(at: AppTest) -> str:
    """Every piece of text on the page a reader sees, widget options included."""
    parts = [e.value for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "success",
                                  "error", "code") for e in at.get(kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    for kind in ("selectbox", "multiselect", "radio"):
        for w in at.get(kind):
            parts += [str(w.label), *map(str, w.options)]
    return "\n".join(parts)


PER_GPU = ("Winner on ", "Best on ", "Pick on ", "Verdict on ", "Verdict · pick (p) on ")  # GPUs page's own titles


def check_table(frame: pd.DataFrame, where: str) -> None:
    machine = [c for c in frame.columns if MACHINE.fullmatch(str(c)) or "_" in str(c)]
    assert not machine, f"{where}: machine column names on screen: {machine} (all: {list(frame.columns)})"
    # every title is written in the one mapping (analysis.labels), not made up by the fallback
    unmapped = [c for c in map(str, frame.columns) if c not in KNOWN and not c.startswith(PER_GPU)
                and not (c.endswith((" in A", " in B")) and c[:-5] in KNOWN)]  # a view's own: "p99 TTFT (ms) in A"
    assert not unmapped, f"{where}: columns without a title in analysis.labels.COLUMN_TITLES: {unmapped}"
    for c in frame.columns:
        cells = [v for v in frame[c].tolist() if isinstance(v, str)]
        old = [v for v in cells if re.search(OLD_NOTATION, v)]
        assert not old, f"{where}: column {c!r} has the retired notation: {old[:3]}"
        if c in CANDIDATE_TITLES or str(c).startswith(("Winner on ", "Best on ", "Pick on ")):
            bad = [v for v in cells if not re.fullmatch(CANDIDATE_PATTERN, v)]
            assert not bad, f"{where}: column {c!r} holds cells outside the notation: {bad[:3]}"
        if str(c).endswith(("(%)", "(ms)", "(tok/s)", "(req/s)")) and frame[c].notna().any():
            assert pd.api.types.is_numeric_dtype(frame[c]), f"{where}: {c!r} became text ({frame[c].dtype})"


def _tooltips(node: object) -> list[dict]:
    """Every tooltip field definition in a Vega-Lite spec."""
    out: list[dict] = []
    if isinstance(node, list):
        for x in node:
            out += _tooltips(x)
    elif isinstance(node, dict):
        tips = node.get("tooltip")
        if isinstance(tips, dict | list):
            out += [x for x in (tips if isinstance(tips, list) else [tips]) if isinstance(x, dict) and "field" in x]
        for k, v in node.items():
            if k != "tooltip":
                out += _tooltips(v)
    return out


def check_page(at: AppTest, where: str) -> int:
    """The page's tables, text and chart specs; returns the number of tables checked."""
    text = shown_text(at)
    assert not re.search(OLD_NOTATION, text), f"{where}: {re.search(OLD_NOTATION, text)}"
    specs = json.dumps([c["spec"] for c in chart_specs(at)], ensure_ascii=False)
    assert not re.search(OLD_NOTATION, specs), f"{where} chart spec: {re.search(OLD_NOTATION, specs)}"
    for c in chart_specs(at):  # the data a chart draws (labels, tooltips) too
        rows = json.dumps(c["rows"], ensure_ascii=False, default=str)
        assert not re.search(OLD_NOTATION, rows), f"{where} chart data: {re.search(OLD_NOTATION, rows)}"
    for f in plotly_figures(at):  # the interactive figures: titles, axes, hover templates and the data they draw
        figure = json.dumps(f["figure"], ensure_ascii=False, default=str)
        assert not re.search(OLD_NOTATION, figure), f"{where} plotly figure: {re.search(OLD_NOTATION, figure)}"
        hovers = " ".join(str(t.get("hovertemplate", "")) for t in f["figure"]["data"])
        assert not re.search(r"\b[a-z]+_[a-z_]+\b", hovers), f"{where}: hover names a machine field: {hovers}"
    # a tooltip without a title shows its field's machine name; charts word theirs in lower case ("requests")
    tips = [t for c in chart_specs(at) for t in _tooltips(c["spec"])]
    machine = sorted({str(t.get("title", t["field"])) for t in tips if "title" not in t or "_" in str(t["title"])})
    assert not machine, f"{where}: tooltips titled with machine names: {machine}"
    for i, df in enumerate(at.dataframe):
        check_table(df.value, f"{where} table {i}")
    for i, t in enumerate(at.table):
        check_table(t.value, f"{where} st.table {i}")
    return len(at.dataframe) + len(at.table)


def check_downloads(dl: Downloads, where: str, *, svg: bool = True, reports: bool = True) -> set[str]:
    """CSV: human headers, no retired notation; Parquet: machine names; SVG and HTML: no retired notation.
    Returns the formats seen."""
    for name, data in dl.of(".csv").items():
        text = data.decode()
        header = pl.read_csv(io.BytesIO(data), n_rows=0).columns if text.strip() else []
        machine = [c for c in header if MACHINE.fullmatch(c) or "_" in c]
        assert not machine, f"{where} {name}: machine names in the CSV header: {machine}"
        assert not re.search(OLD_NOTATION, text), f"{where} {name}: {re.search(OLD_NOTATION, text)}"
    for name, data in dl.of(".parquet").items():
        cols = pl.read_parquet(io.BytesIO(data)).columns
        assert all(MACHINE.fullmatch(c) for c in cols), f"{where} {name}: Parquet columns {cols}"
    for name, data in dl.of(".md").items():
        assert not re.search(OLD_NOTATION, data.decode()), f"{where} {name}"
    if svg:
        for name, data in dl.of(".svg").items():
            found = re.search(OLD_NOTATION, data.decode())
            assert not found, f"{where} {name}: {found}"
    if reports:
        for name, data in dl.of("_report.html").items():
            page = data.decode()
            assert not re.search(OLD_NOTATION, page), f"{where} {name}: {re.search(OLD_NOTATION, page)}"
            heads = re.findall(r"<th>(.*?)</th>", page)
            assert heads and not [h for h in heads if MACHINE.fullmatch(h)], f"{where} {name}: {heads}"
    return {n.rsplit(".", 1)[-1] for n in dl.files}


# page, URL query, tables at least, downloads at least: every page on the default store, drill-downs and the
# alternative views open (a check over no table would pass on anything)
CHART = {"png", "svg", "pdf", "csv", "parquet"}
DEFAULT_VIEWS = [
    ("views/winners.py", {}, 0, CHART | {"html"}),
    ("views/winners.py", {"conc": "1", "cell": "MI355X|Qwen|code"}, 2, CHART | {"html"}),
    ("views/winners.py", {"conc": "64", "metric": "p99_e2e_ms", "best": "1"}, 0, CHART | {"html"}),
    ("views/explore.py", {"pub": "1", "pos": "conditional"}, 0, CHART | {"html"}),
    ("views/tradeoffs.py", {"cell": "MI300X|Qwen|code", "lat": "p99_ttft_ms"}, 2, CHART | {"html"}),
    ("views/gpus.py", {"conc": "64"}, 1, CHART | {"html"}),
    ("views/load.py", {}, 1, CHART | {"html"}),
    ("views/load.py", {"alldepths": "1", "metric": "p99_tpot_ms"}, 1, CHART),
    ("views/traffic.py", {}, 0, set()),
    ("views/runs.py", {}, 1, {"csv", "parquet"}),
    ("views/production.py", {}, 0, set()),
    ("views/datasets.py", {}, 2, {"csv", "parquet", "html"}),
]


@pytest.mark.parametrize(("page", "query", "tables", "formats"), DEFAULT_VIEWS,
                         ids=[f"{p[6:-3]}-{i}" for i, (p, *_) in enumerate(DEFAULT_VIEWS)])
def test_every_page_on_the_default_store(page: str, query: dict, tables: int, formats: set[str],
                                         downloads: Downloads) -> None:
    at = open_page(page, query)
    assert check_page(at, f"{page} {query}") >= tables
    assert check_downloads(downloads, f"{page} {query}") >= formats


def test_traffic_tables_and_the_comparison(default_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           downloads: Downloads) -> None:
    db = tmp_path / "store.duckdb"
    shutil.copy(default_db, db)
    monkeypatch.setenv("SPECTUNE_DB", str(db))
    at = open_page("views/traffic.py", {"default": "mtp:3"})
    for name, file in (("code.csv", "azure_code.csv"), ("conv.csv", "azure_conv.csv")):
        downloads.reset()
        at.file_uploader(key="traffic.upload").set_value((name, (TRACES / file).read_bytes(), "text/csv")).run()
        assert not at.exception, [e.message for e in at.exception]
    assert check_page(at, "traffic") >= 4  # recommendations, saved traces, mix drift, changes
    recs = next(df.value for df in at.dataframe if "Gain vs default (%)" in df.value.columns)
    assert pd.api.types.is_numeric_dtype(recs["Gain vs default (%)"]) and recs["Candidate"].str.contains("·").all()
    check_downloads(downloads, "traffic")


def test_runs_and_drift_tables(runs_db: Path, monkeypatch: pytest.MonkeyPatch, downloads: Downloads) -> None:
    monkeypatch.setenv("SPECTUNE_DB", str(runs_db))
    at = open_page("views/runs.py", {"run_a": "A", "run_b": "B", "allcells": "1"})
    assert check_page(at, "runs") >= 5  # runs, imports, re-tune, winner per group, per-cell change
    check_downloads(downloads, "runs")
    assert {"md", "json", "csv", "parquet"} <= {n.rsplit(".", 1)[-1] for n in downloads.files}


def test_production_tables(prod_db: Path, monkeypatch: pytest.MonkeyPatch, downloads: Downloads) -> None:
    monkeypatch.setenv("SPECTUNE_DB", str(prod_db))
    at = open_page("views/production.py", {"seg": "acme/code", "win": "300"})
    assert check_page(at, "production") >= 2  # recommendations, restarts and config changes
    check_downloads(downloads, "production")
    at = open_page("views/production.py", {"seg": "globex/chat", "pos": "1"})
    check_page(at, "production A/B")


def test_every_table_and_csv_goes_through_the_one_helper() -> None:
    """Pages draw tables only through dashboard.widgets.table and write CSV only through dashboard.export, so a
    page not opened above cannot show machine names either."""
    direct_table = re.compile(r"\bst\.(?:dataframe|table|data_editor)\(|\b(?!st\b)\w+\.(?:dataframe|data_editor)\(")
    direct_csv = re.compile(r"\.write_csv\(|text/csv")
    found = []
    for path in sorted((REPO / "dashboard").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if direct_table.search(line) and rel != "dashboard/widgets.py":
                found.append(f"{rel}:{n}: {line.strip()}")
            if direct_csv.search(line) and rel != "dashboard/export.py":
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, found
    assert direct_table.search("st.dataframe(x)") and direct_table.search("col.data_editor(x)")
    assert not direct_table.search("pdf.table(st_, head, rows)")
