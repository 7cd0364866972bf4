"""The vLLM path end to end against a real vLLM 0.32 CPU server (tiny random Llama, ngram depth 3).

Needs ``scripts/setup_vllm_cpu.sh DIR`` and ``SPECTUNE_VLLM_ENV=DIR``; skipped only when that variable
is unset. One server per module (~35-45 s to healthy); the last test stops it and checks that no
process of its group is left.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runner.vllm.client import Prompt, run_load
from runner.vllm.metrics import delta, snapshot
from runner.vllm.server import ServerStartError, VllmServer, env_from_setup

pytestmark = pytest.mark.vllm

SERVER_FLAGS = ["--dtype", "float32", "--max-model-len", "512", "--enforce-eager"]
HEALTH_TIMEOUT_S = 240.0
DEPTH = 3
# Repetitive code-like prompts give ngram lookup something to match, so acceptance is non-zero.
PROMPTS = [Prompt(text=f"def f{i}(x):\n    return x * {i}\n\n" * 3) for i in range(10)]


@pytest.fixture(scope="module")
def setup_env() -> dict[str, str]:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    return env_from_setup(env_dir)


def make_server(env: dict[str, str], model: str, **kw: object) -> VllmServer:
    tmp = Path(env["TMPDIR"])
    log = tmp / "logs" / f"test-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:6]}.log"
    return VllmServer(
        model,
        log_path=log,
        command_template=env["SPECTUNE_VLLM_LAUNCH"],
        env=env,
        cwd=tmp,
        extra_flags=SERVER_FLAGS,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def server(setup_env: dict[str, str]) -> Iterator[VllmServer]:
    srv = make_server(
        setup_env, setup_env["SPECTUNE_VLLM_MODEL"], method="ngram", num_speculative_tokens=DEPTH,
        speculative_extra={"prompt_lookup_max": 3},
    )
    srv.start()
    try:
        srv.wait_healthy(HEALTH_TIMEOUT_S)
        yield srv
    finally:
        srv.stop()


def test_streamed_load_and_acceptance_counters(server: VllmServer, setup_env: dict[str, str]) -> None:
    model = setup_env["SPECTUNE_VLLM_MODEL"]
    before = snapshot(server.base_url)
    res = asyncio.run(
        run_load(server.base_url, model, PROMPTS, 2, max_tokens=48, timeout_s=120, stall_timeout_s=60)
    )
    after = snapshot(server.base_url)
    assert res.errors() == []
    assert res.ok_count == len(PROMPTS)
    for r in res.requests:
        assert r.output_tokens == 48, "ignore_eos must make vLLM generate exactly max_tokens"
        assert r.input_tokens is not None and r.input_tokens > 10
        assert r.ttft_ms is not None and r.ttft_ms > 0
        assert r.tpot_ms is not None and r.tpot_ms > 0
        assert r.e2e_ms is not None and r.e2e_ms > r.ttft_ms
    assert res.itl_ms and min(res.itl_ms) >= 0
    assert 0 < res.window_s < 120
    frame = res.requests_frame()
    assert frame.height == len(PROMPTS) and frame["ok"].all()

    spec = delta(before, after)
    assert spec.drafts > 0
    assert 0 < spec.accepted_tokens / spec.draft_tokens <= 1
    assert len(spec.accepted_per_pos) == DEPTH
    assert sum(spec.accepted_per_pos) == spec.accepted_tokens
    assert spec.draft_tokens <= DEPTH * spec.drafts


def test_chat_endpoint(server: VllmServer, setup_env: dict[str, str]) -> None:
    prompts = [Prompt(messages=[{"role": "user", "content": f"say {i} {i} {i}"}]) for i in range(3)]
    res = asyncio.run(
        run_load(server.base_url, setup_env["SPECTUNE_VLLM_MODEL"], prompts, 2, endpoint="chat", max_tokens=16)
    )
    assert res.errors() == []
    assert [r.output_tokens for r in res.requests] == [16, 16, 16]
    assert all(r.ttft_ms and r.tpot_ms for r in res.requests)


def test_bad_model_path_fails_fast_with_the_reason(setup_env: dict[str, str]) -> None:
    srv = make_server(setup_env, str(Path(setup_env["SPECTUNE_VLLM_ENV"]) / "no-such-model"))
    srv.start()
    pgid = srv.pgid
    assert pgid is not None
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        srv.wait_healthy(HEALTH_TIMEOUT_S)
    assert time.monotonic() - t0 < 90
    msg = str(info.value)
    assert "exited with code" in msg and "no-such-model" in msg and "\n" not in msg
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_attach_checks_and_tokenizer_fitting_against_the_real_server(server: VllmServer, setup_env: dict[str, str],
                                                                      tmp_path: Path) -> None:
    """What --endpoint reads from a real vLLM (its spec-decode metrics exist, at 0, from the start) and what
    trace replay reads from its /tokenize, on the module's ngram:3 server: no extra server start."""
    from ingest.errors import UsageError
    from runner.backends.vllm import check_endpoint, tokens_per_estimate
    from runner.matrix import ServerConfig, load_matrix
    from runner.workloads import filler_words, synth_prompt

    model = setup_env["SPECTUNE_VLLM_MODEL"]

    def config(methods: str) -> ServerConfig:
        path = tmp_path / "m.toml"
        path.write_text(f'gpus = ["cpu"]\n{methods}\n[families.T]\nmodel = "{model}"\n[workloads.code]\n')
        return load_matrix(path).server_configs()[0]

    check_endpoint(server.base_url, config(f"[methods.ngram]\ndepths = [{DEPTH}]"))
    with pytest.raises(UsageError, match="runs speculative decoding, but the matrix's server config is T/none@cpu"):
        check_endpoint(server.base_url, config("[methods.none]"))
    with pytest.raises(UsageError, match=f"drafts {DEPTH} tokens per step, but .* T/ngram:2@cpu"):
        check_endpoint(server.base_url, config("[methods.ngram]\ndepths = [2]"))
    ratio = tokens_per_estimate(server.base_url, model)
    assert ratio is not None and 0.3 < ratio < 4
    for target in (60, 200, 400):
        text = synth_prompt(round(target / ratio), filler_words(), offset=target)
        count = httpx.post(f"{server.base_url}/tokenize", json={"model": model, "prompt": text}, timeout=30).json()
        assert count["count"] == pytest.approx(target, rel=0.15), (target, count["count"])


def test_stop_leaves_no_process(server: VllmServer) -> None:
    # Last in the module on purpose: it ends the module's server.
    pgid = server.pgid
    assert pgid is not None and server.running
    t0 = time.monotonic()
    server.stop()
    assert time.monotonic() - t0 < 30
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.base_url}/health", timeout=2)
