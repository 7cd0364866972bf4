"""Every other page in the real app: renders, a key interaction changes the chart spec, the URL restores the
view, bad parameters warn instead of failing, and the simulated banner shows."""

from __future__ import annotations

import pytest

from tests.dashboard.conftest import chart_specs, open_page

PAGES = ["views/explore.py", "views/tradeoffs.py", "views/gpus.py", "views/load.py", "views/datasets.py"]


def banner(at) -> bool:
    return any("Simulated data on screen" in w.value for w in at.warning)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_with_banner_and_survives_bad_params(page: str):
    at = open_page(page)
    assert banner(at)
    bad = open_page(page, query={"gpu": "'; DROP TABLE runs; --", "metric": "<b>x</b>", "conc": "1e9",
                                 "fam": ["Qwen", "Nope"], "a": "??", "pfam": "=cmd|' /C calc'!A0"})
    assert any("not valid" in w.value for w in bad.warning)


def test_explore_metric_and_overlay_change_the_spec():
    at = open_page("views/explore.py", query={"metric": "acceptance_length", "fam": "Qwen"})
    curves = chart_specs(at)[0]
    assert {r["family"] for r in curves["rows"]} == {"Qwen"}
    at.sidebar.toggle(key="explore.pub").set_value(True).run()
    with_pub = chart_specs(at)[0]
    assert any(r.get("kind") == "published" for r in with_pub["rows"])
    at.sidebar.selectbox(key="explore.metric").set_value("p99_e2e_ms").run()
    assert chart_specs(at)[0]["rows"] != with_pub["rows"]


def test_explore_restores_gpu_and_concurrency_from_the_url():
    at = open_page("views/explore.py", query={"gpu": "MI355X", "conc": "64", "meth": ["mtp", "none"]})
    rows = chart_specs(at)[0]["rows"]
    assert {r["gpu"] for r in rows} == {"MI355X"} and {r["concurrency"] for r in rows} == {64}
    assert {r["method"] for r in rows} == {"mtp", "none"}


def test_tradeoffs_front_and_goodput_heatmap_follow_the_slo():
    at = open_page("views/tradeoffs.py", query={"gpu": "MI300X", "gconc": "64"})
    scatter, heat = chart_specs(at)[:2]
    assert any(r["on_front"] for r in scatter["rows"]) and not all(r["on_front"] for r in scatter["rows"])
    at.sidebar.number_input(key="tradeoffs.slo_tpot").set_value(6.0).run()
    assert chart_specs(at)[1]["rows"] != heat["rows"]
    at.sidebar.selectbox(key="tradeoffs.lat").set_value("p99_ttft_ms").run()
    assert chart_specs(at)[0]["rows"] != scatter["rows"]


def test_gpus_page_compares_any_two_gpus():
    at = open_page("views/gpus.py", query={"a": "MI300X", "b": "MI355X", "conc": "1"})
    ratio = chart_specs(at)[0]
    assert ratio["rows"] and all(r["ratio"] > 0 for r in ratio["rows"])
    changes = at.dataframe[0].value  # human titles; the winner columns are named after the GPUs compared
    # each GPU's verdict · pick (p) as the Winners heatmap reads it, then each GPU's best point estimate
    assert list(changes.columns) == ["Model family", "Model", "Workload", "Dataset", "Concurrency",
                                     "Verdict · pick (p) on MI300X", "Verdict · pick (p) on MI355X",
                                     "Best on MI300X", "Best on MI355X", "Verdict", "Method changes?"]
    assert set(changes["Verdict"]) <= {"same", "changes", "not clear"}
    at.sidebar.selectbox(key="gpus.b").set_value("MI300X").run()
    assert any("two different GPUs" in i.value for i in at.info)


def test_load_page_speedups_and_break_even():
    at = open_page("views/load.py", query={"gpu": "MI355X", "fam": "Gemma"})
    rows = chart_specs(at)[0]["rows"]
    assert {r["family"] for r in rows} == {"Gemma"} and {r["concurrency"] for r in rows} == {1, 16, 64}
    at.sidebar.multiselect(key="load.meth").set_value(["ngram"]).run()
    assert {r["method"] for r in chart_specs(at)[0]["rows"]} == {"ngram"}
    be = at.dataframe[0].value
    assert list(be.columns) == ["GPU", "Model family", "Model", "Workload", "Dataset", "Method",
                                "Stops paying at (concurrency)"]
    assert set(be["Method"]) == {"ngram"}
    # a concurrency stays a number (sorting is numeric); empty = still pays at every measured load
    assert be["Stops paying at (concurrency)"].dtype.kind in "fi"


def _line_detail(spec: dict) -> object:
    grid = spec["spec"]["vconcat"][0] if "vconcat" in spec["spec"] else spec["spec"]  # best depths: + a strip
    line = next(layer for layer in grid["spec"]["layer"] if layer["mark"]["type"] == "line")
    return line["encoding"].get("detail")


def test_load_lines_join_a_method_across_loads_even_when_its_best_depth_changes():
    at = open_page("views/load.py", query={"gpu": "MI300X"})
    chart = chart_specs(at)[0]
    assert _line_detail(chart) is None  # one line per method: the best depth may differ between loads
    depths = {}
    for r in chart["rows"]:
        if r.get("speedup") is not None:  # a null row breaks a line where a load has no cell
            depths.setdefault((r["family"], r["workload"], r["method"]), set()).add(r["depth"])
    assert any(len(d) > 1 for d in depths.values()), "the default data has a best depth that changes with load"
    at.sidebar.toggle(key="load.alldepths").set_value(True).run()
    assert _line_detail(chart_specs(at)[0]) == {"field": "depth", "type": "ordinal"}


def test_data_page_lists_runs_and_published_links():
    at = open_page("views/datasets.py", query={"pmeth": "dspark"})
    runs, pub = at.dataframe[0].value, at.dataframe[1].value
    # the simulated run, and the two import runs of the shipped published table (cells, per-position rates)
    assert sorted(runs["Backend"]) == ["import", "import", "sim"]
    assert int(runs[runs["Backend"] == "sim"]["Requests"].iloc[0]) > 0
    assert pub["Candidate"].str.fullmatch(r"dspark·(\d+|\?)").all() and pub["Source"].str.startswith("http").all()




def test_gpus_page_states_gpus_per_server_and_the_ratio_per_gpu():
    at = open_page("views/gpus.py", query={"a": "MI300X", "b": "MI355X", "conc": "1", "fam": "Qwen"})
    assert any("Qwen 4 × MI300X vs 2 × MI355X" in c.value for c in at.caption)
    rows = chart_specs(at)[0]["rows"]
    assert all(r["label"].endswith("/GPU") and "\n" in r["label"] for r in rows)  # server, then per GPU
    assert all(abs(r["ratio_per_gpu"] - 2 * r["ratio"]) < 1e-9 for r in rows)


def test_data_page_gives_gpus_per_server_not_a_zero_gpu_count():
    runs = open_page("views/datasets.py").dataframe[0].value
    with_cells = runs[runs["Cells"] > 0]  # the per-position import run holds rates of the cells run, no cells
    assert runs["GPUs"].isna().all() and with_cells["GPUs per server"].str.contains("MI300X ×").all()


def test_explore_overlay_keeps_the_measured_scale_and_names_what_it_leaves_out():
    at = open_page("views/explore.py", query={"metric": "output_throughput", "pub": "1"})
    rows = chart_specs(at)[0]["rows"]
    measured = [v for r in rows if r.get("kind") == "measured" for v in (r["value"], r["ci_low"], r["ci_high"])
                if v is not None]
    lo, hi = min(measured), max(measured)
    drawn = [r["value"] for r in rows if r.get("kind") == "published"]
    assert all(lo - (hi - lo) <= v <= hi + (hi - lo) for v in drawn)
    assert any(c.value.startswith("Not drawn:") for c in at.caption)


def test_explore_shows_the_published_per_position_acceptance():
    """The published cells (load not stated) are one load choice away: their per-position acceptance, one facet
    row per model · dataset, with the post's own figures."""
    import csv

    from tests.conftest import REPO

    at = open_page("views/explore.py", {"gpu": "MI300X", "conc": "load not stated", "meth": "mtp"})
    charts_ = chart_specs(at)
    pos = next(c for c in charts_ if any("position" in r for r in c["rows"]))
    rows = [r for r in pos["rows"] if r.get("model") == "Qwen/Qwen3.5-122B-A10B" and r.get("dataset") == "GSM8K"
            and r.get("depth") == 7]
    with open(REPO / "data" / "published" / "vllm-amd-2026-08" / "positions.csv", newline="", encoding="utf-8") as fh:
        want = {int(r["position"]): float(r["acceptance_rate"]) for r in csv.DictReader(fh)
                if r["model"] == "Qwen/Qwen3.5-122B-A10B" and r["dataset"] == "GSM8K" and r["method"] == "mtp"
                and r["depth"] == "7"}
    assert len(want) == 7 and {r["position"]: r["acceptance"] for r in rows} == want
    assert {r["row"] for r in rows} == {"Qwen3.5-122B-A10B · GSM8K"}
    assert pos["spec"]["facet"]["row"]["field"] == "row"
