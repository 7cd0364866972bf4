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


def main() -> None:
    rng = np.random.default_rng(SEED)
    (HERE / "vllm_bench_eagle3_qwen_code.json").write_text(json.dumps(vllm_current(rng)))
    (HERE / "vllm_bench_legacy_none_qwen_code.json").write_text(json.dumps(vllm_legacy(rng)))
    (HERE / "vllm_bench_mtp_sweep.jsonl").write_text("\n".join(json.dumps(d) for d in vllm_sweep(rng)))
    spec, vanilla = specbench(rng)
    (HERE / "specbench_qwen3-8b-eagle3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in spec))
    (HERE / "specbench_qwen3-8b-vanilla.jsonl").write_text("".join(json.dumps(r) + "\n" for r in vanilla))
    (HERE / "sglang_bench_speculative.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sglang(rng)))


if __name__ == "__main__":
    main()
