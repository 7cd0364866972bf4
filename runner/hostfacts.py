"""Host facts for a run's provenance: GPU model and count, driver/ROCm version, and the vLLM version.

GPUs come from the vendor tools' machine-readable output, first that answers wins: ``amd-smi`` (JSON),
``rocm-smi`` (JSON), ``nvidia-smi`` (CSV query: it has no JSON mode); none → ``cpu``. The vLLM version
comes from the same install the launch template runs (its python ``-c "import vllm; ..."``, or
``vllm --version``), or from a running server's ``/version``. The runner never imports vLLM itself.
Every probe is bounded by a timeout and failing probes only leave a fact empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

PROBE_TIMEOUT_S = 15.0
VERSION_TIMEOUT_S = 90.0  # importing vllm loads torch: seconds, more on a cold disk
_SHORT_NAME = re.compile(r"\b(MI\d{3}[A-Z]?|[ABHLT]\d{2,3}[A-Z]?|GB\d{3}|RTX ?\w+)\b")

Runner = Callable[[list[str], float], str | None]  # argv, timeout -> stdout (None when it failed)


def run_cmd(argv: list[str], timeout_s: float, env: dict[str, str] | None = None) -> str | None:
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


@dataclass(slots=True)
class GpuFacts:
    model: str = "cpu"  # short name (MI300X, H100 …) as the matrix uses it; "cpu" without GPUs
    count: int = 0
    names: list[str] = field(default_factory=list)  # the tool's full product names
    driver: str = ""
    rocm: str = ""
    tool: str = ""

    def notes(self) -> str:
        parts = [f"{k}={v}" for k, v in (("gpu_tool", self.tool), ("driver", self.driver), ("rocm", self.rocm)) if v]
        if self.names:
            parts.append("gpus=" + "; ".join(sorted(set(self.names))))
        return ", ".join(parts)


def short_name(product: str) -> str:
    """'AMD Instinct MI300X' → 'MI300X'; 'NVIDIA H100 80GB HBM3' → 'H100'; unknown → the name itself."""
    m = _SHORT_NAME.search(product.upper())
    return m.group(1).replace(" ", "") if m else product.strip()


def _walk(obj: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((str(k).lower(), v))
            out += _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _walk(v)
    return out


def parse_amd_smi_static(text: str) -> list[str]:
    """Product names from ``amd-smi static --asic --json`` (a list per GPU, or {"gpu_data": [...]})."""
    data = json.loads(text)
    gpus = data.get("gpu_data", data) if isinstance(data, dict) else data
    if isinstance(gpus, dict):
        gpus = [gpus]
    names = []
    for gpu in gpus if isinstance(gpus, list) else []:
        found = dict(_walk(gpu))
        name = found.get("market_name") or found.get("product_name") or found.get("device_name")
        if isinstance(name, str) and name.strip():
            names.append(name.strip())
    return names


def parse_amd_smi_version(text: str) -> tuple[str, str]:
    """(driver, ROCm) from ``amd-smi version --json``."""
    found = dict(_walk(json.loads(text)))
    driver = found.get("amdgpu_version") or found.get("driver_version") or ""
    return str(driver), str(found.get("rocm_version") or "")


def parse_rocm_smi(text: str) -> list[str]:
    """Product names from ``rocm-smi --showproductname --json`` ({"card0": {"Card series": ...}})."""
    data = json.loads(text)
    names = []
    for card, info in sorted(data.items()) if isinstance(data, dict) else []:
        if not str(card).startswith("card") or not isinstance(info, dict):
            continue
        name = info.get("Card Series") or info.get("Card series") or info.get("Card SKU") or info.get("Card model")
        if name:
            names.append(str(name).strip())
    return names


def parse_rocm_smi_driver(text: str) -> str:
    found = dict(_walk(json.loads(text)))
    return str(found.get("driver version") or "")


def parse_nvidia_smi(text: str) -> tuple[list[str], str]:
    """(names, driver) from ``nvidia-smi --query-gpu=name,driver_version --format=csv,noheader``."""
    names, driver = [], ""
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts and parts[0]:
            names.append(parts[0])
            if len(parts) > 1:
                driver = parts[1]
    return names, driver


def _rocm_file() -> str:
    with contextlib.suppress(OSError):
        return Path("/opt/rocm/.info/version").read_text().strip()
    return ""


def detect_gpus(run: Runner = run_cmd) -> GpuFacts:
    """The first vendor tool that lists GPUs; malformed output counts as no answer."""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        out = run(["amd-smi", "static", "--asic", "--json"], PROBE_TIMEOUT_S)
        names = parse_amd_smi_static(out) if out else []
        if names:
            ver = run(["amd-smi", "version", "--json"], PROBE_TIMEOUT_S)
            driver, rocm = parse_amd_smi_version(ver) if ver else ("", "")
            return GpuFacts(short_name(names[0]), len(names), names, driver, rocm or _rocm_file(), "amd-smi")
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        out = run(["rocm-smi", "--showproductname", "--json"], PROBE_TIMEOUT_S)
        names = parse_rocm_smi(out) if out else []
        if names:
            ver = run(["rocm-smi", "--showdriverversion", "--json"], PROBE_TIMEOUT_S)
            driver = parse_rocm_smi_driver(ver) if ver else ""
            return GpuFacts(short_name(names[0]), len(names), names, driver, _rocm_file(), "rocm-smi")
    out = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], PROBE_TIMEOUT_S)
    names, driver = parse_nvidia_smi(out) if out else ([], "")
    if names:
        return GpuFacts(short_name(names[0]), len(names), names, driver, "", "nvidia-smi")
    return GpuFacts()


def version_probe(launch_argv: list[str]) -> list[str] | None:
    """How to ask the launch template's own install for vLLM's version (None: cannot, e.g. a container)."""
    if not launch_argv:
        return None
    exe = launch_argv[0]
    base = Path(exe).name
    if base.startswith("python"):
        return [exe, "-c", "import vllm; print(vllm.__version__)"]
    if base == "vllm":
        return [exe, "--version"]
    return None


def vllm_version_from_launch(template: str, env: dict[str, str] | None = None) -> str:
    try:
        argv = shlex.split(template)
    except ValueError:
        return ""
    probe = version_probe(argv)
    if probe is None:
        return ""
    out = run_cmd(probe, VERSION_TIMEOUT_S, env)
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def vllm_version_from_endpoint(base_url: str, timeout_s: float = 5.0) -> str:
    try:
        resp = httpx.get(f"{base_url.rstrip('/')}/version", timeout=timeout_s, trust_env=False)
        return str(resp.json().get("version", "")) if resp.status_code == 200 else ""
    except (httpx.HTTPError, ValueError, AttributeError):
        return ""


def hostname() -> str:
    return socket.gethostname()
