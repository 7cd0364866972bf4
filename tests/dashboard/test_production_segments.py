"""The Production page's acceptance by segment inside one server (AppTest, real store): a request log imported with
the real importer into a copy of the default store — two tenants of one deployment, one whose acceptance fell far
below the benchmark — shows each tenant's acceptance from its requests with intervals, the changed winner, the
split by another label from the URL, both sections beside the watch's, and hostile label values as text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingest import sql, store
from tests.analysis.production import fleet, requestlogs
from tests.conftest import cli
from tests.dashboard.conftest import chart_specs, open_page, plain
from tests.dashboard.test_markdown_labels import FAMILY, IMAGE, LINK, check_inert

PAGE = "views/production.py"


def _import(db: Path, log: Path, target: str = "kimi-prod", method: str = "dspark") -> None:
    res = cli("ingest", "requests", str(log), "--target", target, "--family", "Kimi", "--method", method,
              "--gpu", "MI355X", "--workload", "code", "--db", str(db))
    assert res.returncode == 0, res.stderr


def _bench(db: Path) -> float:
    with store.session(db, read_only=True) as con:
        return sql.one(con, "SELECT avg(acceptance_rate) FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                            "AND workload = 'code' AND method = 'dspark' AND depth = 6")[0]


@pytest.fixture(scope="module")
def req_db(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("req_page")
    db = tmp / "s.duckdb"
    shutil.copy(default_db, db)
    fleet.without_model_error(db)
    bench = _bench(db)
    rows = (requestlogs.lines({"tenant": "acme", "route": "/v1/chat"}, bench, 6, seed=1)
            + requestlogs.lines({"tenant": "globex", "route": "/v1/completions"}, bench * 0.3, 6, seed=2))
    _import(db, requestlogs.write(tmp / "gw.jsonl", rows))
    return db


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch):
    return lambda db: monkeypatch.setenv("SPECTUNE_DB", str(db))


def _segment_chart(at) -> list[dict]:
    (chart,) = [c for c in chart_specs(at)
                if any("band_low" in r and "segment" in r and "window" not in r for r in c["rows"])]
    return [r for r in chart["rows"] if "segment" in r]


def test_tenants_of_one_server_show_their_acceptance_intervals_and_the_changed_winner(req_db, use) -> None:
    use(req_db)
    at = open_page(PAGE)
    assert any("Acceptance by tenant inside one server" in h.value for h in at.subheader)
    assert any("globex" in plain(e.value) and "is now the pick" in plain(e.value) for e in at.error)
    assert any("acme" in plain(s.value) and "no change" in plain(s.value) for s in at.success)
    rows = {r["segment"]: r for r in _segment_chart(at)}
    assert set(rows) == {"tenant=acme", "tenant=globex"}
    for r in rows.values():
        assert r["ci_low"] < r["acceptance_rate"] < r["ci_high"] and r["band_low"] <= r["band_high"]
    assert rows["tenant=globex"]["ci_high"] < rows["tenant=globex"]["band_low"] <= rows["tenant=acme"]["ci_high"]
    table = next(df.value for df in at.dataframe if "Segment" in df.value.columns)
    assert table["Segment"].to_list() == ["tenant=acme", "tenant=globex"]
    assert any(any("window" in r and "segment" in r for r in c["rows"]) for c in chart_specs(at))  # over time
    by_route = open_page(PAGE, {"by": "route"})
    assert {r["segment"] for r in _segment_chart(by_route)} == {"route=/v1/chat", "route=/v1/completions"}
    assert dict(by_route.query_params).get("by") in (["route"], "route")
    bad = open_page(PAGE, {"by": "<nope>"})
    assert bad.warning and {r["segment"] for r in _segment_chart(bad)} == {"tenant=acme", "tenant=globex"}


def test_request_segments_sit_beside_the_watch_segments(prod_db: Path, tmp_path: Path, use) -> None:
    db = tmp_path / "both.duckdb"
    shutil.copy(prod_db, db)
    rows = requestlogs.lines({"tenant": "initech"}, _bench(db), 6, seed=5)
    _import(db, requestlogs.write(tmp_path / "gw.jsonl", rows))
    use(db)
    at = open_page(PAGE, {"seg": "acme/code", "win": "300"})
    # the watch section is unchanged: its alert ("the clear pick", or "clearly beaten" when the leaders tie)
    assert any("is now the clear pick" in plain(e.value) or "is clearly beaten" in plain(e.value) for e in at.error)
    assert {r["segment"] for r in _segment_chart(at)} == {"tenant=initech"}


def test_hostile_label_values_and_flags_render_as_text(default_db: Path, tmp_path: Path, use) -> None:
    db = tmp_path / "hostile.duckdb"
    shutil.copy(default_db, db)
    rows = (requestlogs.lines({"tenant": LINK, IMAGE: FAMILY}, 0.5, 4, n=8, seed=1)
            + requestlogs.lines({"tenant": IMAGE}, 0.2, 4, n=8, seed=2))
    _import(db, requestlogs.write(tmp_path / "gw.jsonl", rows), target=FAMILY, method=LINK)
    use(db)
    for query in ({}, {"by": IMAGE}):
        at = open_page(PAGE, query)
        text = check_inert(at)
        assert LINK in text and FAMILY in text
