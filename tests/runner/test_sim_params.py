"""Every constant in data/sim_params.toml carries a range and a source or a stated assumption."""

from __future__ import annotations

from analysis import params


def _problems(tree: dict) -> list[str]:
    bad = []
    for path, node in params.walk_constants(tree):
        if not params.is_constant(node):
            bad.append(f"{path}: a bare number (write {{ value, range, source | assumption }})")
            continue
        if not (node.get("source") or node.get("assumption")):
            bad.append(f"{path}: no source or assumption")
        rng = node.get("range")
        if isinstance(rng, list):
            value = node["value"]
            numeric = isinstance(value, (int, float))
            if len(rng) != 2 or not rng[0] <= rng[1] or (numeric and not rng[0] <= value <= rng[1]):
                bad.append(f"{path}: range {rng} does not hold its value {value}")
        elif not (isinstance(rng, str) and rng.startswith("fixed:")):
            bad.append(f"{path}: no range (a [low, high] list, or 'fixed: <why>')")
    return bad


def test_every_constant_has_a_range_and_a_source_or_assumption():
    bad = _problems(params.raw())
    assert not bad, "\n".join(bad)


def test_the_check_catches_bare_and_unsourced_constants():
    tree = {"a": {"x": 1.0, "y": {"value": 2.0, "range": [1, 3]}, "z": {"value": 2.0, "source": "s"},
                  "w": {"value": 5.0, "range": [1, 3], "assumption": "why"}}}
    bad = _problems(tree)
    assert any(b.startswith("a.x:") for b in bad)
    assert any(b.startswith("a.y:") and "source" in b for b in bad)
    assert any(b.startswith("a.z:") and "range" in b for b in bad)
    assert any(b.startswith("a.w:") and "does not hold" in b for b in bad)


def test_priors_expose_ranges_for_the_model_draws():
    pri = params.priors()
    serial = pri["methods.dspark.draft.serial_head_ms"]
    assert serial.low == 0.0 and serial.high > serial.value > 0
    assert pri["methods.mtp.draft.pass_ms"].is_assumption
    assert pri["families.Kimi.overhead_ms"].source.startswith("fitted to https://")
