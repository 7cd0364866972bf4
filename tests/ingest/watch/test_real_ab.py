"""A/B readout of two REAL CPU vLLM servers (ngram depth 2 vs depth 4) sharing one traffic split.

Both servers start together (one module, ~3 GB each); the watcher scrapes both every second while the
test sends a random 50/50 split of the same prompts; then ``analysis ab`` names a winner or a tie with
intervals, each arm's acceptance equals its server's own counter delta, and the Production page shows
the readout. Needs ``SPECTUNE_VLLM_ENV``; skipped only when it is unset.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ingest.watch.exposition import parse
from runner.vllm.client import Prompt, run_load
from runner.vllm.server import VllmServer, env_from_setup
from tests.conftest import REPO, cli

pytestmark = pytest.mark.vllm
PER_ARM = 40
GAP_S = 0.6  # one request every 0.6 s to the router: both arms busy over the same minute
CODE = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, VllmServer]]:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    env = env_from_setup(env_dir)
    tmp = tmp_path_factory.mktemp("ab")
    out = {k: VllmServer(env["SPECTUNE_VLLM_MODEL"], log_path=tmp / f"vllm-{k}.log", method="ngram",
                         num_speculative_tokens=k, speculative_extra={"prompt_lookup_max": 3, "prompt_lookup_min": 2},
                         extra_flags=["--dtype", "float32", "--max-model-len", "1024", "--enforce-eager"],
                         command_template=env["SPECTUNE_VLLM_LAUNCH"], env={**env, "VLLM_CPU_KVCACHE_SPACE": "1"})
           for k in (2, 4)}
    try:
        for srv in out.values():
            srv.start()  # both load at once: one wait instead of two
        for srv in out.values():
            srv.wait_healthy(600)
        yield out
    finally:
        for srv in out.values():
            srv.stop()


def _counters(srv: VllmServer) -> dict:
    s = parse(httpx.get(f"{srv.base_url}/metrics", timeout=20, trust_env=False).text)
    return s.values


async def _split(servers: dict[int, VllmServer], prompts: list[Prompt]) -> None:
    """A router's random 50/50 split of one arrival stream: both arms see traffic over the same period."""
    rng = random.Random(7)
    arms: dict[int, list[tuple[float, Prompt]]] = {2: [], 4: []}
    for i, p in enumerate(prompts):
        k = rng.choice([2, 4])
        if len(arms[k]) >= PER_ARM:
            k = 6 - k
        arms[k].append((i * GAP_S, p))
    results = await asyncio.gather(*(run_load(
        servers[k].base_url, servers[k].model, [p for _t, p in arms[k]], 4, max_tokens=48, timeout_s=300,
        stall_timeout_s=120, arrival_times_s=[t for t, _p in arms[k]]) for k in (2, 4)))
    for r in results:
        assert r.failed_count == 0, r.errors()[:3]


def test_ab_of_two_real_servers_names_a_winner_or_a_tie(servers: dict[int, VllmServer], tmp_path: Path) -> None:
    before = {k: _counters(s) for k, s in servers.items()}
    targets = tmp_path / "ab.toml"
    targets.write_text("".join(
        f'[[target]]\nname = "ngram-{k}"\nurl = "{s.base_url}/metrics"\nsegment = "cpu/ab"\nfamily = "TinyLlama"\n'
        f'method = "ngram"\ndepth = {k}\ngpu = "cpu"\nworkload = "code"\ntimeout_s = 20\n' for k, s in servers.items()))
    db = tmp_path / "ab.duckdb"
    watcher = subprocess.Popen([sys.executable, "-m", "ingest", "watch", str(targets), "--interval", "1", "--db",
                                str(db), "--json"], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4)  # a baseline sample of both before any traffic
        prompts = [Prompt(text=CODE * (1 + i % 3)) for i in range(2 * PER_ARM)]
        asyncio.run(_split(servers, prompts))
        time.sleep(3)
    finally:
        watcher.send_signal(signal.SIGTERM)
        out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    assert all(t["samples"] > 5 for t in json.loads(out)["targets"])
    after = {k: _counters(s) for k, s in servers.items()}
    docs = {}
    for metric in ("acceptance_rate", "p99_tpot_ms", "output_throughput_per_gpu"):
        res = cli("analysis", "ab", "--segment", "cpu/ab", "--metric", metric, "--block", "2", "--db", str(db),
                  "--json")
        assert res.returncode == 0, res.stderr
        docs[metric] = json.loads(res.stdout)
    acc = docs["acceptance_rate"]
    arms = {acc[s]["depth"]: acc[s] for s in ("a", "b")}
    from analysis.production import deltas, load
    from ingest import store

    with store.session(db, read_only=True) as con:
        iv = deltas.intervals(load.samples(con, segments=("cpu/ab",)))
    for k in (2, 4):
        d_acc = after[k]["accepted_tokens"] - before[k]["accepted_tokens"]
        d_tok = after[k]["draft_tokens"] - before[k]["draft_tokens"]
        mine = iv.filter(iv["target"] == f"ngram-{k}")
        # the whole watch equals the server's own counter delta exactly
        assert (mine["accepted_tokens"].sum(), mine["draft_tokens"].sum()) == (d_acc, d_tok)
        assert mine["requests_ok"].sum() == PER_ARM
        # the A/B reads the blocks both arms share: close to the whole run, inside its own interval
        value = arms[k]["metrics"]["acceptance_rate"]["value"]
        lo, hi = arms[k]["metrics"]["acceptance_rate"]["ci"]
        assert lo <= value <= hi and value == pytest.approx(d_acc / d_tok, abs=0.03)
        assert 30 <= arms[k]["requests"] <= PER_ARM  # requests finished before both arms' first sample are not in it
    for metric, doc in docs.items():
        assert doc["verdict"] in ("winner", "tie"), (metric, doc.get("why"))
        lo, hi = doc["difference_ci"]
        assert lo <= doc["difference"] <= hi
        assert (doc["winner"] is not None) == (doc["verdict"] == "winner")
    # the Production page shows the readout
    from streamlit.testing.v1 import AppTest

    os.environ["SPECTUNE_DB"] = str(db)
    try:
        at = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=180)
        for k, val in {"seg": "cpu/ab", "abm": "acceptance_rate", "abblock": "5"}.items():
            at.query_params[k] = val
        at.switch_page("views/production.py")
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        text = " ".join(m.value for m in at.markdown)
        assert "A/B" in " ".join(h.value for h in at.subheader)
        assert ("**Clear:" in text) or ("**Tie**" in text) or ("Too early" in text), text
    finally:
        os.environ.pop("SPECTUNE_DB", None)
