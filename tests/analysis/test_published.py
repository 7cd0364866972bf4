"""The published reference table and its overlay rows (same metric meaning, integer depth)."""

from __future__ import annotations

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
