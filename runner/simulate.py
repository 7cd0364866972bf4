"""The simulator: per-request samples for any cell from the acceptance and cost models (no GPU needed).

For each request: input/output lengths drawn around the workload's medians; a per-request difficulty
multiplies the cell's conditional acceptance; each verify step draws how many draft positions were
accepted (one uniform against the cumulative acceptances r_i), emits accepted + 1 tokens, and takes
T_verify(B, k+1) + T_draft(method, k) with lognormal jitter, B = the cell's concurrency. n-gram steps
draft only when a match is found. TTFT = prefill + a queueing wait that grows with concurrency.
Requests are scheduled closed-loop on ``concurrency`` slots, which gives the measured window.
Modes (docs/simulator.md, "Modes"): a depth schedule drafts, at every step, the schedule's depth at the running
batch (the closed loop keeps min(concurrency, requests) in flight); adaptive verification (DSpark) drafts the
maximum depth and verifies, per request, the draft positions whose survival probability clears the batch's
budget threshold (analysis.costmodel.adaptive_budget).
Seeded per cell (from the cell id), so a cell yields the same samples in any run order; request lengths
are seeded per workload, so every method sees the same prompt set.

``world=N`` takes the cell's acceptance, drafting cost and n-gram proposal rate from world N's one draw of the
model's parameters (analysis.model_draws.world_cell) instead of the point fit; ``batch_index`` and ``offset`` give a
later batch of the same cell its own sampling seed and the prompt set's next requests (``spectune tune`` adds
requests to a cell in rounds). ``lengths`` replaces the workload's prompt set with given (input, output) token
counts (a trace's requests).
"""

from __future__ import annotations

import hashlib
import heapq
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import polars as pl

from analysis import calibration, costmodel, model_draws, params
from ingest.cellstats import seed_for
from ingest.records import CellKey, SpecCounters, conform_requests

ADAPTIVE_MIX = 32  # representative requests of a batch's difficulty mix for the adaptive verification budget


@dataclass(slots=True)
class SimResult:
    requests: pl.DataFrame
    counters: SpecCounters | None
    itl_ms: np.ndarray
    window_s: float
    gpu_count: int


def _lengths(rng: np.random.Generator, median: float, sigma: float, n: int, cap: int) -> np.ndarray:
    return np.clip(np.round(median * rng.lognormal(0.0, sigma, n)), 8, cap).astype(np.int64)


def drafted_depth(key: CellKey, batch: float, n_requests: int) -> int:
    """Draft positions per verify step: the cell's depth; under a schedule, its depth at the running batch
    (min(concurrency, requests): the closed loop keeps that many in flight); adaptive verification drafts its
    maximum depth (and verifies fewer, see the module docstring)."""
    if key.method == "none":
        return 0
    if key.schedule:
        return costmodel.depth_at(key.schedule, min(batch, float(n_requests)))
    return key.depth


def cell_seed(key: CellKey, world: int | None = None, batch_index: int = 0) -> int:
    """The sampling seed of a cell (of one batch of it, in one world); the plain cell's is its id's."""
    if world is None and batch_index == 0:
        return seed_for(key.cell_id)
    return seed_for(hashlib.sha256(f"{key.cell_id}:world{world}:batch{batch_index}".encode()).hexdigest())


def simulate_cell(key: CellKey, n_requests: int, *, max_output_tokens: int = 2048, world: int | None = None,
                  batch_index: int = 0, offset: int = 0, lengths: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> SimResult:
    p = params.load()
    if key.workload not in p.workloads or key.family not in p.families:
        raise ValueError(f"simulator has no parameters for workload {key.workload!r} / family {key.family!r}")
    if key.method != "none" and key.method not in p.methods:
        raise ValueError(f"simulator has no parameters for method {key.method!r}")
    rng = np.random.default_rng(cell_seed(key, world, batch_index))
    wl = p.workloads[key.workload]
    dep = p.deployment(key.family, key.gpu)
    noise = p.noise
    n = int(n_requests)
    # The prompt set is the workload's, shared by every cell (as a real benchmark replays the same prompts):
    # lengths are seeded by the workload alone, so methods are compared on identical requests.
    if lengths is not None:
        inputs = np.clip(np.asarray(lengths[0], dtype=np.int64), 1, 8192)
        outputs = np.clip(np.asarray(lengths[1], dtype=np.int64), 1, max_output_tokens)
        n = len(inputs)
    else:
        prompts = np.random.default_rng(seed_for(hashlib.sha256(key.workload.encode()).hexdigest()))
        inputs = _lengths(prompts, wl.input_median, noise["input_sigma"], offset + n, 8192)[offset:]
        outputs = _lengths(prompts, wl.output_median, noise["length_sigma"], offset + n, max_output_tokens)[offset:]
    batch = float(key.concurrency)
    k = drafted_depth(key, batch, n)
    context = float(inputs.mean() + outputs.mean() / 2)
    t_plain = costmodel.verify_ms(dep, batch, 1.0, context)
    threshold = 0.0  # adaptive verification: a request verifies the positions whose survival is at least this
    if k:
        mp = p.methods[key.method]
        if world is not None:  # the world's hidden truth instead of the point fit
            truth = model_draws.world_cell(world, key.method, key.family, key.workload, k)
            cond, draft, propose = truth.positions, truth.draft, truth.propose
        else:
            cond = calibration.conditional_positions(key.method, key.family, key.workload, k)
            draft = mp.draft
            propose = float(mp.propose.get(key.workload, 1.0)) if mp.propose else 1.0
        t_spec = (costmodel.verify_ms(dep, batch, k + 1.0, context)
                  + costmodel.draft_ms(dep, draft, batch, k, context))
        if key.adaptive:  # the batch's mix: requests at the quantiles of the per-request difficulty
            z = np.array([NormalDist().inv_cdf((i + 0.5) / ADAPTIVE_MIX) for i in range(ADAPTIVE_MIX)])
            mix = np.exp(noise["alpha_sigma"] * z)
            survival = np.cumprod(np.clip(cond[None, :] * mix[:, None], 0.0, 0.98), axis=1)
            budget = costmodel.adaptive_budget(dep, draft, batch, survival, context)
            threshold, t_spec = budget.threshold, budget.step_ms
        t_nodraft = t_plain + draft.pass_ms  # n-gram step that found no match
    per_pos = np.zeros(k, dtype=np.int64)
    drafts_total = 0
    ttft = np.empty(n)
    e2e = np.empty(n)
    drafted = np.zeros(n, dtype=np.int64)
    accepted = np.zeros(n, dtype=np.int64)
    itl_parts: list[np.ndarray] = []
    prefill_mean = costmodel.prefill_ms(dep, float(inputs.mean()))
    for i in range(n):
        L = int(outputs[i])
        steps_max = L  # every step emits at least one token
        jitter = rng.lognormal(0.0, noise["step_sigma"], steps_max)
        if k:
            difficulty = rng.lognormal(0.0, noise["alpha_sigma"])
            r = np.cumprod(np.clip(cond * difficulty, 0.0, 0.98))
            u = rng.random(steps_max)
            verified = int((r >= threshold).sum())  # k, or adaptive verification's admitted positions
            acc = (u[:, None] < r[None, :verified]).sum(axis=1)
            has_draft = rng.random(steps_max) < propose if propose < 1.0 else np.ones(steps_max, dtype=bool)
            acc = np.where(has_draft, acc, 0)
            tokens = acc + 1
            # the first token comes from prefill; decode steps produce the remaining L−1
            cum = np.cumsum(tokens)
            n_steps = int(np.searchsorted(cum, L - 1) + 1) if L > 1 else 0
            acc, has_draft = acc[:n_steps], has_draft[:n_steps]
            step_ms = np.where(has_draft, t_spec, t_nodraft) * jitter[:n_steps]
            d = int(has_draft.sum())
            drafts_total += d
            drafted[i] = d * verified
            accepted[i] = int(acc.sum())
            per_pos += (acc[has_draft][:, None] >= np.arange(1, k + 1)[None, :]).sum(axis=0)
        else:
            n_steps = L - 1
            step_ms = t_plain * jitter[:n_steps]
        wait = rng.exponential(prefill_mean * 0.15 * np.sqrt(batch)) if batch > 1 else 0.0
        ttft[i] = costmodel.prefill_ms(dep, float(inputs[i])) * rng.lognormal(0.0, noise["step_sigma"]) + wait
        e2e[i] = ttft[i] + float(step_ms.sum())
        itl_parts.append(step_ms)
    # closed-loop scheduling on `concurrency` slots gives each request's start and the window
    slots = [0.0] * min(key.concurrency, n)
    heapq.heapify(slots)
    start = np.empty(n)
    end_max = 0.0
    for i in range(n):
        t0 = heapq.heappop(slots)
        start[i] = t0
        t1 = t0 + e2e[i] / 1e3
        end_max = max(end_max, t1)
        heapq.heappush(slots, t1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outputs > 1, (e2e - ttft) / (outputs - 1), np.nan)
    frame = pl.DataFrame({
        "request_index": np.arange(n, dtype=np.int32), "input_tokens": inputs.astype(np.int32),
        "output_tokens": outputs.astype(np.int32), "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e,
        "start_s": start,
        "drafted_tokens": drafted if k else None, "accepted_tokens": accepted if k else None,
    }, strict=False)
    counters = (SpecCounters(drafts=drafts_total, draft_tokens=int(drafted.sum()),
                             accepted_tokens=int(accepted.sum()), accepted_per_pos=per_pos.tolist())
                if k else None)
    return SimResult(requests=conform_requests(frame), counters=counters,
                     itl_ms=np.concatenate(itl_parts) if itl_parts else np.zeros(0),
                     window_s=end_max, gpu_count=dep.tp)
