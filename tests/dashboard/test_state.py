"""URL parameter parsing: allow-listed values only, hostile strings rejected, round trips stable."""

from __future__ import annotations

import pytest

from dashboard.state import Param, parse, serialise

METRIC = Param("metric", "one", "output_throughput", ("output_throughput", "p99_e2e_ms"))
CONC = Param("conc", "one", 1, (1, 16, 64))
FAMS = Param("fam", "many", [], ("Gemma", "Qwen"))
DEPTH = Param("depth", "range", (2, 5), (2, 3, 4, 5))
SLO = Param("slo", "float", 50.0, lo=0.1, hi=60_000.0)
FLAG = Param("pub", "bool", False)


def test_valid_values_parse_to_their_typed_option():
    assert parse(METRIC, ["p99_e2e_ms"]) == "p99_e2e_ms"
    assert parse(CONC, ["16"]) == 16 and isinstance(parse(CONC, ["16"]), int)
    assert parse(FAMS, ["Qwen", "Gemma", "Qwen"]) == ["Qwen", "Gemma"]
    assert parse(DEPTH, ["3-4"]) == (3, 4)
    assert parse(SLO, ["12.5"]) == 12.5
    assert parse(FLAG, ["1"]) is True
    assert parse(CONC, []) == 1  # absent → default


@pytest.mark.parametrize("p,raw", [
    (METRIC, ["p99_e2e_ms; DROP TABLE cells"]), (METRIC, ["' OR 1=1 --"]), (CONC, ["16.0"]), (CONC, ["0x10"]),
    (FAMS, ["Qwen", "Llama"]), (DEPTH, ["5-3"]), (DEPTH, ["2-9"]), (DEPTH, ["2--3"]), (SLO, ["nan"]),
    (SLO, ["1e309"]), (SLO, ["-1"]), (SLO, ["99999999"]), (FLAG, ["yes"]), (METRIC, ["x" * 10_000]),
    (FAMS, ["Qwen"] * 100), (METRIC, ["Ω≈ç√"]), (CONC, ["1", "16"]),
])
def test_anything_else_is_refused(p: Param, raw: list[str]):
    with pytest.raises(ValueError):
        parse(p, raw)


def test_defaults_stay_out_of_the_url_and_values_round_trip():
    assert serialise(CONC, 1) is None and serialise(FAMS, []) is None and serialise(DEPTH, (2, 5)) is None
    for p, v in ((CONC, 64), (FAMS, ["Qwen"]), (DEPTH, (3, 3)), (SLO, 8.0), (FLAG, True), (METRIC, "p99_e2e_ms")):
        assert parse(p, serialise(p, v)) == v
