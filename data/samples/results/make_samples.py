"""Write the sample result files in this folder, in the real tools' output shapes (seeded, reproducible).

    python data/samples/results/make_samples.py

The numbers are *synthetic* (a small speculative-decoding model in this script, no GPU) but each file
follows its tool's layout and computes its headline figures the way the tool does:

* ``vllm_bench_eagle3_qwen_code.json`` — ``vllm bench serve --save-result --save-detailed`` (current
  ``vllm/benchmarks/serve.py`` shape): ``--metadata method=eagle3 num_speculative_tokens=3 gpu=MI300X
  workload=code``, ``--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99``, spec-decode
  keys from the server's counters, per-request arrays in seconds, two failed requests.
* ``vllm_bench_legacy_none_qwen_code.json`` — the legacy ``benchmarks/benchmark_serving.py`` shape
  (``request_goodput:`` with the colon, ``best_of``, no ``failed``/``latencies``/spec keys), default
  percentiles (p99 only, no e2el), no speculation.
* ``vllm_bench_mtp_sweep.jsonl`` — three ``--append-result`` results (max_concurrency 1, 16, 64) saved
  without ``--save-detailed`` (only ``latencies``/``queue_times`` stay per request).
* ``specbench_qwen3-8b-eagle3.jsonl`` and ``specbench_qwen3-8b-vanilla.jsonl`` — Spec-Bench answers
  (``evaluation/eval.py`` shape) for an EAGLE-3 run and its vanilla baseline.
* ``sglang_bench_speculative.jsonl`` — SGLang ``bench_speculative.py`` records (values rounded as it does).
* ``vllm_sweep_qwen/`` — a ``vllm bench sweep serve`` experiment folder (vllm/benchmarks/sweep/serve.py), bench
  command without --save-detailed: ``--serve-params`` in the dict form (``_benchmark_name`` → none, eagle3-k2,
  eagle3-k3 with a ``speculative_config`` and ``tensor_parallel_size`` 2), ``--bench-params`` max_concurrency 1
  and 16, ``--num-runs 2``: ``SERVE--<name>-BENCH--<name>/run=N.json`` (the bench result with the overrides and
  ``run_number`` merged in), ``summary.json`` per combination and ``summary.csv`` (a subset of columns).
* ``guidellm_benchmarks.json`` and ``guidellm_benchmarks.yaml`` — GuideLLM reports (GenerativeBenchmarksReport:
  ``benchmarks[].metrics`` of StatusDistributionSummary objects) for a synchronous, two concurrent and one
  constant-rate benchmark; the YAML is the same report.
* ``sglang_bench_serving.jsonl`` — ``python -m sglang.bench_serving`` records (python/sglang/bench_serving.py
  result dict) at max_concurrency 1, 8, 32 with the server's ``accept_length``, plus one without speculation
  (``accept_length`` null) at 8 is written to ``sglang_bench_serving_none.jsonl``.

The last three were added later and use their own seeded generator, so the older files stay byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261116
QWEN = "Qwen/Qwen3.5-397B-A17B"
SERVER_ERROR = ("Traceback (most recent call last):\n  File \"vllm/benchmarks/lib/endpoint_request_func.py\", "
                "line 212, in async_request_openai_completions\n    async with session.post(url=api_url, "
                "json=payload, headers=headers) as response:\n"
                "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected\n")
WORDS = ("def", "return", "for", "in", "range", "if", "else", "the", "value", "list", "result", "import")


def _simulate(rng: np.random.Generator, n: int, concurrency: int, cond: list[float], step_s: float,
              fail: tuple[int, ...] = ()) -> dict:
    """Per-request samples as vLLM's client records them (seconds; failures as RequestFuncOutput defaults)."""
    k = len(cond)
    r = np.cumprod(cond) if k else np.zeros(0)
    ins = np.clip(np.round(900 * rng.lognormal(0, 0.5, n)), 16, 8192).astype(int)
    outs = np.clip(np.round(320 * rng.lognormal(0, 0.5, n)), 8, 1024).astype(int)
    ttfts, itls, lats, out_lens, errors, texts = [], [], [], [], [], []
    drafts = accepted = 0
    per_pos = np.zeros(k, dtype=int)
    batch_slow = 1.0 + 0.012 * concurrency
    for i in range(n):
        if i in fail:
            ttfts.append(0.0), itls.append([]), lats.append(0.0), out_lens.append(0), errors.append(SERVER_ERROR)
            texts.append("")
            continue
        ttft = 0.035 + ins[i] * 2.2e-5 + (rng.exponential(0.02 * np.sqrt(concurrency)) if concurrency > 1 else 0)
        left, steps = int(outs[i]) - 1, []
        while left > 0:
            acc = int((rng.random() < r).sum()) if k else 0
            if k:
                drafts += 1
                accepted += acc
                per_pos[:acc] += 1
            left -= acc + 1
            steps.append(round(float(step_s * batch_slow * rng.lognormal(0, 0.12)), 6))
        ttfts.append(round(float(ttft), 6))
        itls.append(steps)
        lats.append(round(ttfts[-1] + float(np.sum(steps)), 6))
        out_lens.append(int(outs[i]))
        errors.append("")
        texts.append(" ".join(rng.choice(WORDS, 6)))
    starts, slots = [], [0.0] * concurrency
    for i in range(n):  # closed loop on `concurrency` client slots
        j = int(np.argmin(slots))
        starts.append(slots[j])
        slots[j] += lats[i] if lats[i] else 0.05
    base = 8412.5  # time.perf_counter() origin is arbitrary
    return {"ins": ins.tolist(), "outs": out_lens, "ttfts": ttfts, "itls": itls, "lats": lats, "errors": errors,
            "texts": texts, "starts": [round(base + s, 6) for s in starts], "duration": max(slots) + 0.004,
            "drafts": drafts, "accepted": accepted, "per_pos": per_pos.tolist(), "k": k}


def _stats(s: dict, percentiles: tuple[float, ...], metrics: tuple[str, ...]) -> dict:
    """Headline numbers exactly as vllm/benchmarks/serve.py calculate_metrics() computes them."""
    ok = [i for i, e in enumerate(s["errors"]) if not e]
    dur = s["duration"]
    total_in = sum(s["ins"][i] for i in ok)
    total_out = sum(s["outs"][i] for i in ok)
    series = {
        "ttft": [s["ttfts"][i] for i in ok],
        "tpot": [(s["lats"][i] - s["ttfts"][i]) / (s["outs"][i] - 1) for i in ok if s["outs"][i] > 1],
        "itl": [v for i in ok for v in s["itls"][i]],
        "e2el": [s["lats"][i] for i in ok],
    }
    out = {"duration": dur, "completed": len(ok), "total_input_tokens": total_in, "total_output_tokens": total_out,
           "request_throughput": len(ok) / dur, "output_throughput": total_out / dur,
           "total_token_throughput": (total_in + total_out) / dur}
    for name in metrics:
        vals = np.asarray(series[name] or [0.0])
        out[f"mean_{name}_ms"] = float(np.mean(vals) * 1000)
        out[f"median_{name}_ms"] = float(np.median(vals) * 1000)
        out[f"std_{name}_ms"] = float(np.std(vals) * 1000)
        for p in percentiles:
            word = str(int(p)) if int(p) == p else str(p)
            out[f"p{word}_{name}_ms"] = float(np.percentile(vals, p) * 1000)
    return out


def _spec(s: dict) -> dict:
    if not s["k"]:
        return {}
    d, a = s["drafts"], s["accepted"]
    return {"spec_decode_acceptance_rate": a / (d * s["k"]) * 100, "spec_decode_acceptance_length": 1 + a / d,
            "spec_decode_num_drafts": d, "spec_decode_draft_tokens": d * s["k"], "spec_decode_accepted_tokens": a,
            "spec_decode_per_position_acceptance_rates": [c / d for c in s["per_pos"]]}


def vllm_current(rng: np.random.Generator) -> dict:
    s = _simulate(rng, 120, 16, [0.82, 0.74, 0.66], 0.031, fail=(17, 88))
    ok = [i for i, e in enumerate(s["errors"]) if not e]
    head = {"date": "20261103-221405", "endpoint_type": "openai", "backend": "openai", "label": None,
            "model_id": QWEN, "tokenizer_id": QWEN, "num_prompts": 120,
            "method": "eagle3", "num_speculative_tokens": "3", "gpu": "MI300X", "workload": "code",
            "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 16}
    st = _stats(s, (50.0, 90.0, 99.0), ("ttft", "tpot", "itl", "e2el"))
    body = {k: st[k] for k in ("duration", "completed")} | {"failed": 120 - len(ok)} | {
        k: st[k] for k in ("total_input_tokens", "total_output_tokens", "request_throughput")}
    body |= {"request_goodput": None, "output_throughput": st["output_throughput"],
             "total_token_throughput": st["total_token_throughput"], "input_lens": s["ins"], "output_lens": s["outs"],
             "ttfts": s["ttfts"], "itls": s["itls"], "latencies": s["lats"], "start_times": s["starts"],
             "queue_times": [0.0] * 120, "generated_texts": s["texts"], "errors": s["errors"],
             "max_output_tokens_per_s": round(st["output_throughput"] * 1.4, 1), "max_concurrent_requests": 16,
             "rtfx": 0.0}
    return head | body | _spec(s) | {k: v for k, v in st.items() if k.startswith(("mean_", "median_", "std_", "p"))}


def vllm_legacy(rng: np.random.Generator) -> dict:
    s = _simulate(rng, 100, 16, [], 0.022)
    st = _stats(s, (99.0,), ("ttft", "tpot", "itl"))
    head = {"date": "20250214-093012", "backend": "vllm", "model_id": QWEN, "tokenizer_id": QWEN, "best_of": 1,
            "use_beam_search": False, "num_prompts": 100, "request_rate": "inf", "burstiness": 1.0,
            "max_concurrency": 16}
    body = {k: st[k] for k in ("duration", "completed", "total_input_tokens", "total_output_tokens",
                               "request_throughput")}
    body |= {"request_goodput:": None, "output_throughput": st["output_throughput"],
             "total_token_throughput": st["total_token_throughput"], "input_lens": s["ins"], "output_lens": s["outs"],
             "ttfts": s["ttfts"], "itls": s["itls"], "generated_texts": s["texts"], "errors": s["errors"]}
    return head | body | {k: v for k, v in st.items() if k.startswith(("mean_", "median_", "std_", "p"))}


def vllm_sweep(rng: np.random.Generator) -> list[dict]:
    out = []
    for c in (1, 16, 64):
        s = _simulate(rng, 64 if c < 64 else 128, c, [0.78, 0.70], 0.026)
        st = _stats(s, (99.0,), ("ttft", "tpot", "itl"))
        head = {"date": f"20261104-0{c % 10}1500", "endpoint_type": "openai-chat", "backend": "openai-chat",
                "label": "mtp-sweep", "model_id": QWEN, "tokenizer_id": QWEN, "num_prompts": len(s["ins"]),
                "method": "mtp", "gpu": "MI355X", "workload": "chat", "request_rate": "inf", "burstiness": 1.0,
                "max_concurrency": c}
        body = {k: st[k] for k in ("duration", "completed")} | {"failed": 0} | {
            k: st[k] for k in ("total_input_tokens", "total_output_tokens", "request_throughput")}
        body |= {"request_goodput": None, "output_throughput": st["output_throughput"],
                 "total_token_throughput": st["total_token_throughput"], "latencies": s["lats"],
                 "queue_times": [0.0] * len(s["lats"]),
                 "max_output_tokens_per_s": round(st["output_throughput"] * 1.3, 1),
                 "max_concurrent_requests": c, "rtfx": 0.0}
        out.append(head | body | _spec(s) | {k: v for k, v in st.items() if k.startswith(("mean_", "median_",
                                                                                            "std_", "p"))})
    return out


SPECBENCH_CATEGORIES = {  # category → (questions, turns, conditional acceptance of the EAGLE-3 draft)
    "writing": (4, 2, 0.62), "roleplay": (4, 2, 0.60), "reasoning": (4, 2, 0.70), "math": (4, 2, 0.78),
    "coding": (4, 2, 0.80), "extraction": (4, 2, 0.74), "stem": (4, 2, 0.66), "humanities": (4, 2, 0.63),
    "translation": (6, 1, 0.55), "summarization": (6, 1, 0.68), "qa": (6, 1, 0.64),
    "math_reasoning": (6, 1, 0.79), "rag": (6, 1, 0.69),
}


def specbench(rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """(EAGLE-3 answers, vanilla answers) — same questions, Spec-Bench eval.py line layout."""
    spec, vanilla, qid = [], [], 0
    for cat, (nq, turns, alpha) in SPECBENCH_CATEGORIES.items():
        for _ in range(nq):
            qid += 1
            lens = [int(np.clip(rng.lognormal(np.log(220), 0.4), 20, 1024)) for _ in range(turns)]
            choice = {"index": 0, "turns": [], "decoding_steps": [], "new_tokens": [], "wall_time": [],
                      "accept_lengths": []}
            base = {"index": 0, "turns": [], "decoding_steps": [], "new_tokens": [], "wall_time": [],
                    "accept_lengths": []}
            for n in lens:
                made, steps = 0, []
                while made < n:  # tree drafting with depth 5: accept length incl. the bonus token
                    acc = 1 + int((rng.random() < np.cumprod([alpha] * 5)).sum())
                    steps.append(acc)
                    made += acc
                choice["turns"].append(" ".join(rng.choice(WORDS, 8)))
                choice["decoding_steps"].append(len(steps))
                choice["new_tokens"].append(made)
                choice["wall_time"].append(float(0.031 + len(steps) * 0.0262 * rng.lognormal(0, 0.05)))
                choice["accept_lengths"] += steps
                base["turns"].append(choice["turns"][-1])
                base["decoding_steps"].append(made)
                base["new_tokens"].append(made)
                base["wall_time"].append(float(0.029 + made * 0.0189 * rng.lognormal(0, 0.05)))
                base["accept_lengths"] += [1] * made
            for rows, c, model in ((spec, choice, "qwen3-8b-eagle3-float16-temperature-0.0"),
                                   (vanilla, base, "qwen3-8b-vanilla-float16-temp-0.0")):
                rows.append({"question_id": qid, "category": cat, "answer_id": f"{rng.integers(1 << 62):x}"[:22],
                             "model_id": model, "choices": [c], "tstamp": 1793000000.0 + qid * 7.5})
    return spec, vanilla


def sglang(rng: np.random.Generator) -> list[dict]:
    rows = []
    configs = [(bs, st, tk, nd) for bs in (1, 4, 16) for st, tk, nd in ((0, 0, 0), (1, 1, 2), (3, 1, 4), (5, 1, 6),
                                                                       (3, 4, 8))]
    for bs, steps, topk, ndt in configs:
        base_step = 0.0105 + 0.00042 * bs
        if steps == 0:
            acc, step_time = 1.0, base_step
        else:
            alpha = 0.74 if topk == 1 else 0.81
            acc = 1 + float(np.sum(np.cumprod([alpha] * min(steps, ndt - 1)))) * rng.uniform(0.97, 1.03)
            step_time = base_step * (1.18 + 0.055 * steps + 0.012 * (ndt - 1) * bs ** 0.5)
        step_time *= rng.lognormal(0, 0.02)
        rows.append({"batch_size": bs, "steps": steps, "topk": topk, "num_draft_tokens": ndt,
                     "acc_length": round(acc, 3), "step_time": round(step_time, 5),
                     "speed": round(1 / step_time * acc, 3), "completion_tokens": 512.0})
    return rows


def _vllm_result(s: dict, n: int, c: int) -> dict:
    """A current-shape ``vllm bench serve --save-result`` result without ``--save-detailed`` (what a sweep run file
    holds when the bench command has no --save-detailed: per request only ``latencies`` and ``queue_times``)."""
    ok = [i for i, e in enumerate(s["errors"]) if not e]
    st = _stats(s, (99.0,), ("ttft", "tpot", "itl", "e2el"))
    head = {"date": "20261120-101500", "endpoint_type": "openai", "backend": "openai", "label": None,
            "model_id": QWEN, "tokenizer_id": QWEN, "num_prompts": n, "request_rate": "inf", "burstiness": 1.0,
            "max_concurrency": c}
    body = {k: st[k] for k in ("duration", "completed")} | {"failed": n - len(ok)} | {
        k: st[k] for k in ("total_input_tokens", "total_output_tokens", "request_throughput")}
    body |= {"request_goodput": None, "output_throughput": st["output_throughput"],
             "total_token_throughput": st["total_token_throughput"], "latencies": s["lats"],
             "queue_times": [0.0] * n, "max_output_tokens_per_s": round(st["output_throughput"] * 1.3, 1),
             "max_concurrent_requests": c, "rtfx": 0.0}
    return head | body | _spec(s) | {k: v for k, v in st.items() if k.startswith(("mean_", "median_", "std_", "p"))}


SWEEP_SERVE = {"none": {"tensor_parallel_size": 2},
               "eagle3-k2": {"tensor_parallel_size": 2, "speculative_config": {
                   "method": "eagle3", "model": "Tengyunw/qwen3_8b_eagle3", "num_speculative_tokens": 2}},
               "eagle3-k3": {"tensor_parallel_size": 2, "speculative_config": {
                   "method": "eagle3", "model": "Tengyunw/qwen3_8b_eagle3", "num_speculative_tokens": 3}}}
SWEEP_BENCH = {"c1": {"max_concurrency": 1}, "c16": {"max_concurrency": 16}}


def vllm_sweep_folder(rng: np.random.Generator, out: Path) -> None:
    """What ``vllm bench sweep serve --serve-params S --bench-params B --num-runs 2 -e vllm_sweep_qwen`` writes."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    summary_rows = []
    for s_name, s_params in SWEEP_SERVE.items():
        spec = s_params.get("speculative_config")
        cond = [0.80, 0.71, 0.62][: spec["num_speculative_tokens"]] if spec else []
        for b_name, b_params in SWEEP_BENCH.items():
            comb = out / f"SERVE--{s_name}-BENCH--{b_name}"  # sanitize_filename("-".join(("SERVE-", …)))
            comb.mkdir()
            runs = []
            for run_number in range(2):
                c = b_params["max_concurrency"]
                sim = _simulate(rng, 48, c, cond, 0.024 if not spec else 0.028)
                data = _vllm_result(sim, 48, c)
                data["run_number"] = run_number
                data |= {"_benchmark_name": s_name, **s_params}
                data |= {"_benchmark_name": b_name, **b_params}
                (comb / f"run={run_number}.json").write_text(json.dumps(data, indent=4))
                runs.append(data)
            (comb / "summary.json").write_text(json.dumps(runs, indent=4))
            summary_rows += runs
    cols = ("run_number", "_benchmark_name", "max_concurrency", "tensor_parallel_size", "duration", "completed",
            "output_throughput", "median_ttft_ms", "median_tpot_ms")
    lines = ["," + ",".join(cols)] + [f"{i}," + ",".join(str(r.get(c, "")) for c in cols)
                                      for i, r in enumerate(summary_rows)]
    (out / "summary.csv").write_text("\n".join(lines) + "\n")


def _distribution(values: list[float]) -> dict:
    """guidellm DistributionSummary of ``values`` (mean, median, mode, variance, std_dev, min, max, count,
    total_sum, percentiles p001 … p999)."""
    v = np.asarray(values if values else [0.0], dtype=float)
    pct = dict(zip(("p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999"),
                   (float(x) for x in np.percentile(v, [0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9])), strict=True))
    return {"mean": float(v.mean()), "median": float(np.median(v)), "mode": float(v[0]), "variance": float(v.var()),
            "std_dev": float(v.std()), "min": float(v.min()), "max": float(v.max()), "count": len(values),
            "total_sum": float(v.sum()), "percentiles": pct}


def _status(values: list[float]) -> dict:
    empty = _distribution([])
    return {"successful": _distribution(values), "incomplete": empty, "errored": empty,
            "total": _distribution(values)}


def guidellm_report(rng: np.random.Generator) -> dict:
    """A GuideLLM GenerativeBenchmarksReport with one benchmark per strategy (values from simulated requests)."""
    benchmarks = []
    for kind, param in (("synchronous", None), ("concurrent", 8), ("concurrent", 32), ("constant", 6.0)):
        c = 1 if kind == "synchronous" else (param if kind == "concurrent" else 12)
        sim = _simulate(rng, 60, int(c), [0.79, 0.70, 0.61], 0.027)
        dur = sim["duration"]
        ttft_ms = [t * 1000 for t in sim["ttfts"]]
        lat_s = list(sim["lats"])
        tpot_ms = [(lat - t) * 1000 / max(o - 1, 1) for lat, t, o in zip(sim["lats"], sim["ttfts"], sim["outs"],
                                                                         strict=True)]
        itl_ms = [x * 1000 for steps in sim["itls"] for x in steps]
        strategy = {"type_": kind}
        if kind == "concurrent":
            strategy["streams"] = param
        if kind == "constant":
            strategy |= {"rate": param, "initial_burst": True}
        out_rate = sum(sim["outs"]) / dur
        metrics = {
            "request_totals": {"successful": 60, "incomplete": 0, "errored": 0, "total": 60},
            "requests_per_second": _status([60 / dur]),
            "request_concurrency": _status([float(c) * rng.uniform(0.92, 1.0)]),
            "request_latency": _status(lat_s),
            "prompt_token_count": _status([float(x) for x in sim["ins"]]),
            "output_token_count": _status([float(x) for x in sim["outs"]]),
            "time_to_first_token_ms": _status(ttft_ms),
            "time_per_output_token_ms": _status(tpot_ms),
            "inter_token_latency_ms": _status(itl_ms),
            "output_tokens_per_second": _status([out_rate]),
            "tokens_per_second": _status([(sum(sim["ins"]) + sum(sim["outs"])) / dur]),
        }
        benchmarks.append({
            "type_": "generative_benchmark", "id_": f"{rng.integers(1 << 62):x}", "run_id": "6f1c2a",
            "run_index": len(benchmarks),
            "config": {"strategy": strategy, "backend": {"type_": "openai_http", "model": QWEN}},
            "scheduler_metrics": {"start_time": 1795000000.0, "measure_start_time": 1795000000.5,
                                  "measure_end_time": 1795000000.5 + dur, "end_time": 1795000001.0 + dur,
                                  "requests_made": {"successful": 60, "incomplete": 0, "errored": 0, "total": 60}},
            "metrics": metrics,
        })
    return {"metadata": {"version": 1, "guidellm_version": "0.5.0"}, "benchmarks": benchmarks}


def sglang_serving(rng: np.random.Generator, accept: bool) -> list[dict]:
    """``sglang.bench_serving`` result dicts (bench_serving.py: arguments, results, accept_length)."""
    rows = []
    for c in ((1, 8, 32) if accept else (8,)):
        sim = _simulate(rng, 80, c, [0.81, 0.72, 0.63] if accept else [], 0.026)
        st = _stats(sim, (99.0,), ("ttft", "tpot", "itl", "e2el"))
        itl = np.asarray([x for steps in sim["itls"] for x in steps] or [0.0]) * 1000
        acc = 1 + sim["accepted"] / sim["drafts"] if accept and sim["drafts"] else None
        rows.append({
            "backend": "sglang", "dataset_name": "sharegpt", "request_rate": float("inf"), "max_concurrency": c,
            "sharegpt_output_len": None, "random_input_len": 1024, "random_output_len": 1024,
            "random_range_ratio": 0.0, "duration": st["duration"], "completed": st["completed"],
            "total_input_tokens": st["total_input_tokens"], "total_output_tokens": st["total_output_tokens"],
            "total_output_tokens_retokenized": st["total_output_tokens"] - int(rng.integers(0, 40)),
            "request_throughput": st["request_throughput"],
            "input_throughput": st["total_input_tokens"] / st["duration"],
            "output_throughput": st["output_throughput"],
            "mean_e2e_latency_ms": st["mean_e2el_ms"], "median_e2e_latency_ms": st["median_e2el_ms"],
            "std_e2e_latency_ms": st["std_e2el_ms"], "p99_e2e_latency_ms": st["p99_e2el_ms"],
            "mean_ttft_ms": st["mean_ttft_ms"], "median_ttft_ms": st["median_ttft_ms"],
            "std_ttft_ms": st["std_ttft_ms"], "p99_ttft_ms": st["p99_ttft_ms"],
            "mean_tpot_ms": st["mean_tpot_ms"], "median_tpot_ms": st["median_tpot_ms"],
            "std_tpot_ms": st["std_tpot_ms"], "p99_tpot_ms": st["p99_tpot_ms"],
            "mean_itl_ms": float(itl.mean()), "median_itl_ms": float(np.median(itl)), "std_itl_ms": float(itl.std()),
            "p95_itl_ms": float(np.percentile(itl, 95)), "p99_itl_ms": float(np.percentile(itl, 99)),
            "concurrency": float(c) * 0.97, "accept_length": acc,
        })
    return rows


def write_later_samples() -> None:
    rng = np.random.default_rng(SEED + 13)
    vllm_sweep_folder(rng, HERE / "vllm_sweep_qwen")
    report = guidellm_report(rng)
    (HERE / "guidellm_benchmarks.json").write_text(json.dumps(report, indent=2))
    import yaml

    (HERE / "guidellm_benchmarks.yaml").write_text(yaml.safe_dump(report, sort_keys=False))
    (HERE / "sglang_bench_serving.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sglang_serving(rng, True)))
    (HERE / "sglang_bench_serving_none.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in sglang_serving(rng, False)))


def main() -> None:
    rng = np.random.default_rng(SEED)
    (HERE / "vllm_bench_eagle3_qwen_code.json").write_text(json.dumps(vllm_current(rng)))
    (HERE / "vllm_bench_legacy_none_qwen_code.json").write_text(json.dumps(vllm_legacy(rng)))
    (HERE / "vllm_bench_mtp_sweep.jsonl").write_text("\n".join(json.dumps(d) for d in vllm_sweep(rng)))
    spec, vanilla = specbench(rng)
    (HERE / "specbench_qwen3-8b-eagle3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in spec))
    (HERE / "specbench_qwen3-8b-vanilla.jsonl").write_text("".join(json.dumps(r) + "\n" for r in vanilla))
    (HERE / "sglang_bench_speculative.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sglang(rng)))
    write_later_samples()


if __name__ == "__main__":
    main()
