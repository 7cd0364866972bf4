"""The roofline cost model: time of one verify step and of drafting, from GPU and model tables.

T_verify(B, t) for B sequences verifying t = k+1 tokens each:
  T_verify = overhead + active weights / (TP · HBM bandwidth · 0.85) + B · per_seq + B · t · per_token
The per-sequence and per-token terms are fitted to published no-spec and spec throughput curves
(Kimi-K2.5 and MiniMax-M2.5 on MI355X, concurrency 4–64) and scaled to other GPUs by bandwidth and
compute. A pure expert-touch roofline predicts speculation gets *cheaper* with load for MoE models; the
published curves show the opposite, so the fitted per-token term carries the cost (docs/simulator.md).
T_draft(method, k) is per method: k sequential small passes (MTP, EAGLE-3), one parallel block pass
(DFlash), a parallel pass plus a serial head (DSpark), or ~0 GPU (n-gram).

Candidate modes (docs/simulator.md, "Modes"): a depth schedule runs, at each verify step, the schedule's depth
for the running batch (:func:`depth_at`); adaptive verification (vLLM's DSpark ``enable_adaptive_verification``)
drafts the maximum depth and verifies the draft budget that maximises expected tokens per step time
(:func:`adaptive_budget`).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from ingest.paths import DATA_DIR

DATA = DATA_DIR


@dataclass(frozen=True, slots=True)
class GpuSpec:
    gpu: str
    memory_gb: float
    hbm_tb_s: float
    bf16_tflops: float
    fp8_tflops: float
    power_w: float
    source: str


@dataclass(frozen=True, slots=True)
class ModelSpec:
    family: str
    model: str
    total_b: float
    active_b: float
    moe: bool


@cache
def gpu_specs(path: Path = DATA / "gpu_specs.csv") -> dict[str, GpuSpec]:
    with open(path, newline="") as fh:
        return {
            r["gpu"]: GpuSpec(r["gpu"], float(r["memory_gb"]), float(r["hbm_bandwidth_tb_s"]),
                              float(r["bf16_dense_tflops"]), float(r["fp8_dense_tflops"]),
                              float(r["board_power_w"]), r["source"])
            for r in csv.DictReader(fh)
        }


@cache
def model_specs(path: Path = DATA / "models.csv") -> dict[str, ModelSpec]:
    with open(path, newline="") as fh:
        return {
            r["family"]: ModelSpec(r["family"], r["model"], float(r["total_params_b"]),
                                   float(r["active_params_b"]), r["moe"].strip().lower() == "true")
            for r in csv.DictReader(fh)
        }


@dataclass(frozen=True, slots=True)
class Deployment:
    """How a family is served on a GPU: the assumptions that turn specs into step times.

    ``per_seq_ms`` (attention/KV reads and per-sequence work) and ``per_token_ms`` (work per verified token)
    are fitted on the reference GPU (MI355X, the GPU of the published throughput curves) and scaled to other
    GPUs by HBM bandwidth and dense compute respectively; ``overhead_ms`` is host-side and does not scale.
    """

    model: ModelSpec
    gpu: GpuSpec
    tp: int  # tensor-parallel size = GPUs per server
    bytes_per_param: float
    overhead_ms: float
    per_seq_ms: float
    per_token_ms: float
    ref_gpu: GpuSpec
    ref_tp: int
    bw_eff: float = 0.85

    @property
    def bw_scale(self) -> float:
        return (self.ref_gpu.hbm_tb_s * self.ref_tp) / (self.gpu.hbm_tb_s * self.tp)

    @property
    def compute_scale(self) -> float:
        peak = self.gpu.fp8_tflops if self.bytes_per_param <= 1.0 else self.gpu.bf16_tflops
        ref = self.ref_gpu.fp8_tflops if self.bytes_per_param <= 1.0 else self.ref_gpu.bf16_tflops
        return (ref * self.ref_tp) / (peak * self.tp)


def weights_ms(d: Deployment) -> float:
    """Streaming the active weights once per step (memory roofline)."""
    return 1e3 * d.model.active_b * 1e9 * d.bytes_per_param / (d.tp * d.gpu.hbm_tb_s * 1e12 * d.bw_eff)


def verify_ms(d: Deployment, batch: float, tokens_per_seq: float, context: float = 1500.0) -> float:
    """T_verify(B, t): overhead + weights + B·per_seq (scaled by context/1500) + B·t·per_token."""
    per_seq = d.per_seq_ms * d.bw_scale * (context / 1500.0)
    per_tok = d.per_token_ms * d.compute_scale
    return d.overhead_ms + weights_ms(d) + batch * per_seq + batch * tokens_per_seq * per_tok


@dataclass(frozen=True, slots=True)
class DraftCost:
    """Drafting cost of one method (see module docstring)."""

    kind: str  # sequential | parallel | parallel+serial | cpu
    pass_ms: float  # fixed cost of one draft pass (launches, sampling) on the reference GPU
    token_frac: float  # draft work per drafted token, as a share of the target's per-token work
    serial_head_ms: float = 0.0  # DSpark's serial head, per drafted position


def draft_ms(d: Deployment, cost: DraftCost, batch: float, k: int, context: float = 1500.0) -> float:
    if k <= 0:
        return 0.0
    per_tok = d.per_token_ms * d.compute_scale * cost.token_frac
    if cost.kind == "sequential":
        return k * (cost.pass_ms + batch * per_tok)
    if cost.kind == "parallel":
        return cost.pass_ms + batch * k * per_tok
    if cost.kind == "parallel+serial":
        return cost.pass_ms + batch * k * per_tok + k * cost.serial_head_ms
    return cost.pass_ms + 0.01 * k  # cpu: n-gram lookup on the host


def prefill_ms(d: Deployment, input_tokens: float) -> float:
    """Prefill is compute-bound: per-token work at ~8× the decode efficiency (large GEMMs)."""
    return d.overhead_ms + weights_ms(d) + input_tokens * d.per_token_ms * d.compute_scale / 8.0


def depth_at(schedule: tuple[tuple[int, int, int], ...] | list, batch: float) -> int:
    """The depth vLLM runs at a batch size under ``schedule`` (inclusive [start, end, K] ranges; past the last
    range its K carries on, as vLLM's dense lookup only reaches --max-num-seqs)."""
    for a, b, k in schedule:
        if a <= batch <= b:
            return int(k)
    return int(schedule[-1][2] if batch > schedule[-1][1] else schedule[0][2])


@dataclass(frozen=True, slots=True)
class AdaptiveBudget:
    """What vLLM's adaptive verification verifies at one batch size (:func:`adaptive_budget`)."""

    threshold: float  # a slot whose survival probability is below this is trimmed (not verified)
    mean_depth: float  # verified drafts per request per step
    step_ms: float  # T_draft(max depth) + T_verify(batch, 1 + mean_depth)


def adaptive_budget(d: Deployment, cost: DraftCost, batch: float, survival: np.ndarray,
                    context: float = 1500.0) -> AdaptiveBudget:
    """vLLM 0.32's draft budget (vllm/v1/worker/gpu/spec_decode/adaptive_verification.py,
    ``AdaptiveVerificationManager.get_num_tokens``): every (request, position) slot is scored by its survival
    probability (the running product of the per-position confidences); the budget b admits the b best slots
    (a global top-b) and maximises (sampling requests + Σ admitted scores) / (draft cost(requests) + verify
    cost(tokens)). The drafter always drafts the maximum depth, so its cost does not depend on b.

    ``survival``: (n × K) survival curves of n requests representing the batch's mix (each stands for
    batch / n of the running requests), the confidence head taken as calibrated (an assumption: vLLM's head or
    online estimator predicts acceptance, it does not know it)."""
    surv = np.atleast_2d(np.asarray(survival, dtype=float))
    n, k = surv.shape
    draft = draft_ms(d, cost, batch, k, context)
    scores = np.sort(surv.ravel())[::-1]
    budgets = np.arange(len(scores) + 1)
    # per running request: 1 + the admitted slots' expected accepted tokens, over 1 + admitted slots verified
    tokens = 1.0 + np.concatenate(([0.0], np.cumsum(scores))) / n
    steps = draft + verify_ms(d, batch, 1.0 + budgets / n, context)  # linear in tokens: one array
    best = int(np.argmax(tokens / steps))
    # between the last admitted and the first trimmed score; all admitted: nothing is trimmed (vLLM leaves the
    # batch as scheduled)
    threshold = (float("inf") if best == 0 else 0.0 if best == len(scores)
                 else float(scores[best - 1] + scores[best]) / 2)
    return AdaptiveBudget(threshold, best / n, float(steps[best]))
