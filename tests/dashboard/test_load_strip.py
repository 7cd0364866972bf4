"""The landing page's across-load chart on screen (load_strip.spec, plain dicts) is the Altair chart the
exports and reports draw (load_strip.chart), dict for dict, and valid Vega-Lite."""

from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import pytest

from analysis import frames, winners
from dashboard import charts, load_strip
from ingest import store

VIEWS = [(["Gemma", "Kimi", "MiniMax", "Qwen"], ["chat", "code", "reasoning"]), (["Qwen"], ["code", "chat"])]


@pytest.mark.parametrize("metric", ["output_throughput", "p99_e2e_ms", "goodput"])
def test_equals_the_altair_chart(default_db: Path, metric: str) -> None:
    with store.session(default_db, read_only=True) as con:
        docs = [winners.winners(con, metric, frames.Filters(), model_error=e) for e in (True, False)]
    verdicts = set()
    for doc in docs:
        for gpu in ["MI300X", "MI355X", "absent"]:
            for fams, wls in VIEWS:
                altair = charts.finish(load_strip.chart(doc, gpu, fams, wls, metric)).to_dict(validate=False)
                fast = load_strip.spec(doc, gpu, fams, wls, metric)
                assert json.dumps(fast, sort_keys=True) == json.dumps(altair, sort_keys=True), (metric, gpu, fams)
        verdicts |= {c["verdict"] for c in doc["cells"]}
    assert len(verdicts) >= 2  # more than one shade drawn


def test_is_valid_vega_lite(default_db: Path) -> None:
    with store.session(default_db, read_only=True) as con:
        doc = winners.winners(con, "output_throughput", frames.Filters())
    spec = load_strip.spec(doc, "MI300X", *VIEWS[0], "throughput")
    alt.TopLevelFacetSpec.validate(spec)
    assert len(next(iter(spec["datasets"].values()))) == 12 * 3  # family × workload × load
