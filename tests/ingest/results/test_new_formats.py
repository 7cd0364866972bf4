"""vllm bench sweep folders, GuideLLM reports and SGLang bench_serving results: the samples written from each
tool's writer code (data/samples/results/make_samples.py) land with the tool's own numbers, and broken files
exit 2 with one line and change nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from ingest.results.detect import detect
from tests.conftest import cli
from tests.ingest.results.conftest import SAMPLES, counts

SWEEP = SAMPLES / "vllm_sweep_qwen"
GUIDE_JSON = SAMPLES / "guidellm_benchmarks.json"
GUIDE_YAML = SAMPLES / "guidellm_benchmarks.yaml"
SGL = SAMPLES / "sglang_bench_serving.jsonl"
SETS = ("--set", "family=Qwen", "--set", "gpu=MI300X", "--set", "workload=chat")


def _cells(db: Path) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql("SELECT c.*, r.importer, r.backend FROM cells c JOIN runs r USING (run_id)").pl().to_dicts()
    finally:
        con.close()


def _import(db: Path, *args: str):
    return cli("ingest", "results", *args, "--db", str(db), "--json")


def test_formats_are_detected():
    assert detect(SWEEP) == "vllm_sweep" and detect(SWEEP.parent / "vllm_sweep_qwen") == "vllm_sweep"
    assert detect(GUIDE_JSON) == detect(GUIDE_YAML) == "guidellm"
    assert detect(SGL) == "sglang_serving"


def test_sweep_one_cell_per_combination_and_run(tmp_path):
    db = tmp_path / "s.duckdb"
    res = _import(db, str(SWEEP), *SETS)
    assert res.returncode == 0, res.stderr
    files = json.loads(res.stdout)["files"]
    assert len(files) == 2 and all(f["format"] == "vllm_sweep" and f["rows"] == 6 for f in files)  # run=0, run=1
    cells = _cells(db)
    assert len({c["run_id"] for c in cells}) == 2
    got = {(c["run_id"], c["method"], c["depth"], c["concurrency"]) for c in cells}
    assert len(got) == 12
    assert {(m, d) for _, m, d, _ in got} == {("none", 0), ("eagle3", 2), ("eagle3", 3)}
    assert {c["concurrency"] for c in cells} == {1, 16} and {c["gpu_count"] for c in cells} == {2}
    for c in cells:  # each cell carries its run file's own numbers
        serve = "none" if c["method"] == "none" else f"eagle3-k{c['depth']}"
        comb = SWEEP / f"SERVE--{serve}-BENCH--c{c['concurrency']}"
        runs = json.loads((comb / "summary.json").read_text())
        assert any(abs(r["output_throughput"] - c["output_throughput"]) < 1e-9 for r in runs)
    again = _import(db, str(SWEEP), *SETS)
    assert again.returncode == 0 and counts(db)["cells"] == 12  # the same folder twice adds nothing


def test_guidellm_json_and_yaml_give_the_same_cells(tmp_path):
    report = json.loads(GUIDE_JSON.read_text())
    for path in (GUIDE_JSON, GUIDE_YAML):
        db = tmp_path / f"{path.suffix[1:]}.duckdb"
        res = _import(db, str(path), *SETS, "--set", "method=eagle3", "--set", "depth=3")
        assert res.returncode == 0, res.stderr
        assert "no speculative-decoding acceptance" in res.stderr
        cells = sorted(_cells(db), key=lambda c: c["concurrency"])
        measured = round(report["benchmarks"][3]["metrics"]["request_concurrency"]["successful"]["mean"])
        assert sorted([c["concurrency"] for c in cells]) == sorted([1, 8, 32, measured])  # constant rate: measured
        assert "no fixed concurrency" in res.stderr
        by_c = {b["config"]["strategy"].get("streams", 1): b for b in report["benchmarks"][:3]}
        for c in cells:
            assert c["acceptance_rate"] is None and c["acceptance_length"] is None
            b = by_c.get(c["concurrency"])
            if b is None:
                continue
            m = b["metrics"]
            assert c["output_throughput"] == pytest.approx(m["output_tokens_per_second"]["successful"]["mean"])
            assert c["p99_ttft_ms"] == pytest.approx(m["time_to_first_token_ms"]["successful"]["percentiles"]["p99"])
            assert c["p50_e2e_ms"] == pytest.approx(m["request_latency"]["successful"]["percentiles"]["p50"] * 1000)
            assert c["model"] == "Qwen/Qwen3.5-397B-A17B" and c["n_requests"] == 60


def test_sglang_bench_serving_accept_length(tmp_path):
    db = tmp_path / "s.duckdb"
    res = _import(db, str(SGL), *SETS, "--set", "method=eagle3", "--set", "depth=3", "--set", "model=Qwen/Qwen3-8B")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in SGL.read_text().splitlines()]
    cells = {c["concurrency"]: c for c in _cells(db)}
    assert set(cells) == {r["max_concurrency"] for r in rows}
    for r in rows:
        c = cells[r["max_concurrency"]]
        assert c["acceptance_length"] == pytest.approx(r["accept_length"])
        assert c["acceptance_rate"] == pytest.approx((r["accept_length"] - 1) / 3)
        assert c["p99_e2e_ms"] == pytest.approx(r["p99_e2e_latency_ms"])
        assert c["p50_tpot_ms"] == pytest.approx(r["median_tpot_ms"])
    none = tmp_path / "n.duckdb"
    res = _import(none, str(SAMPLES / "sglang_bench_serving_none.jsonl"), *SETS, "--set", "model=Qwen/Qwen3-8B")
    assert res.returncode == 0 and [c["method"] for c in _cells(none)] == ["none"]


def test_sglang_result_named_as_vllm_is_refused_with_what_it_is(tmp_path):
    res = cli("ingest", "results", str(SGL), "--format", "vllm_bench", "--db", str(tmp_path / "s.duckdb"))
    assert res.returncode == 2 and "--format sglang_serving" in res.stderr and len(res.stderr.splitlines()) == 1


def _broken_sweep(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "sweep"
    shutil.copytree(SWEEP, folder)
    run = folder / "SERVE--eagle3-k2-BENCH--c16" / "run=1.json"
    doc = json.loads(run.read_text())
    if name == "truncated":
        run.write_text(run.read_text()[:500])
    elif name == "bad_spec":
        doc["speculative_config"] = {"method": "eagle3", "num_speculative_tokens": -1}
        run.write_text(json.dumps(doc))
    elif name == "missing_duration":
        del doc["duration"]
        run.write_text(json.dumps(doc))
    elif name == "collision":  # two combinations that differ in nothing spectune keeps
        shutil.copytree(folder / "SERVE--eagle3-k2-BENCH--c16", folder / "SERVE--eagle3-k2b-BENCH--c16")
    return folder


def _broken_guidellm(tmp_path: Path, name: str) -> Path:
    report = json.loads(GUIDE_JSON.read_text())
    path = tmp_path / "benchmarks.json"
    if name == "truncated":
        path.write_text(GUIDE_JSON.read_text()[:1000])
        return path
    if name == "no_throughput":
        del report["benchmarks"][1]["metrics"]["output_tokens_per_second"]
    elif name == "negative_ttft":
        report["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]["p99"] = -3
    elif name == "not_a_summary":
        report["benchmarks"][0]["metrics"]["time_to_first_token_ms"] = 12.5
    elif name == "yaml":
        path = tmp_path / "benchmarks.yaml"
        path.write_text("benchmarks:\n  - metrics: {output_tokens_per_second: [1, 2\n")
        return path
    path.write_text(json.dumps(report))
    return path


def _broken_sglang(tmp_path: Path, name: str) -> Path:
    rows = [json.loads(line) for line in SGL.read_text().splitlines()]
    if name == "accept_below_one":
        rows[1]["accept_length"] = 0.4
    elif name == "bad_concurrency":
        rows[0]["max_concurrency"] = "sixteen"
    elif name == "missing_e2e":
        del rows[2]["mean_e2e_latency_ms"]
        path = tmp_path / "sgl.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path
    elif name == "padded":
        path = tmp_path / "sgl.jsonl"
        path.write_text("\n\n" + SGL.read_text() + "\n   \n" + "[1, 2]\n")
        return path
    path = tmp_path / "sgl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("make", "name", "needle"), [
    (_broken_sweep, "truncated", "invalid JSON"),
    (_broken_sweep, "bad_spec", "num_speculative_tokens"),
    (_broken_sweep, "missing_duration", "missing duration"),
    (_broken_sweep, "collision", "same cell as"),
    (_broken_guidellm, "truncated", "invalid JSON"),
    (_broken_guidellm, "no_throughput", "output_tokens_per_second"),
    (_broken_guidellm, "negative_ttft", "non-negative"),
    (_broken_guidellm, "not_a_summary", "status distribution summary"),
    (_broken_guidellm, "yaml", "invalid YAML"),
    (_broken_sglang, "accept_below_one", "accept_length"),
    (_broken_sglang, "bad_concurrency", "max_concurrency"),
    (_broken_sglang, "missing_e2e", ":3: not a sglang.bench_serving result: missing mean_e2e_latency_ms"),
    (_broken_sglang, "padded", "expected a JSON object per line"),
])
def test_broken_files_exit_2_one_line_nothing_written(tmp_path, make, name, needle):
    path = make(tmp_path, name)
    db = tmp_path / "store.duckdb"
    res = cli("ingest", "results", str(path), *SETS, "--db", str(db))
    assert res.returncode == 2 and res.stdout == "", res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and needle in err, err
    assert not db.exists() or counts(db)["cells"] == 0


def test_padded_files_still_import(tmp_path):
    """A BOM and blank lines around a GuideLLM report, and stray files in a sweep folder, change nothing."""
    guide = tmp_path / "benchmarks.json"
    guide.write_bytes(b"\xef\xbb\xbf\n\n" + GUIDE_JSON.read_bytes() + b"\n\n  \n")
    folder = tmp_path / "sweep"
    shutil.copytree(SWEEP, folder)
    (folder / "notes.txt").write_text("sweep of 2026-11-20\n")
    (folder / "SERVE--none-BENCH--c1" / "warmup.json").write_text("{}")
    for path, extra in ((guide, ("--set", "method=eagle3", "--set", "depth=3")), (folder, ())):
        db = tmp_path / f"{path.name}.duckdb"
        res = _import(db, str(path), *SETS, *extra)
        assert res.returncode == 0, res.stderr
        assert counts(db)["cells"] == (4 if path == guide else 12)
    assert "skipped 1 warm-up/failure file" in res.stderr
