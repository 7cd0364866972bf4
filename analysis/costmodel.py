"""The roofline cost model: time of one verify step and of drafting, from GPU and model tables.

T_verify(B, t) for B sequences verifying t = k+1 tokens each:
  T_verify = overhead + active weights / (TP · HBM bandwidth · 0.85) + B · per_seq + B · t · per_token
The per-sequence and per-token terms are fitted to published no-spec and spec throughput curves
(Kimi-K2.5 and MiniMax-M2.5 on MI355X, concurrency 4–64) and scaled to other GPUs by bandwidth and
compute. A pure expert-touch roofline predicts speculation gets *cheaper* with load for MoE models; the
published curves show the opposite, so the fitted per-token term carries the cost (docs/simulator.md).
T_draft(method, k) is per method: k sequential small passes (MTP, EAGLE-3), one parallel block pass
(DFlash), a parallel pass plus a serial head (DSpark), or ~0 GPU (n-gram).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

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
