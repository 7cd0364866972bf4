"""Host facts: vendor-tool output parsing (amd-smi, rocm-smi, nvidia-smi), detection order through real
executables on PATH, the cpu fallback, and the vLLM version from the launch template's own install."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from runner import hostfacts
from runner.hostfacts import (
    detect_gpus,
    parse_amd_smi_static,
    parse_amd_smi_version,
    parse_nvidia_smi,
    parse_rocm_smi,
    parse_rocm_smi_driver,
    short_name,
    version_probe,
    vllm_version_from_launch,
)

AMD_STATIC = json.dumps([{"gpu": i, "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002",
                                            "device_id": "0x74a1"}} for i in range(8)])
AMD_STATIC_NEW = json.dumps({"gpu_data": [{"gpu": 0, "asic": {"market_name": "AMD Instinct MI355X"}}]})
AMD_VERSION = json.dumps([{"tool": "AMDSMI Tool", "amdsmi_library_version": "25.1.0", "rocm_version": "6.4.1",
                           "amdgpu_version": "6.12.12"}])
ROCM_SMI = json.dumps({"card0": {"Card Series": "AMD Instinct MI300X OAM", "Card Vendor": "AMD"},
                       "card1": {"Card Series": "AMD Instinct MI300X OAM", "Card Vendor": "AMD"}})
ROCM_DRIVER = json.dumps({"system": {"Driver version": "6.8.5"}})
NVIDIA = "NVIDIA H100 80GB HBM3, 550.54.15\nNVIDIA H100 80GB HBM3, 550.54.15\n"


def test_parsers() -> None:
    assert parse_amd_smi_static(AMD_STATIC) == ["AMD Instinct MI300X"] * 8
    assert parse_amd_smi_static(AMD_STATIC_NEW) == ["AMD Instinct MI355X"]
    assert parse_amd_smi_version(AMD_VERSION) == ("6.12.12", "6.4.1")
    assert parse_rocm_smi(ROCM_SMI) == ["AMD Instinct MI300X OAM"] * 2
    assert parse_rocm_smi_driver(ROCM_DRIVER) == "6.8.5"
    assert parse_nvidia_smi(NVIDIA) == (["NVIDIA H100 80GB HBM3"] * 2, "550.54.15")
    assert [short_name(n) for n in ("AMD Instinct MI300X", "AMD Instinct MI355X OAM", "NVIDIA H100 80GB HBM3",
                                    "NVIDIA B200", "NVIDIA A100-SXM4-80GB", "Mystery Accelerator")] == [
        "MI300X", "MI355X", "H100", "B200", "A100", "Mystery Accelerator"]


def test_detection_order_and_fallbacks() -> None:
    def runner(outputs: dict[str, str | None]):
        return lambda argv, timeout: outputs.get(argv[0] + " " + argv[1])

    nvidia = "nvidia-smi --query-gpu=name,driver_version"
    amd = detect_gpus(runner({"amd-smi static": AMD_STATIC, "amd-smi version": AMD_VERSION, nvidia: NVIDIA}))
    assert (amd.model, amd.count, amd.driver, amd.rocm, amd.tool) == ("MI300X", 8, "6.12.12", "6.4.1", "amd-smi")
    assert "gpus=AMD Instinct MI300X" in amd.notes() and "rocm=6.4.1" in amd.notes()
    rocm = detect_gpus(runner({"amd-smi static": "not json", "rocm-smi --showproductname": ROCM_SMI,
                               "rocm-smi --showdriverversion": ROCM_DRIVER}))
    assert (rocm.model, rocm.count, rocm.driver, rocm.tool) == ("MI300X", 2, "6.8.5", "rocm-smi")
    nv = detect_gpus(runner({nvidia: NVIDIA}))
    assert (nv.model, nv.count, nv.driver, nv.tool) == ("H100", 2, "550.54.15", "nvidia-smi")
    cpu = detect_gpus(runner({}))
    assert (cpu.model, cpu.count, cpu.notes()) == ("cpu", 0, "")


def _exe(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_real_executables_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _exe(tmp_path, "amd-smi", f"import sys\nprint({AMD_STATIC!r} if sys.argv[1] == 'static' else {AMD_VERSION!r})")
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = detect_gpus()
    assert (facts.model, facts.count, facts.rocm) == ("MI300X", 8, "6.4.1")
    _exe(tmp_path, "amd-smi", "import sys; sys.exit(1)")  # a broken tool is no answer, not a crash
    assert detect_gpus().model == "cpu"


def test_this_machine_has_no_gpu_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert detect_gpus().model == "cpu"


def test_vllm_version_comes_from_the_launch_templates_install(tmp_path: Path) -> None:
    pkg = tmp_path / "site" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('__version__ = "9.8.7"\n')
    env = {"PYTHONPATH": str(tmp_path / "site")}
    template = f"{sys.executable} -m vllm.entrypoints.openai.api_server --model {{model}} --port {{port}} {{args}}"
    assert vllm_version_from_launch(template, env) == "9.8.7"
    assert vllm_version_from_launch(template, {"PYTHONPATH": str(tmp_path / "empty")}) == ""
    assert version_probe(["vllm", "serve", "m"]) == ["vllm", "--version"]
    assert version_probe(["docker", "run", "rocm/vllm"]) is None
    assert vllm_version_from_launch("docker run --rm rocm/vllm vllm serve {model}") == ""
    assert hostfacts.hostname() == os.uname().nodename
