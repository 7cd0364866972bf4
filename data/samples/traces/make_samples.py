"""Write the sample traces in this folder, in the real public formats' shapes (seeded, reproducible).

    python data/samples/traces/make_samples.py

The samples are *synthetic* (written by this script, not copied from any dataset) but follow each
format's published layout and rough length distributions, so the readers are exercised on the
shapes users will upload: Azure 2023 (7-digit fractions) and 2024 (UTC offset) timestamps, BurstGPT
v1 (6 columns) and v3 (8 columns, failed requests with 0 response tokens), Mooncake JSONL, a
ShareGPT list, vLLM custom JSONL, Spec-Bench questions and a generic CSV/Parquet with a tenant
column and observed speculative-decoding counters.
"""

from __future__ import annotations

import csv
import json
import math
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
SEED = 20241116

CODE_TASKS = [
    "Write a Python function that {v} a list of {n} and returns the result.",
    "Fix the bug in this {l} snippet that should {v} the {n}.",
    "Refactor the following {l} class so it can {v} {n} concurrently.",
    "Add unit tests for a function that {v} {n} in {l}.",
]
CHAT_TASKS = [
    "Can you explain how {n} work, in simple terms?",
    "Write a short, friendly email asking a colleague to {v} the {n} by Friday.",
    "What are three tips for someone who wants to {v} {n} at home?",
    "Summarise the main arguments for and against {n} in a few sentences.",
]
REASONING_TASKS = [
    "A train leaves at {h}:00 and travels {d} km at {s} km/h. When does it arrive? Reason step by step.",
    "If {d} workers build {s} walls in {h} days, how many walls do {h} workers build in {d} days?",
    "Prove that the sum of the first {d} odd numbers is a perfect square.",
]
VERBS = ["sort", "merge", "parse", "validate", "cache", "stream", "compress", "review", "plan", "grow"]
NOUNS = ["timestamps", "invoices", "user records", "log lines", "tomatoes", "orders", "graphs", "tickets"]
LANGS = ["Python", "Rust", "Go", "TypeScript", "C++"]
FILLER = [
    "the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "the", "system", "keeps",
    "every", "request", "in", "order", "and", "reports", "what", "it", "measured", "with", "care",
]


def lognormal_int(rng: random.Random, mean: float, sigma: float, lo: int, hi: int) -> int:
    """A long-tailed length with the given mean (median = mean / exp(sigma^2 / 2))."""
    return max(lo, min(hi, round(rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma))))


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(n))


def prompt(rng: random.Random, workload: str) -> str:
    pool = {"code": CODE_TASKS, "chat": CHAT_TASKS, "reasoning": REASONING_TASKS}[workload]
    text = rng.choice(pool).format(v=rng.choice(VERBS), n=rng.choice(NOUNS), l=rng.choice(LANGS),
                                   h=rng.randint(2, 9), d=rng.randint(3, 40), s=rng.randint(4, 90))
    return text + ("\n\n" + words(rng, rng.randint(5, 60)) if rng.random() < 0.5 else "")


def write_azure(rng: random.Random, path: Path, start: datetime, style: str, ctx: float, out: float) -> None:
    t = start
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
        for _ in range(500):
            t += timedelta(microseconds=rng.randint(1, 900_000))
            stamp = (t.strftime("%Y-%m-%d %H:%M:%S.%f") + "0" if style == "2023"
                     else t.strftime("%Y-%m-%d %H:%M:%S.%f") + "+00:00")
            w.writerow([stamp, lognormal_int(rng, ctx, 0.8, 3, 30_000), lognormal_int(rng, out, 0.8, 1, 4_000)])


def write_burstgpt(rng: random.Random, path: Path, v3: bool, rows: int) -> None:
    t = 19_440_110.0 if v3 else 5.0
    header = ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"]
    if v3:
        header[1:1] = ["Session ID", "Elapsed time"]
    sessions = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(20)]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for _ in range(rows):
            t += rng.randint(0, 60)
            model = "GPT-4" if rng.random() < 0.15 else "ChatGPT"
            log = "Conversation log" if rng.random() < 0.3 else "API log"
            req, resp = lognormal_int(rng, 600, 1.0, 1, 30_000), lognormal_int(rng, 250, 0.9, 1, 4_000)
            if rng.random() < 0.07:  # failed request: no response tokens (sometimes no request tokens either)
                resp, req = 0, 0 if rng.random() < 0.5 else req
            row = [f"{t:.1f}" if v3 else str(int(t)), model, req, resp, req + resp, log]
            if v3:
                row[1:1] = [rng.choice(sessions) if log == "Conversation log" else "", rng.randint(1, 90)]
            w.writerow(row)


def write_mooncake(rng: random.Random, path: Path) -> None:
    ts, next_block, prefixes = 0, 0, []
    with path.open("w") as fh:
        for _ in range(300):
            ts += rng.choice([0, 0, rng.randint(1, 3000)])
            n_in = lognormal_int(rng, 8000, 0.8, 50, 120_000)
            blocks = math.ceil(n_in / 512)
            shared = rng.choice(prefixes)[: rng.randint(1, 8)] if prefixes and rng.random() < 0.4 else []
            ids = shared + list(range(next_block, next_block + blocks - len(shared)))
            next_block += blocks - len(shared)
            prefixes.append(ids)
            fh.write(json.dumps({"timestamp": ts, "input_length": n_in,
                                 "output_length": lognormal_int(rng, 350, 0.6, 1, 2_000), "hash_ids": ids}) + "\n")


def write_sharegpt(rng: random.Random, path: Path) -> None:
    convs = []
    for i in range(40):
        turns = []
        if i == 3:
            turns.append({"from": "system", "value": "You are a helpful assistant."})
        for _ in range(rng.randint(1, 3)):
            workload = rng.choice(["code", "chat", "reasoning"])
            turns.append({"from": "human", "value": prompt(rng, workload)})
            turns.append({"from": "gpt", "value": words(rng, rng.randint(20, 300))})
        if i == 7:
            turns.append({"from": "human", "value": "谢谢！这个解释很清楚。"})  # unpaired last human turn
        convs.append({"id": f"sample{i:03d}_0", "conversations": turns})
    path.write_text(json.dumps(convs, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def write_vllm_custom(rng: random.Random, path: Path) -> None:
    with path.open("w") as fh:
        for i in range(60):
            rec: dict[str, object] = {"prompt": prompt(rng, rng.choice(["code", "chat", "reasoning"]))}
            if i % 10 != 9:  # every tenth line leaves output_tokens out (vLLM then uses its default)
                rec["output_tokens"] = lognormal_int(rng, 200, 0.7, 1, 2_000)
            fh.write(json.dumps(rec) + "\n")


SPECBENCH_CATEGORIES = [
    "writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities",
    "translation", "summarization", "qa", "math_reasoning", "rag",
]


def write_specbench(rng: random.Random, path: Path) -> None:
    qid = 81
    with path.open("w") as fh:
        for cat in SPECBENCH_CATEGORIES:
            mt_bench = SPECBENCH_CATEGORIES.index(cat) < 8
            for _ in range(3):
                kind = "code" if cat == "coding" else "reasoning" if "math" in cat or cat == "reasoning" else "chat"
                turns = [prompt(rng, kind)] + (["Now rewrite your answer more concisely."] if mt_bench else [])
                fh.write(json.dumps({"question_id": qid, "category": cat, "turns": turns}) + "\n")
                qid += 1


def generic_frame(rng: random.Random) -> pl.DataFrame:
    alpha = {"code": 0.72, "chat": 0.55, "reasoning": 0.45}
    rows, t = [], 0
    for i in range(400):
        t += rng.randint(0, 2500)
        task = rng.choice(["code", "chat", "chat", "reasoning"])
        n_out = lognormal_int(rng, {"code": 60, "chat": 220, "reasoning": 700}[task], 0.7, 1, 8_000)
        k, a = 3, alpha[task]
        tau = (1 - a ** (k + 1)) / (1 - a)  # expected tokens per verify step (Leviathan et al.)
        steps = math.ceil(n_out / tau)
        drafted, accepted = steps * k, max(0, min(steps * k, n_out - steps))
        rows.append({"request_id": f"req-{i:05d}", "arrival_ms": t, "tenant": rng.choice(["acme", "globex", "initech"]),
                     "task": task, "prompt_tokens": lognormal_int(rng, 900, 0.8, 5, 30_000),
                     "completion_tokens": n_out, "spec_draft_tokens": drafted, "spec_accepted_tokens": accepted})
    return pl.DataFrame(rows)


def main() -> None:
    rng = random.Random(SEED)
    write_azure(rng, HERE / "azure_code.csv", datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=UTC),
                "2023", 2048, 28)
    write_azure(rng, HERE / "azure_conv.csv", datetime(2024, 5, 12, 0, 0, 0, 9930, tzinfo=UTC), "2024", 1020, 250)
    write_burstgpt(rng, HERE / "burstgpt.csv", v3=True, rows=500)
    write_burstgpt(rng, HERE / "burstgpt_v1.csv", v3=False, rows=300)
    write_mooncake(rng, HERE / "mooncake.jsonl")
    write_sharegpt(rng, HERE / "sharegpt.json")
    write_vllm_custom(rng, HERE / "vllm_custom.jsonl")
    write_specbench(rng, HERE / "specbench_questions.jsonl")
    frame = generic_frame(rng)
    frame.write_csv(HERE / "generic.csv")
    frame.write_parquet(HERE / "generic.parquet", statistics=False)


if __name__ == "__main__":
    main()
