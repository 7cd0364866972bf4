"""The published reference table and its overlay rows (same metric meaning, integer depth)."""

from __future__ import annotations

import polars as pl

from analysis import published


def test_table_keeps_every_row_with_its_source():
    t = published.table()
    assert t.height == 269 and t["source_url"].null_count() == 0
    assert t["line"][0] == 2


def test_overlay_rows_are_placeable_and_filtered():
    o = published.overlay("acceptance_length", families=("Qwen",))
    assert o.height > 0 and set(o["family"]) == {"Qwen"}
    assert o["depth"].null_count() == 0 and o["value"].null_count() == 0
    assert set(o["workload"]) <= {"code", "chat", "reasoning"}
    assert published.overlay("p99_e2e_ms").height == 0  # no published metric means the same thing
    tput = published.overlay("output_throughput")
    assert set(tput["unit"]) <= {"tok/s"}


def test_published_points_far_outside_the_measured_range_are_left_out_not_rescaling():
    measured = pl.DataFrame({"value": [200.0, 300.0], "ci_low": [180.0, 290.0], "ci_high": [220.0, 310.0]})
    points = pl.DataFrame({"method": ["eagle3", "mtp", "dflash"], "depth": [3, 1, 2], "value": [250.0, 4000.0, 340.0]})
    drawn, left_out, span = published.split_by_range(points, measured)
    assert span == (180.0, 310.0)
    assert drawn["value"].to_list() == [250.0, 340.0]  # 340 is within 25 % of the span above the top
    assert left_out["value"].to_list() == [4000.0]
    drawn, left_out, span = published.split_by_range(points, measured.clear())
    assert drawn.height == 3 and left_out.height == 0 and span is None
