"""vllm bench serve result files (current, legacy, --append-result) imported through the real CLI into real stores."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.conftest import cli
from tests.ingest.results.conftest import SAMPLES, counts

CURRENT = SAMPLES / "vllm_bench_eagle3_qwen_code.json"
LEGACY = SAMPLES / "vllm_bench_legacy_none_qwen_code.json"
SWEEP = SAMPLES / "vllm_bench_mtp_sweep.jsonl"
LAT = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}


def _import(db: Path, *args: str) -> dict:
    res = cli("ingest", "results", *args, "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _rows(db: Path, sql: str, params: list | None = None) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql, params=params).pl().to_dicts()
    finally:
        con.close()


def test_current_shape_headline_as_given(empty_db: Path) -> None:
    doc = json.loads(CURRENT.read_text())
    out = _import(empty_db, str(CURRENT))["files"][0]
    assert (out["format"], out["rows"], out["duplicates"], out["requests"]) == ("vllm_bench", 1, 0, 120)
    assert out["summary"]["shape"] == "current" and out["warnings"] == []
    cell = _rows(empty_db, "SELECT * FROM cells")[0]
    # dimensions from --metadata keys, model_id, max_concurrency; family inferred from the model name
    assert (cell["method"], cell["depth"], cell["gpu"], cell["workload"], cell["concurrency"]) == (
        "eagle3", 3, "MI300X", "code", 16)
    assert (cell["family"], cell["model"]) == ("Qwen", doc["model_id"])
    # every headline number exactly as the file gives it (float equality: stored, not recomputed)
    assert cell["output_throughput"] == doc["output_throughput"]
    assert cell["request_throughput"] == doc["request_throughput"]
    assert cell["window_s"] == doc["duration"]
    assert cell["output_tokens"] == doc["total_output_tokens"]
    for short, col in LAT.items():
        for q in (50, 90, 99):
            assert cell[f"p{q}_{col}"] == doc[f"p{q}_{short}_ms"], (q, col)
    assert cell["mean_ttft_ms"] == doc["mean_ttft_ms"] and cell["mean_e2e_ms"] == doc["mean_e2el_ms"]
    assert cell["acceptance_rate"] == pytest.approx(doc["spec_decode_acceptance_rate"] / 100, rel=1e-15)
    assert cell["acceptance_length"] == doc["spec_decode_acceptance_length"]
    assert (cell["drafts"], cell["draft_tokens"], cell["accepted_tokens"]) == (
        doc["spec_decode_num_drafts"], doc["spec_decode_draft_tokens"], doc["spec_decode_accepted_tokens"])
    assert (cell["n_requests"], cell["n_failed"]) == (120, doc["failed"])
    pos = _rows(empty_db, "SELECT acceptance FROM positions ORDER BY position")
    assert [p["acceptance"] for p in pos] == doc["spec_decode_per_position_acceptance_rates"]


def test_requests_from_arrays_failed_requests_kept(empty_db: Path) -> None:
    doc = json.loads(CURRENT.read_text())
    _import(empty_db, str(CURRENT))
    reqs = _rows(empty_db, "SELECT * FROM requests ORDER BY request_index")
    assert len(reqs) == len(doc["ttfts"]) == 120
    failed = [r["request_index"] for r in reqs if not r["ok"]]
    assert failed == [i for i, e in enumerate(doc["errors"]) if e]
    assert all("ServerDisconnectedError" in reqs[i]["error"] for i in failed)
    ok = [r for r in reqs if r["ok"]]
    i = ok[5]["request_index"]
    assert ok[5]["ttft_ms"] == pytest.approx(doc["ttfts"][i] * 1000, abs=1e-9)
    assert ok[5]["e2e_ms"] == pytest.approx(doc["latencies"][i] * 1000, abs=1e-9)
    assert ok[5]["tpot_ms"] == pytest.approx((doc["latencies"][i] - doc["ttfts"][i]) * 1000
                                             / (doc["output_lens"][i] - 1), rel=1e-9)
    assert ok[5]["start_s"] == pytest.approx(doc["start_times"][i] - min(doc["start_times"]), abs=1e-9)
    # per-request samples give confidence intervals: 200 bootstrap replicates around the point estimate
    boot = _rows(empty_db, "SELECT output_throughput, p99_e2e_ms FROM cell_bootstrap")
    tput = np.array([b["output_throughput"] for b in boot])
    assert len(boot) == 200 and np.isfinite(tput).all()
    assert abs(np.median(tput) / doc["output_throughput"] - 1) < 0.05


def test_provenance_and_second_import_adds_nothing(empty_db: Path) -> None:
    first = _import(empty_db, str(CURRENT))["files"][0]
    before = counts(empty_db)
    run = _rows(empty_db, "SELECT * FROM runs")[0]
    assert run["backend"] == "import" and run["importer"] == "vllm_bench"
    assert run["file_hash"] == hashlib.sha256(CURRENT.read_bytes()).hexdigest()
    assert run["source"] == str(CURRENT) and run["started_at"] is not None
    assert run["run_id"] == first["run_id"]
    again = _import(empty_db, str(CURRENT))["files"][0]
    assert (again["rows"], again["duplicates"], again["requests"]) == (0, 1, 0)
    assert again["already_imported_as"] == first["run_id"]
    assert counts(empty_db) == before


def test_legacy_shape_recomputes_only_what_the_file_lacks(empty_db: Path) -> None:
    doc = json.loads(LEGACY.read_text())
    assert "request_goodput:" in doc and "failed" not in doc
    out = _import(empty_db, str(LEGACY), "--set", "method=none", "--set", "gpu=MI300X", "--set",
                  "workload=code")["files"][0]
    assert out["summary"]["shape"] == "legacy" and out["warnings"] == []
    cell = _rows(empty_db, "SELECT * FROM cells")[0]
    assert (cell["method"], cell["depth"], cell["family"], cell["concurrency"]) == ("none", 0, "Qwen", 16)
    # given by the file: p99 and median (= p50) of TTFT/TPOT/ITL, means
    for short, col in (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("itl", "itl_ms")):
        assert cell[f"p99_{col}"] == doc[f"p99_{short}_ms"]
        assert cell[f"p50_{col}"] == doc[f"median_{short}_ms"]
    # not in the file: recomputed from the arrays as vLLM would (e2e = TTFT + Σ ITL on the same clock)
    ok = [i for i, e in enumerate(doc["errors"]) if not e]
    ttft = np.array([doc["ttfts"][i] for i in ok]) * 1000
    e2e = np.array([doc["ttfts"][i] + sum(doc["itls"][i]) for i in ok]) * 1000
    itl = np.concatenate([doc["itls"][i] for i in ok]) * 1000
    assert cell["p90_ttft_ms"] == pytest.approx(np.percentile(ttft, 90), rel=1e-12)
    assert cell["p99_e2e_ms"] == pytest.approx(np.percentile(e2e, 99), rel=1e-12)
    assert cell["p90_itl_ms"] == pytest.approx(np.percentile(itl, 90), rel=1e-12)
    assert cell["acceptance_rate"] is None and cell["output_throughput"] == doc["output_throughput"]


def test_append_result_sweep_is_one_cell_per_result(empty_db: Path) -> None:
    docs = [json.loads(line) for line in SWEEP.read_text().splitlines()]
    out = _import(empty_db, str(SWEEP))["files"][0]
    assert out["rows"] == 3 and out["requests"] == sum(len(d["latencies"]) for d in docs)
    # method from --metadata, depth from the spec-decode counters (draft tokens / drafts = 2)
    assert len([w for w in out["warnings"] if "only latencies per request" in w]) == 3
    cells = _rows(empty_db, "SELECT * FROM cells ORDER BY concurrency")
    assert [c["concurrency"] for c in cells] == [1, 16, 64]
    for cell, doc in zip(cells, docs, strict=True):
        assert (cell["method"], cell["depth"], cell["gpu"], cell["workload"]) == ("mtp", 2, "MI355X", "chat")
        assert cell["output_throughput"] == doc["output_throughput"]
        assert cell["p99_tpot_ms"] == doc["p99_tpot_ms"]
        assert cell["p99_e2e_ms"] == pytest.approx(np.percentile(np.array(doc["latencies"]) * 1000, 99), rel=1e-12)
        assert cell["acceptance_length"] == doc["spec_decode_acceptance_length"]


def test_unknown_dimensions_warn_and_set_fills_them(empty_db: Path, tmp_path: Path) -> None:
    doc = json.loads(LEGACY.read_text())
    for k in ("model_id", "max_concurrency"):
        doc.pop(k)
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(doc))
    res = cli("ingest", "results", str(path), "--db", str(empty_db))
    assert res.returncode == 0, res.stderr
    warned = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    for dim in ("method", "family", "model", "workload", "gpu", "concurrency"):
        assert any(f"{dim} not in the file" in w for w in warned), dim
    cell = _rows(empty_db, "SELECT * FROM cells")[0]
    assert (cell["method"], cell["gpu"], cell["concurrency"]) == ("unknown", "unknown", None)  # load not stated
    bad = cli("ingest", "results", str(LEGACY), "--db", str(empty_db), "--set", "depth=three")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --set depth=three: expected a whole number ≤ 64"


def test_imported_cell_is_usable_by_winners_next_to_default_data(default_copy: Path) -> None:
    """Same dimensions as the simulated eagle3:3 cell → same cell id: the newer, measured row takes its place."""
    from analysis.frames import Filters, cells
    from analysis.winners import winners
    from ingest import store

    doc = json.loads(CURRENT.read_text())
    _import(default_copy, str(CURRENT))
    group = Filters(gpus=("MI300X",), families=("Qwen",), workloads=("code",), concurrency=(16,))
    eagle3_3 = Filters(**{**{k: getattr(group, k) for k in group.__slots__}, "methods": ("eagle3",),
                          "depth_min": 3, "depth_max": 3})
    with store.session(default_copy, read_only=True) as con:
        frame = cells(con, group)
        res = winners(con, "output_throughput", group)
        only = winners(con, "output_throughput", eagle3_3)
        n_sim = con.execute("SELECT count(*) FROM cells JOIN runs USING (run_id) WHERE backend = 'sim' AND "
                            "gpu = 'MI300X' AND family = 'Qwen' AND workload = 'code' AND concurrency = 16"
                            ).fetchall()[0][0]
    # the file measured Qwen3.5-397B; the default data simulates the post's Qwen3.5-122B: model is a dimension, so
    # the imported cell sits beside the simulated ones in a group of its own model, never competing with them
    assert frame.height == n_sim + 1 and set(frame["backend"].to_list()) == {"sim", "import"}
    imported = frame.filter(frame["backend"] == "import")
    assert imported.height == 1 and imported["output_throughput"][0] == doc["output_throughput"]
    assert res["backends"] == ["import", "sim"] and len(res["cells"]) == 2
    assert {c["model"] for c in res["cells"]} == {"Qwen/Qwen3.5-397B-A17B", "Qwen/Qwen3.5-122B-A10B"}
    [w] = [c for c in only["cells"] if c["backend"] == "import"]
    assert (w["backend"], w["winner"]["method"], w["winner"]["depth"]) == ("import", "eagle3", 3)
    # the file's own figure is the whole window (what vllm bench reports); the winner rule decides on the steady one
    assert w["winner"]["whole_window_value"] == pytest.approx(doc["output_throughput"], abs=1e-6)
    assert w["winner"]["ci_low"] < w["winner"]["value"] < w["winner"]["ci_high"]


def test_latency_only_results_mark_zero_latency_requests_failed(empty_db: Path, tmp_path: Path) -> None:
    """Without --save-detailed only `latencies` stay; vLLM leaves 0.0 there for a failed request."""
    doc = json.loads(SWEEP.read_text().splitlines()[0])
    doc["latencies"][3] = 0.0
    doc["completed"] -= 1
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc))
    out = _import(empty_db, str(path))["files"][0]
    assert not any("successful requests in the arrays" in w for w in out["warnings"])
    reqs = _rows(empty_db, "SELECT request_index, ok, e2e_ms FROM requests WHERE NOT ok")
    assert [(r["request_index"], r["e2e_ms"]) for r in reqs] == [(3, None)]
    cell = _rows(empty_db, "SELECT n_requests, n_failed FROM cells")[0]
    assert (cell["n_requests"], cell["n_failed"]) == (len(doc["latencies"]), 1)


def _strict_json(text: str) -> dict:
    """The CLI's report as a strict JSON reader (jq, JavaScript) sees it: no NaN/Infinity literals."""
    def refuse(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


def _percentile_stats(doc: dict, metric: str, value: float) -> None:
    """Set every statistic vLLM writes for ``metric`` (mean/median/std/pNN_<metric>_ms)."""
    stat = re.compile(rf"(mean|median|std|p\d+(\.\d+)?)_{metric}_ms")
    for key in [k for k in doc if stat.fullmatch(k)]:
        doc[key] = value


def test_every_request_failed_lands_a_failed_cell(empty_db: Path, tmp_path: Path) -> None:
    """vllm/benchmarks/serve.py writes the result even when every request failed ("All requests failed"):
    success=False outputs keep ttft/latency 0.0, itl [], output_len 0, and every statistic is computed over
    `[] or 0` = 0 ms. That is a failed cell, not a cell with 0 ms latencies (and the import must not crash)."""
    doc = json.loads(CURRENT.read_text())
    n = len(doc["ttfts"])
    err = "Traceback (most recent call last):\n  ...\naiohttp.client_exceptions.ClientConnectorError: Connect refused\n"
    doc.update(completed=0, failed=n, total_output_tokens=0, output_throughput=0.0, request_throughput=0.0,
               total_token_throughput=0.0, output_lens=[0] * n, ttfts=[0.0] * n, itls=[[] for _ in range(n)],
               latencies=[0.0] * n, errors=[err] * n, generated_texts=[""] * n)
    for metric in ("ttft", "tpot", "itl", "e2el"):
        _percentile_stats(doc, metric, 0.0)
    for k in [k for k in doc if k.startswith("spec_decode_")]:
        doc.pop(k)
    path = tmp_path / "all_failed.json"
    path.write_text(json.dumps(doc))
    out = _import(empty_db, str(path))["files"][0]
    assert out["rows"] == 1 and out["summary"]["results"][0]["status"] == "failed"
    assert any(f"all {n} requests failed: aiohttp.client_exceptions.ClientConnectorError" in w
               for w in out["warnings"])
    cell = _rows(empty_db, "SELECT * FROM cells")[0]
    assert cell["status"] == "failed" and cell["error"].startswith(f"all {n} requests failed: aiohttp")
    assert (cell["n_requests"], cell["n_failed"]) == (n, n)
    for col in ("p50_ttft_ms", "p99_ttft_ms", "p99_tpot_ms", "p99_itl_ms", "p99_e2e_ms", "mean_ttft_ms",
                "mean_e2e_ms"):
        assert cell[col] is None, col  # not the 0 ms vLLM computes over an empty sample
    assert _rows(empty_db, "SELECT count(*) AS n FROM requests WHERE ok")[0]["n"] == 0
    assert _rows(empty_db, "SELECT count(*) AS n FROM cell_bootstrap")[0]["n"] == 0


def test_zero_ms_statistics_of_empty_samples_are_not_stored(empty_db: Path, tmp_path: Path) -> None:
    """`--max-tokens 1`-style runs: no request has > 1 output token, so vLLM's TPOT list and ITL list are
    empty and it writes mean/median/p99 = 0.0 ms. Those are not measured latencies."""
    doc = json.loads(SWEEP.read_text().splitlines()[0])
    for metric in ("tpot", "itl"):
        _percentile_stats(doc, metric, 0.0)
    path = tmp_path / "one_token.json"
    path.write_text(json.dumps(doc))
    out = _import(empty_db, str(path))["files"][0]
    assert any("TPOT, ITL statistics are 0 ms" in w for w in out["warnings"]), out["warnings"]
    cell = _rows(empty_db, "SELECT * FROM cells")[0]
    assert (cell["p99_tpot_ms"], cell["p50_tpot_ms"], cell["mean_tpot_ms"], cell["p99_itl_ms"]) == (
        None, None, None, None)
    assert cell["p99_ttft_ms"] == doc["p99_ttft_ms"] and cell["p50_ttft_ms"] == doc["median_ttft_ms"]


def test_request_rate_infinity_keeps_the_report_strict_json(empty_db: Path, tmp_path: Path) -> None:
    """A float inf request_rate / burstiness is written by json.dump as the bare literal `Infinity` (vLLM
    writes the string "inf" for request_rate, older scripts and --burstiness inf the float)."""
    doc = json.loads(SWEEP.read_text().splitlines()[0])
    doc["request_rate"], doc["burstiness"] = float("inf"), float("inf")
    path = tmp_path / "infinity.json"
    path.write_text(json.dumps(doc))
    assert "Infinity" in path.read_text()
    res = cli("ingest", "results", str(path), "--db", str(empty_db), "--json")
    assert res.returncode == 0, res.stderr
    out = _strict_json(res.stdout)["files"][0]
    assert out["summary"]["results"][0]["request_rate"] == "inf"
    assert _rows(empty_db, "SELECT output_throughput FROM cells")[0]["output_throughput"] == doc["output_throughput"]


def test_null_max_concurrency_says_so(empty_db: Path, tmp_path: Path) -> None:
    doc = json.loads(SWEEP.read_text().splitlines()[0])
    doc["max_concurrency"] = None  # vllm bench serve without --max-concurrency
    path = tmp_path / "no_limit.json"
    path.write_text(json.dumps(doc))
    out = _import(empty_db, str(path))["files"][0]
    assert any("'max_concurrency' is null (no client-side limit; request_rate inf); stored as load not stated" in w
               for w in out["warnings"]), out["warnings"]
    assert not any("concurrency not in the file" in w for w in out["warnings"])
    assert _rows(empty_db, "SELECT concurrency FROM cells")[0]["concurrency"] is None  # load not stated
    other = tmp_path / "other.duckdb"
    again = _import(other, str(path), "--set", "concurrency=64")["files"][0]
    assert not any("max_concurrency" in w for w in again["warnings"])
    assert _rows(other, "SELECT concurrency FROM cells")[0]["concurrency"] == 64


def test_v03_request_inthroughput_spelling(empty_db: Path, tmp_path: Path) -> None:
    """benchmarks/benchmark_serving.py before v0.4 saved request throughput as `request_inthroughput`,
    with only headline figures (no per-request arrays)."""
    doc = {"date": "20240301-120000", "backend": "vllm", "version": "N/A", "model_id": "meta-llama/Llama-2-7b-hf",
           "tokenizer_id": "meta-llama/Llama-2-7b-hf", "best_of": 1, "use_beam_search": False, "num_prompts": 200,
           "request_rate": "inf", "duration": 61.2, "completed": 200, "total_input_tokens": 45000,
           "total_output_tokens": 41000, "request_inthroughput": 3.2679, "input_throughput": 735.29,
           "output_throughput": 669.93, "mean_ttft_ms": 2100.5, "median_ttft_ms": 1900.2, "p99_ttft_ms": 5200.1,
           "mean_tpot_ms": 55.3, "median_tpot_ms": 52.1, "p99_tpot_ms": 120.7}
    path = tmp_path / "v03.json"
    path.write_text(json.dumps(doc))
    _import(empty_db, str(path), "--set", "method=none", "--set", "concurrency=200")
    cell = _rows(empty_db, "SELECT * FROM cells")[0]
    assert cell["request_throughput"] == doc["request_inthroughput"]
    assert (cell["output_throughput"], cell["p50_ttft_ms"], cell["p99_tpot_ms"]) == (
        doc["output_throughput"], doc["median_ttft_ms"], doc["p99_tpot_ms"])
    assert (cell["n_requests"], cell["n_failed"]) == (200, 0)


def _pooling_result() -> dict:
    """vllm/benchmarks/serve.py, TaskType.POOLING: no output tokens, no output_throughput."""
    return {"date": "20260301-101010", "endpoint_type": "openai-embeddings", "backend": "openai-embeddings",
            "label": None, "model_id": "BAAI/bge-m3", "tokenizer_id": "BAAI/bge-m3", "num_prompts": 4,
            "request_rate": "inf", "burstiness": 1.0, "max_concurrency": None, "duration": 1.2, "completed": 4,
            "total_input_tokens": 400, "total_input_sequences": 4, "request_throughput": 3.3,
            "input_sequence_throughput": 3.3, "total_token_throughput": 333.3, "latencies": [0.1] * 4,
            "queue_times": [0.0] * 4, "mean_e2el_ms": 100.0, "median_e2el_ms": 100.0, "std_e2el_ms": 0.0,
            "p99_e2el_ms": 100.0}


def _pytorch_records() -> list:
    """vllm/benchmarks/lib/utils.py convert_to_pytorch_benchmark_format: one record per metric."""
    doc = json.loads(SWEEP.read_text().splitlines()[0])
    extra = {k: v for k, v in doc.items() if k != "p99_ttft_ms"}
    return [{"benchmark": {"name": "vLLM benchmark", "extra_info": {"args": {"model": doc["model_id"]}}},
             "model": {"name": doc["model_id"]},
             "metric": {"name": "p99_ttft_ms", "benchmark_values": [doc["p99_ttft_ms"]], "extra_info": extra}}]


@pytest.mark.parametrize(("name", "content", "message"), [
    ("embed.json", _pooling_result, "a vllm bench serve result of a pooling (embedding/score) model"),
    ("run.pytorch.json", _pytorch_records, "vLLM's PyTorch-benchmark-format copy of a result"),
])
def test_look_alike_files_are_refused_with_what_they_are(name: str, content, message: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(content()))
    db = tmp_path / "store.duckdb"
    res = cli("ingest", "results", str(path), "--db", str(db))
    assert res.returncode == 2 and res.stdout == ""
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {path}:1: {message}"), err
    if name.endswith(".pytorch.json"):
        assert err.endswith("import the result file itself (run.json)")
    assert not db.exists() or counts(db)["cells"] == 0
