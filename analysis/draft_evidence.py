"""Draft costs implied by published batch-1 rows: the data behind the draft-cost priors in sim_params.toml.

A source that gives, for one model at concurrency 1, the no-spec throughput (or step time), the speculative
throughput (or speedup) and the acceptance length τ at a known depth k pins the extra time of a speculative
step: with T_plain = 1000 / no-spec tok/s (one token per step) and the speculative step emitting τ tokens,
T_spec = τ · T_plain / speedup, so draft + extra verify time = T_spec − T_plain. That is an upper bound on
the draft time alone (it includes verifying k+1 tokens instead of 1, small at batch 1). Rows without a
stated depth (DFlash block sizes are often not given) still bound the cost of one draft pass.

These rows are on other GPUs and models than the product's families, so they do not replace the priors:
tests/runner/test_draft_evidence.py holds every draft-cost range in data/sim_params.toml to cover them
(per pass for sequential drafters, per block for parallel ones), and the TOML cites them.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from functools import cache

from analysis import calibration

METHODS = ("mtp", "eagle3", "dflash", "dspark")


@dataclass(frozen=True, slots=True)
class DraftEvidence:
    source: str
    model: str
    method: str
    depth: int | None
    tau: float
    speedup: float
    t_plain_ms: float

    @property
    def extra_ms(self) -> float:
        """T_spec − T_plain: the draft plus the extra verify time of one speculative step."""
        return self.tau * self.t_plain_ms / self.speedup - self.t_plain_ms

    @property
    def per_pass_ms(self) -> float:
        """Per drafted token for sequential drafters; per block for parallel ones."""
        if self.method in ("mtp", "eagle3") and self.depth:
            return self.extra_ms / self.depth
        return self.extra_ms


@cache
def evidence() -> tuple[DraftEvidence, ...]:
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    with open(calibration.PUBLISHED, newline="") as fh:
        for r in csv.DictReader(fh):
            rows[(r["source_url"], r["model"])].append(r)
    out = []
    for (src, model), rs in rows.items():
        c1 = [r for r in rs if r["concurrency"].strip() == "1"]
        base = [float(r["value"]) for r in c1 if r["method"] == "none" and r["metric"] == "output_throughput_tok_s"]
        for method in METHODS:
            # a row the source marks as a *reference* checkpoint is another drafter than the one it timed
            taus = [float(r["value"]) for r in rs if r["method"] == method and r["metric"] == "acceptance_length"
                    and not r["notes"].lower().startswith("reference")]
            if not taus:
                continue
            tau = sum(taus) / len(taus)  # a source with several sets (K3: coding, writing) → their mean
            depth = next((int(float(r["depth"])) for r in rs if r["method"] == method and r["depth"].strip()), None)
            spec = [r for r in c1 if r["method"] == method]
            speedup = next((float(r["value"]) for r in spec if r["metric"] == "speedup"), None)
            tput = next((float(r["value"]) for r in spec if r["metric"] == "output_throughput_tok_s"), None)
            if base and tput is not None:
                speedup, t_plain = tput / base[0], 1000.0 / base[0]
            elif speedup is not None:
                # the no-spec rate: a 'none' row, or the spec rate / speedup
                t_plain = 1000.0 / base[0] if base else (1000.0 * speedup / tput if tput else None)
                if t_plain is None:
                    continue
            else:
                continue
            out.append(DraftEvidence(src, model, method, depth, tau, speedup, t_plain))
    return tuple(out)
