"""vLLM's spec-decode counters: read from Prometheus ``/metrics`` text, and deltas over a window.

Owns the mapping from vLLM's metric names to :class:`ingest.records.SpecCounters`. vLLM 0.32 exposes
(as counter samples, summed here over every other label such as ``model_name`` or ``engine``):

- ``vllm:spec_decode_num_drafts_total``
- ``vllm:spec_decode_num_draft_tokens_total``
- ``vllm:spec_decode_num_accepted_tokens_total``
- ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0".."k-1"}``

``prometheus_client``'s parser names counter *families* without ``_total`` while their samples keep
it (and adds ``_created`` samples); both spellings are accepted. A server without speculation has
none of these: that parses as zero counters with an empty per-position list.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ingest.records import SpecCounters

PREFIX = "vllm:spec_decode_num_"
DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"


def _base_name(sample_name: str) -> str:
    return sample_name[:-6] if sample_name.endswith("_total") else sample_name


def parse_spec_counters(text: str) -> SpecCounters:
    """Cumulative spec-decode counters in one ``/metrics`` text (absolute values, not deltas)."""
    totals = {DRAFTS: 0.0, DRAFT_TOKENS: 0.0, ACCEPTED: 0.0}
    per_pos: dict[int, float] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(PREFIX):
            continue
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            name = _base_name(sample.name)
            if name == ACCEPTED_PER_POS:
                pos = int(sample.labels["position"])
                per_pos[pos] = per_pos.get(pos, 0.0) + sample.value
            elif name in totals:
                totals[name] += sample.value
    positions = [round(per_pos.get(i, 0.0)) for i in range(max(per_pos) + 1)] if per_pos else []
    return SpecCounters(
        drafts=round(totals[DRAFTS]),
        draft_tokens=round(totals[DRAFT_TOKENS]),
        accepted_tokens=round(totals[ACCEPTED]),
        accepted_per_pos=positions,
    )


def delta(before: SpecCounters, after: SpecCounters) -> SpecCounters:
    """Counter increase from ``before`` to ``after``.

    Raises ``ValueError`` if a counter went backwards: the server restarted inside the window, so
    the window's acceptance numbers are unknowable and the cell must fail rather than lie.
    """
    width = max(len(before.accepted_per_pos), len(after.accepted_per_pos))
    b_pos = before.accepted_per_pos + [0] * (width - len(before.accepted_per_pos))
    a_pos = after.accepted_per_pos + [0] * (width - len(after.accepted_per_pos))
    out = SpecCounters(
        drafts=after.drafts - before.drafts,
        draft_tokens=after.draft_tokens - before.draft_tokens,
        accepted_tokens=after.accepted_tokens - before.accepted_tokens,
        accepted_per_pos=[a - b for a, b in zip(a_pos, b_pos, strict=True)],
    )
    if min(out.drafts, out.draft_tokens, out.accepted_tokens, *out.accepted_per_pos, 0) < 0:
        raise ValueError("spec-decode counters went backwards (server restarted during the window?)")
    return out


def fetch_metrics_text(base_url: str, timeout_s: float = 10.0) -> str:
    resp = httpx.get(f"{base_url.rstrip('/')}/metrics", timeout=timeout_s, trust_env=False)
    resp.raise_for_status()
    return resp.text


def snapshot(base_url: str, timeout_s: float = 10.0) -> SpecCounters:
    """The server's cumulative spec-decode counters right now."""
    return parse_spec_counters(fetch_metrics_text(base_url, timeout_s))
