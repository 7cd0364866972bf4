"""Dashboard tests run the real Streamlit app (AppTest) on a real store built from the embedded data."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, cli

APP = REPO / "dashboard" / "app.py"
RUNS_SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"


@pytest.fixture(scope="session", autouse=True)
def app_db(default_db: Path):
    """Point the app at the session's store (never data/): the dashboard reads SPECTUNE_DB."""
    old = os.environ.get("SPECTUNE_DB")
    os.environ["SPECTUNE_DB"] = str(default_db)
    yield default_db
    if old is None:
        os.environ.pop("SPECTUNE_DB", None)
    else:
        os.environ["SPECTUNE_DB"] = old


@pytest.fixture(scope="session")
def runs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two identical simulated runs (A, A2), one with a shifted traffic mix (B) and an imported vLLM bench file:
    a store where the Runs & drift page has something to compare."""
    from tests.analysis.test_compare import MATRIX, write_shifted_run

    root = tmp_path_factory.mktemp("runs_page")
    matrix, db = root / "drift.toml", root / "runs.duckdb"
    matrix.write_text(MATRIX)
    for run_id in ("A", "A2"):
        res = cli("runner", "run", "--matrix", str(matrix), "--db", str(db), "--run-id", run_id, "--json")
        assert res.returncode == 0, res.stderr
    write_shifted_run(db, matrix, "B")
    res = cli("ingest", "results", str(RUNS_SAMPLE), "--db", str(db))
    assert res.returncode == 0, res.stderr
    return db


@pytest.fixture(scope="session")
def prod_db(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default data plus constructed watch samples: a segment whose acceptance drifted enough to change its
    winner (with a restart and a config change), and an A/B segment served by two targets."""
    from ingest import sql, store
    from ingest.watch import land
    from tests.analysis.production import fleet

    db = tmp_path_factory.mktemp("prod_page") / "s.duckdb"
    shutil.copy(default_db, db)
    fleet.without_model_error(db)  # a measured-like benchmark: on the simulated one nothing wins clearly
    with store.session(db, read_only=True) as con:
        bench = sql.one(con, "SELECT avg(acceptance_rate) FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                             "AND workload = 'code' AND method = 'dspark' AND depth = 6")[0]
    low = fleet.target("kimi-1", "acme/code", "Kimi", "dspark", 6, "MI355X", "code")
    fleet.write(db, fleet.series(low, bench * 0.3, n=60, restart_at=30, seed=4))
    a = fleet.target("ab-a", "globex/chat", "Kimi", "mtp", 2, "MI355X", "chat")
    b = fleet.target("ab-b", "globex/chat", "Kimi", "mtp", 4, "MI355X", "chat")
    fleet.write(db, fleet.series(a, 0.7, n=40, tpot_s=0.03, seed=1) + fleet.series(b, 0.6, n=40, tpot_s=0.02, seed=2))
    land.write_to(db, land.Batch(events=[land.Event("kimi-1", fleet.T0 + 20 * 15, "config_change",
                                                    "depth 5 → 6")]))
    return db


def open_page(page: str = "views/winners.py", query: dict[str, str | list[str]] | None = None) -> AppTest:
    """The app with ``query`` in the URL, switched to ``page``, after one run."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if page != "views/winners.py":  # open the page itself, as a link to it would
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def chart_specs(at: AppTest) -> list[dict]:
    """Every chart on the page as {"spec": Vega-Lite spec, "rows": rows of all its datasets}."""
    import json

    import polars as pl
    import pyarrow as pa

    out = []
    for el in at.get("vega_lite_chart"):
        rows = []
        for ds in el.proto.datasets:
            rows += pl.from_arrow(pa.ipc.open_stream(ds.data.data).read_all()).to_dicts()
        out.append({"spec": json.loads(el.proto.spec), "rows": rows})
    return out


def plotly_figures(at: AppTest) -> list[dict]:
    """Every interactive (Plotly) chart on the page as {"figure": the figure's JSON (data + layout), "selection":
    the selection modes it offers, "key": its widget key}."""
    import json

    return [{"figure": json.loads(el.proto.spec), "selection": list(el.proto.selection_mode), "id": el.proto.id}
            for el in at.get("plotly_chart")]


def figure_title(fig: dict) -> str:
    t = fig["figure"]["layout"].get("title") or {}
    return t.get("text", "") if isinstance(t, dict) else str(t)


def latency_boxes(fig: dict) -> list[dict]:
    """The drill-down latency figure's boxes: candidate, requests counted (n), outliers, and its quartiles."""
    return [{"candidate": t["name"], "n": t["customdata"][0][0], "n_outliers": t["customdata"][0][1],
             "q1": t["q1"][0], "median": t["median"][0], "q3": t["q3"][0]}
            for t in fig["figure"]["data"] if t["type"] == "box"]


def latency_figure(at: AppTest) -> dict:
    """The one drill-down latency distribution (Plotly) on the page."""
    (fig,) = [f for f in plotly_figures(at) if "distribution" in figure_title(f)]
    return fig


def plain(source: str) -> str:
    """A Markdown element's source without its backslash escapes (dashboard.md escapes data): the characters a
    reader sees, for assertions on wording."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", source).replace("\u2060", "")  # and md.JOINER
