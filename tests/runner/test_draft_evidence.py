"""Draft-cost priors hold the published batch-1 evidence (analysis/draft_evidence.py): every implied draft
cost lies inside the range of the method's constants in data/sim_params.toml."""

from __future__ import annotations

from analysis import draft_evidence, params


def _range(method: str) -> tuple[float, float]:
    """Cheapest and dearest draft pass the TOML allows at batch 1 (per pass, or per block at the evidence's k)."""
    pri = params.priors()
    lo = pri[f"methods.{method}.draft.pass_ms"].low
    hi = pri[f"methods.{method}.draft.pass_ms"].high
    return lo, hi


def test_every_published_batch1_draft_cost_is_inside_the_priors(capsys):
    ev = draft_evidence.evidence()
    assert {e.method for e in ev} >= {"eagle3", "dflash", "dspark"}
    pri = params.priors()
    lines, bad = [], []
    for e in ev:
        lo, hi = _range(e.method)
        if e.method == "dspark":  # block pass + k serial-head positions
            hi += (e.depth or 7) * pri["methods.dspark.draft.serial_head_ms"].high
        point = params.load().methods[e.method].draft
        lines.append(f"{e.method:<7} {e.model[:34]:<34} k={e.depth} tau={e.tau:.2f} speedup={e.speedup:.2f} "
                     f"T_plain={e.t_plain_ms:.2f} ms -> draft+verify {e.extra_ms:.2f} ms, per pass {e.per_pass_ms:.2f} "
                     f"(prior pass_ms {point.pass_ms} in [{lo}, {hi:.2f}])")
        if not lo <= e.per_pass_ms <= hi:
            bad.append(lines[-1])
    with capsys.disabled():
        print("\nbatch-1 draft costs implied by published rows:\n" + "\n".join(lines))
    assert not bad, "\n".join(bad)


def test_implied_cost_follows_the_definition():
    e = draft_evidence.DraftEvidence("s", "m", "eagle3", 3, tau=2.4, speedup=1.2, t_plain_ms=10.0)
    assert abs(e.extra_ms - 10.0) < 1e-9 and abs(e.per_pass_ms - 10.0 / 3) < 1e-9
