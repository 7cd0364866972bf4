"""The Winners page in the real Streamlit app (AppTest) on the embedded default store."""

from __future__ import annotations

import json

import pytest

from tests.dashboard.conftest import chart_specs, figure_title, latency_boxes, latency_figure, open_page, plain

HOSTILE = ["'; DROP TABLE cells; --", "\" OR 1=1 --", "Ω≈ç√∫😀", "x" * 10_000, "<script>alert(1)</script>",
           "=HYPERLINK(\"http://evil\")", "../../etc/passwd", "1e309", "-5", "NaN"]


def specs(at) -> list[dict]:
    return chart_specs(at)


def title(chart: dict) -> str:
    t = chart["spec"].get("title", "")
    return t.get("text", "") if isinstance(t, dict) else str(t)


def heatmap_titles(at) -> list[str]:
    return [title(c) for c in specs(at) if "winner by" in title(c)]


def across_load(at) -> list[dict]:
    return [c for c in specs(at) if "sensible pick at every load" in title(c)]


def heatmap_labels(chart: dict) -> set[str]:
    return {r["label"] for r in chart["rows"] if r.get("label")}


def test_renders_one_heatmap_per_gpu_with_the_simulated_banner():
    at = open_page(query={"conc": "1"})
    titles = heatmap_titles(at)
    assert [t.split(" · ")[0] for t in titles] == ["MI300X", "MI355X"]
    assert any("Simulated data on screen" in plain(w.value) for w in at.warning)
    labels = heatmap_labels(specs(at)[0])
    assert len(labels) >= 2 and all("\npick " in lab for lab in labels)  # verdict, then the pick (p …)
    # the colour scale is the app's fixed palette, not Vega's default
    layers = specs(at)[0]["spec"]["layer"]
    rng = next(s for s in layers if "color" in s.get("encoding", {}))["encoding"]["color"]["scale"]
    assert rng["range"][rng["domain"].index("dflash")] == "#009E73"


def test_metric_and_concurrency_change_the_chart_spec_and_the_url():
    at = open_page(query={"conc": "1"})
    before = specs(at)[0]
    at.sidebar.selectbox(key="winners.metric").set_value("p99_tpot_ms").run()
    after = specs(at)[0]
    assert after != before and "p99 TPOT" in title(after)
    at.sidebar.selectbox(key="winners.conc").set_value(64).run()
    assert "concurrency 64" in title(specs(at)[0])
    assert at.query_params["metric"] == ["p99_tpot_ms"] or at.query_params["metric"] == "p99_tpot_ms"


def test_gpu_and_family_filters_shrink_the_view():
    at = open_page(query={"conc": "16"})
    at.sidebar.multiselect(key="winners.gpu").set_value(["MI355X"]).run()
    assert [t.split(" · ")[0] for t in heatmap_titles(at)] == ["MI355X"]
    at.sidebar.multiselect(key="winners.fam").set_value(["Qwen", "Kimi"]).run()
    fams = {r["family"] for r in specs(at)[0]["rows"]}
    assert fams == {"Qwen", "Kimi"}


def test_ties_are_drawn_and_named():
    at = open_page(query={"conc": "1"})
    labels = set().union(*(heatmap_labels(s) for s in specs(at)[:2]))
    ties = [lab for lab in labels if lab.startswith(("tie\n", "equivalent\n"))]
    assert ties and all("\npick " in t and " (p " in t for t in ties)  # the verdict, the pick and its chance
    assert any("without a clear winner" in e.label and "sensible pick" in e.label for e in at.expander)
    tie_lines = [plain(m.value) for m in at.markdown if "— pick " in plain(m.value)]
    assert tie_lines and all(" and " in m or "," in m for m in tie_lines)


def test_query_params_restore_the_view():
    at = open_page(query={"metric": "acceptance_length", "conc": "16", "gpu": "MI300X", "wl": ["code", "chat"],
                          "depth": "3-4"})
    assert at.sidebar.selectbox(key="winners.metric").value == "acceptance_length"
    assert at.sidebar.selectbox(key="winners.conc").value == 16
    assert at.sidebar.select_slider(key="winners.depth").value == (3, 4)
    (chart,) = specs(at)
    assert "Acceptance length" in title(chart) and "concurrency 16" in title(chart)
    rows = chart["rows"]
    assert {r["workload"] for r in rows} == {"code", "chat"}
    assert {r["depth"] for r in rows} <= {3, 4}
    assert not at.warning or all("not valid" not in plain(w.value) for w in at.warning)


@pytest.mark.parametrize("bad", HOSTILE)
def test_bad_query_params_warn_and_fall_back(bad: str):
    at = open_page(query={"metric": bad, "conc": bad, "gpu": [bad, "MI300X"], "depth": bad, "cell": bad,
                          "slo_ttft": bad})
    warned = [plain(w.value) for w in at.warning if "not valid" in plain(w.value)]
    assert warned, "a bad link must be reported"
    # never echoed raw: no markup, quotes, SQL or formula characters, no unicode, bounded length
    assert not set(warned[0]) & set("<>;'\"=😀Ω≈") and len(warned[0]) < 1000
    assert at.sidebar.selectbox(key="winners.metric").value == "output_throughput"
    assert len(across_load(at)) == 2  # defaults: every load, both GPUs


def test_drilldown_from_the_selectbox_and_from_the_url():
    at = open_page(query={"conc": "1"})
    n = len(specs(at))
    at.selectbox(key="winners.cell").set_value("MI355X|Qwen|code|Qwen/Qwen3.5-122B-A10B|").run()
    assert not at.exception
    drill = specs(at)[n:]
    assert len(drill) == 3  # candidates, cumulative and conditional positions (Altair) …
    lat = latency_figure(at)  # … and the per-request latency distribution (Plotly: zoom into its tail)
    assert figure_title(lat) == "Request E2E distribution"
    boxes = latency_boxes(lat)
    assert boxes[0]["candidate"] == "none" or any(b["candidate"] == "none" for b in boxes)
    assert all(b["n"] > 0 and b["q1"] <= b["median"] <= b["q3"] for b in boxes)
    # simulated numbers say so on the figure itself, as on an exported one
    assert "SIMULATED" in lat["figure"]["layout"]["title"]["subtitle"]["text"]
    cand_rows = drill[0]["rows"]
    assert {r["method"] for r in cand_rows} >= {"none", "mtp", "eagle3", "dflash", "dspark", "ngram"}
    # every candidate of the default data has replicates, so every one has an interval, around its point
    assert all(r["ci_low"] is not None and r["ci_high"] is not None for r in cand_rows)
    assert all(r["ci_low"] < r["value"] < r["ci_high"] for r in cand_rows)
    assert any("MI355X · Qwen3.5-122B-A10B · code · c=1" in plain(m.value).replace("\\", "") for m in at.markdown)
    command = at.code[0].value  # the winner as a full deploy command
    assert command.startswith("vllm serve Qwen/") and "--tensor-parallel-size" in command
    assert any("Depth schedule per batch size" in plain(m.value) for m in at.markdown)
    # an older link (GPU|family|workload) still opens the one model's group it names
    restored = open_page(query={"conc": "1", "cell": "MI355X|Qwen|code", "dlat": "ttft_ms"})
    assert len(specs(restored)) == n + 3
    assert figure_title(latency_figure(restored)) == "Request TTFT distribution"


def test_goodput_shows_slo_inputs_that_change_the_chart():
    at = open_page(query={"metric": "goodput", "conc": "64"})
    before = heatmap_labels(specs(at)[0])
    at.sidebar.number_input(key="winners.slo_tpot").set_value(8.0).run()
    after = heatmap_labels(specs(at)[0])
    assert before != after


def test_export_and_report_buttons_are_labelled_by_format():
    at = open_page(query={"conc": "1"})
    labels = [b.label for b in at.get("download_button")]
    for fmt in ("PNG", "SVG", "PDF", "CSV", "Parquet"):
        assert labels.count(fmt) == 2  # one row per GPU heatmap
    assert {"HTML report", "PDF report"} <= set(labels)


def test_a_winner_at_the_edge_of_the_depth_grid_is_labelled_and_explained(default_db):
    """The heatmap labels exactly the cells analysis flags (the page adds no logic), and says why in the
    tooltip; the key under the title explains the label."""
    from analysis.frames import Filters
    from analysis.winners import winners
    from dashboard.charts import EDGE_LABEL
    from ingest import store

    seen = 0
    for conc in (1, 16, 64):
        with store.connect(default_db, read_only=True) as con:
            doc = winners(con, "output_throughput", Filters(concurrency=(conc,)))
        flagged = {(c["gpu"], c["family"], c["workload"]): c["grid_edge"]["text"] for c in doc["cells"]
                   if c["at_grid_edge"]}
        at = open_page(query={"conc": str(conc)})
        charts_ = [s for s in specs(at) if "winner by" in title(s)]
        rows = {(r["gpu"], r["family"], r["workload"]): r for ch in charts_ for r in ch["rows"] if r.get("label")}
        labelled = {k for k, r in rows.items() if EDGE_LABEL in r["label"]}
        assert labelled == set(flagged)
        assert all(rows[k]["grid_edge"] == text for k, text in flagged.items())
        if flagged:
            seen += 1
            spec = json.dumps(next(ch["spec"] for ch in charts_ if any(
                (r.get("gpu"), r.get("family"), r.get("workload")) in flagged for r in ch["rows"])))
            assert '"title": "depth grid"' in spec and EDGE_LABEL in spec  # tooltip field and the key's line
            edge = f"{len(flagged)} cell(s) whose best point estimate is at the edge of the depth grid"
            assert any(edge in e.label for e in at.expander)
        assert all(r["whole_window"] for r in rows.values())  # the whole-window figure in the tooltip
    assert seen, "the default data has winners at the edge of its depth grid"


def test_landing_shows_every_load_at_once_with_the_clis_summary(default_db):
    """Without any interaction: one across-load chart per GPU holding every measured load, and the summary
    sentence is the CLI's (``python -m analysis winners --json`` over all loads, ``summary.text``) for the simulated
    part it sits above (the published rows have their own table and sentence)."""
    from tests.conftest import cli

    at = open_page()
    charts_ = across_load(at)
    assert [title(c).split(" · ")[0] for c in charts_] == ["MI300X", "MI355X"]
    doc = json.loads(cli("analysis", "winners", "--db", str(default_db), "--backend", "sim", "--json").stdout)
    loads = sorted({c["concurrency"] for c in doc["cells"]})
    for ch in charts_:
        gpu = title(ch).split(" · ")[0]
        assert sorted({r["concurrency"] for r in ch["rows"]}) == loads
        want = {(c["family"], c["workload"], c["concurrency"]): c["pick"]["label"] for c in doc["cells"]
                if c["gpu"] == gpu}
        assert {(r["family"], r["workload"], r["concurrency"]): r["pick"] for r in ch["rows"]} == want
    # the plain answer first: the published figures' answer, then the simulated part's (the CLI's over --backend sim)
    [answer] = [plain(i.value) for i in at.info]
    assert answer.startswith("On the published figures") and answer.endswith(" " + doc["summary"]["answer"])
    assert any(plain(c.value) == doc["summary"]["text"] for c in at.caption)  # then the figures
    # the single-load view is one click away
    at.button(key="winners.open.16").click().run()
    assert [t.split(" · ")[0] for t in heatmap_titles(at)] == ["MI300X", "MI355X"]
    assert "concurrency 16" in heatmap_titles(at)[0]
    assert at.query_params["conc"] in (["16"], "16")


def test_margin_lives_in_the_sidebar_and_the_url_and_changes_the_picks():
    at = open_page(query={"margin": "40"})
    assert at.sidebar.number_input(key="winners.margin").value == 40.0
    wide = {(r["family"], r["workload"], r["concurrency"]): r["pick"] for r in across_load(at)[0]["rows"]}
    assert "40 %" in plain(at.info[0].value) or "within 40" in " ".join(m.value for m in at.markdown)
    at.sidebar.number_input(key="winners.margin").set_value(0.0).run()
    narrow = {(r["family"], r["workload"], r["concurrency"]): r["pick"] for r in across_load(at)[0]["rows"]}
    assert wide != narrow
    assert at.query_params["margin"] in (["0.0"], "0.0")


@pytest.mark.parametrize("query", [{}, {"conc": "64", "metric": "p99_e2e_ms"}])
def test_no_old_notation_in_specs_or_exports(query):
    """One notation (`dflash·5`, `none`): the rendered specs, tie lines and CSV exports never say `dflash:5`
    or `none:0`, and CSV headers are human titles."""
    import io
    import re

    import polars as pl

    from analysis.labels import OLD_NOTATION
    from dashboard import export

    at = open_page(query=query)
    blob = json.dumps(specs(at), ensure_ascii=False) + "\n".join(m.value for m in at.markdown)
    assert not re.search(OLD_NOTATION, blob), re.search(OLD_NOTATION, blob)
    assert "·" in blob
    frame = pl.DataFrame([r for r in specs(at)[0]["rows"]]).drop(["shade", "slot", "text_color", "lines"],
                                                                 strict=False)
    csv = export.csv_bytes(frame).decode()
    header = csv.splitlines()[0]
    assert not re.search(OLD_NOTATION, csv)
    assert "_" not in header and "Model family" in header
    assert pl.read_csv(io.BytesIO(csv.encode())).height == frame.height


def _published_table(at):
    return next(df.value for df in at.dataframe if "Best (point estimate)" in df.value.columns)


def test_landing_page_shows_the_published_winners_with_no_interaction():
    """Opened as is (no click, no URL): the post's models, one row per model × dataset with the best method on
    its own figures, the source named, "load not stated"; the simulated banner is below, on the simulated part."""
    import csv

    from tests.conftest import REPO

    at = open_page()
    table = _published_table(at)
    with open(REPO / "data" / "published" / "vllm-amd-2026-08" / "cells.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    models = {r["model"].rsplit("/", 1)[-1] for r in rows}
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for r in rows:
        key = (r["model"].rsplit("/", 1)[-1], r["dataset"])
        if key not in best or float(r["output_tok_s"]) > best[key][0]:
            best[key] = (float(r["output_tok_s"]), f"{r['method']}·{r['depth']}")
    shown = {(m, d): b for m, d, b in zip(table["Model"], table["Dataset"], table["Best (point estimate)"],
                                          strict=True)}
    assert set(table["Model"]) == models and len(shown) == 28
    assert shown == {k: v[1] for k, v in best.items()}
    assert set(table["Load"]) == {"load not stated"}
    url = "https://vllm.ai/blog/2026-08-23-speculative-decoding-amd-gpus"
    assert set(table["Source"]) == {url}
    assert any(url in plain(m.value) and "load not stated" in plain(m.value) for m in at.markdown)
    # the banner is on the page (simulated loads below) but the published section comes first, outside it
    headers = [h.value for h in at.subheader]
    assert headers[:2] == ["Published results: the best method per model × dataset", "Simulated loads"]
    assert any("Simulated data on screen" in plain(w.value) for w in at.warning)
    assert not any("not stated" in str(r.get("concurrency")) for c in across_load(at) for r in c["rows"])


def test_heatmap_rows_name_the_model():
    at = open_page(query={"conc": "1"})
    rows = {r["row"] for r in specs(at)[0]["rows"] if r.get("row")}
    y = next(s for s in specs(at)[0]["spec"]["layer"] if "y" in s.get("encoding", {}))["encoding"]["y"]
    assert y["field"] == "row" and set(y["sort"]) == rows
    assert rows and all("/" not in r for r in rows)  # the model's own name, without its organisation
    models = {r["model"].rsplit("/", 1)[-1] for r in specs(at)[0]["rows"]}
    assert rows == models  # simulated cells have no dataset: one row per model
