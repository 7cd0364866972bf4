"""Where a simulated number came from (analysis/model_provenance.py): fitted / borrowed / prior, the shape,
extrapolation beyond measured depths, and the draft-cost constants that are priors."""

from __future__ import annotations

from analysis import calibration, model_provenance


def test_fitted_cell_names_its_rows_and_sources():
    # gemma-4-31B-it's DSpark rows in vLLM's AMD post: the reference table sets the level (its file named)
    p = model_provenance.provenance("dspark", "Gemma", "code", 5)
    acc = p["acceptance"]
    assert acc["kind"] == "fitted" and acc["rows"] >= 1
    assert acc["sources"] == ["https://vllm.ai/blog/2026-08-23-speculative-decoding-amd-gpus"]
    assert acc["files"] == ["data/published/vllm-amd-2026-08/cells.csv"] and "gemma-4-31B-it" in acc["how"]
    assert p["shape"]["kind"] == "fitted" and not p["extrapolated"]
    assert "methods.dspark.draft.serial_head_ms" in p["draft_cost_priors"]
    assert "fitted from" in p["summary"]


def test_large_moe_never_takes_a_small_dense_models_alpha_as_its_own():
    # only the dense Qwen3-8B ran DSpark: the 122B MoE borrows it as its family's other model and says so
    p = model_provenance.provenance("dspark", "Qwen", "code", 4)
    assert p["acceptance"]["kind"] == "borrowed" and "the family's other model(s) Qwen3-8B" in p["acceptance"]["how"]
    assert "borrowed" in p["summary"] and "Qwen3-8B" in p["summary"]
    dense = calibration.alpha_source("dspark", "Qwen", "code", moe=False)
    assert dense.kind == "fitted"  # the dense relative does have its own rows
    own = calibration.alpha_source("mtp", "Qwen", "code")  # the 122B MoE's own MTP rows in the post
    assert own.kind == "fitted" and {r.model for r in own.rows} == {"Qwen/Qwen3.5-122B-A10B"}


def test_prior_and_extrapolated_cells_say_so():
    p = model_provenance.provenance("ngram", "Kimi", "chat", 3)
    assert p["acceptance"]["kind"] == "prior" and p["shape"]["kind"] == "prior"
    assert p["extrapolated"] and p["measured_depths"] == []
    deep = model_provenance.provenance("mtp", "Kimi", "code", 8)
    assert deep["extrapolated"] and max(deep["measured_depths"]) < 8
    assert model_provenance.provenance("eagle3", "Kimi", "code", 3)["extrapolated"] is False


def test_measured_rows_are_measured():
    row = {"backend": "vllm", "run_id": "r1", "method": "eagle3", "family": "Kimi", "workload": "code", "depth": 3}
    assert model_provenance.for_row(row)["kind"] == "measured"
    assert model_provenance.for_row({**row, "backend": "sim"})["kind"] == "modelled"


def test_winners_and_curve_json_carry_provenance(default_db):
    from analysis import winners
    from analysis.curves import curve
    from ingest import store

    with store.session(default_db, read_only=True) as con:
        doc = winners.winners(con, "output_throughput")
        cur = curve(con, "Kimi", "dflash", "code", "MI355X", 1)  # Kimi-K2.5's DFlash rows in the post
    spec = [c for c in doc["cells"] if c["winner"]["method"] != "none" and c["backend"] == "sim"]
    assert spec and all(c["provenance"]["kind"] == "modelled" and c["provenance"]["acceptance"] for c in spec)
    published = [c for c in doc["cells"] if c["backend"] == "import"]  # the shipped published cells: measured
    assert published and all(c["provenance"]["kind"] != "modelled" and c["source_url"] for c in published)
    assert cur["points"] and all(p["provenance"]["acceptance"]["kind"] == "fitted" for p in cur["points"])


def test_heatmap_tooltip_and_exported_rows_show_the_summary(default_db):
    from analysis import winners
    from dashboard import charts
    from ingest import store

    with store.session(default_db, read_only=True) as con:
        doc = winners.winners(con, "output_throughput")
    rows = charts.winner_rows(doc)
    assert "provenance" in rows.columns and rows["provenance"].str.len_chars().min() > 10
    spec = charts.winner_heatmap(doc, doc["cells"][0]["gpu"], ["Gemma", "Qwen", "Kimi", "MiniMax"],
                                 ["code", "chat", "reasoning"], "output throughput").to_dict()
    assert "provenance" in str(spec)
