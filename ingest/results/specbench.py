"""Reader for Spec-Bench output JSONL (``evaluation/inference_*.py`` of hemingkx/Spec-Bench).

One answer per line: ``question_id, category, answer_id, model_id, choices, tstamp``; Spec-Bench's own
figures use ``choices[0]`` with per-turn lists ``new_tokens``, ``wall_time`` (s), ``decoding_steps``
(``idxs`` in inference_sps.py) and the per-decoding-step ``accept_lengths`` (tokens emitted per verify step,
bonus included; flat over turns — a list of per-turn lists is accepted too; spelled ``accept_lengths:``
by inference_sps.py at some commits). Steps are cut into turns by ``new_tokens`` (a turn's steps emit
its tokens), else by the step counts when they add up.

Mapping: each turn is one request (output tokens = new_tokens, e2e = wall_time; batch 1, so
concurrency = 1 and the window is the summed wall time). Categories become workloads (coding → code;
math_reasoning and MT-bench math/reasoning → reasoning; the other MT-bench categories → chat;
translation, summarization, qa, rag keep their names); one cell per workload. The acceptance length
τ is Spec-Bench's "#Mean accepted tokens" (mean of accept_lengths); with a known depth the acceptance
rate is (τ − 1)/depth and per-request drafted/accepted counts are kept (turns split by decoding_steps).
The method is read from ``--set method=``, else from the model_id naming (``...-eagle3-...``,
``...-vanilla-...``). The report gives Spec-Bench's own per-category tokens/s (mean over questions of
Σtokens/Σtime) and, with ``--baseline FILE`` (a vanilla run), speedup = tokens/s ÷ baseline tokens/s
(baseline tokens from its ``new_tokens``; Spec-Bench re-tokenizes the text, which needs the tokenizer).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ingest.errors import InputError
from ingest.results import dims
from ingest.results.model import ParsedCell, ParsedFile, ReadOptions, import_run
from ingest.results.source import finite, json_docs

FORMAT = "specbench"
CATEGORY_WORKLOADS = {
    "coding": "code", "math_reasoning": "reasoning", "math": "reasoning", "reasoning": "reasoning",
    "writing": "chat", "roleplay": "chat", "extraction": "chat", "stem": "chat", "humanities": "chat",
    "translation": "translation", "summarization": "summarization", "qa": "qa", "rag": "rag",
}
MT_BENCH = frozenset({"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"})
# model_id naming in Spec-Bench's scripts → vLLM method names
METHOD_HINTS = {"vanilla": "none", "baseline": "none", "eagle3": "eagle3", "eagle2": "eagle", "eagle": "eagle",
                "medusa": "medusa", "pld": "ngram", "sps": "draft_model"}


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and "question_id" in doc and "choices" in doc


@dataclass(slots=True)
class Answer:
    line: int
    category: str
    model_id: str
    new_tokens: list[int]
    wall_time: list[float]
    turn_accepts: list[list[float]] | None  # per turn, per decoding step
    accepts: list[float]  # all steps of the answer


def _ints(raw: Any, name: str, path: Path, line: int) -> list[int]:
    if not isinstance(raw, list) or not raw:
        raise InputError(path, line, f"choices[0].{name} must be a non-empty list (one entry per turn)")
    out = []
    for v in raw:
        f = finite(v)
        if f is None or f < 0 or not f.is_integer():
            raise InputError(path, line, f"choices[0].{name} must hold whole non-negative numbers, got {v!r}"[:200])
        out.append(int(f))
    return out


def _answer(path: Path, line: int, rec: Any) -> Answer:
    if not isinstance(rec, dict):
        raise InputError(path, line, f"expected a JSON object per line, got {type(rec).__name__}")
    for key in ("question_id", "category", "model_id", "choices"):
        if key not in rec:
            raise InputError(path, line, f"missing {key!r}; expected a Spec-Bench answer "
                             "(question_id, category, model_id, choices)")
    if not isinstance(rec["category"], str) or not rec["category"].strip():
        raise InputError(path, line, "'category' must be non-empty text")
    if not isinstance(rec["model_id"], str):
        raise InputError(path, line, "'model_id' must be text")
    choices = rec["choices"]
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InputError(path, line, "'choices' must be a non-empty list of objects")
    c = choices[0]
    new_tokens = _ints(c.get("new_tokens"), "new_tokens", path, line)
    raw_wall = c.get("wall_time")
    if not isinstance(raw_wall, list) or len(raw_wall) != len(new_tokens):
        raise InputError(path, line, f"choices[0].wall_time must be a list of {len(new_tokens)} numbers "
                         "(one per turn, like new_tokens)")
    wall_raw = [finite(v) for v in raw_wall]
    if any(v is None or v <= 0 for v in wall_raw):
        raise InputError(path, line, "choices[0].wall_time must hold positive seconds")
    wall = [float(v) for v in wall_raw if v is not None]
    # inference_sps.py at some Spec-Bench commits writes the key as "accept_lengths:" (colon included)
    raw_acc = c.get("accept_lengths", c.get("accept_lengths:"))
    turn_accepts = None
    accepts: list[float] = []
    if raw_acc is not None:
        if not isinstance(raw_acc, list):
            raise InputError(path, line, "choices[0].accept_lengths must be a list of numbers")
        nested = bool(raw_acc) and all(isinstance(v, list) for v in raw_acc)
        flat = [v for turn in raw_acc for v in turn] if nested else raw_acc
        vals = [finite(v) for v in flat]
        if any(v is None or v < 1 for v in vals):
            raise InputError(path, line, "choices[0].accept_lengths must hold numbers ≥ 1 (tokens per step)")
        accepts = [float(v) for v in vals if v is not None]
        if nested and len(raw_acc) == len(new_tokens):
            turn_accepts = [[float(v) for v in turn] for turn in raw_acc]
        elif not nested:
            counts = [v for k in ("decoding_steps", "idxs") if (v := _counts(c.get(k))) is not None]
            turn_accepts = _split_turns(accepts, new_tokens, counts)
    return Answer(line, rec["category"].strip(), rec["model_id"], new_tokens, wall, turn_accepts, accepts)


def _counts(raw: Any) -> list[int] | None:
    """Step counts per turn, or None: they only help cut the steps into turns, so odd values (idx = -1 for
    an empty turn) make them unusable rather than the file invalid."""
    if not isinstance(raw, list):
        return None
    vals = [finite(v) for v in raw]
    if any(v is None or not v.is_integer() for v in vals):
        return None
    return [int(v) for v in vals if v is not None]


def _split_turns(accepts: list[float], new_tokens: list[int], counts: list[list[int]]) -> list[list[float]] | None:
    """The flat per-step accept lengths cut into turns, or None when the file gives no consistent cut.

    Each step emits ``accept_length`` tokens, so a turn's steps add up to its ``new_tokens``: that cut is
    used first. ``decoding_steps`` is not reliable for it (inference_pld.py writes new_tokens − 1 there,
    inference_sps.py writes ``idxs``, the last step index); a step count per turn is used only when the
    counts add up to the number of steps.
    """
    out: list[list[float]] = []
    i = 0
    for n in new_tokens:
        start, total = i, 0.0
        while total < n and i < len(accepts):
            total += accepts[i]
            i += 1
        if total != n:
            break
        out.append(accepts[start:i])
    else:
        if i == len(accepts):
            return out
    for steps in counts:
        for candidate in (steps, [k + 1 for k in steps]):  # idxs: step index of the last step (= steps - 1)
            if len(candidate) == len(new_tokens) and sum(candidate) == len(accepts):
                bounds = np.cumsum([0, *candidate])
                return [accepts[bounds[t]:bounds[t + 1]] for t in range(len(candidate))]
    return None


CHOICE_KEYS = frozenset({"new_tokens", "wall_time", "accept_lengths", "accept_lengths:", "decoding_steps", "idxs"})


def keep(path: tuple[str | int, ...], is_array: bool) -> bool:
    """Build ``choices[0]``'s per-turn figures only: the answer text (``turns``), other choices and unknown
    arrays/objects are streamed past."""
    return path[0] == "choices" and (len(path) == 1 or (path[1] == 0 and (len(path) == 2 or path[2] in CHOICE_KEYS)))


def answers(path: Path) -> tuple[str, list[Answer]]:
    """(sha256, the answers)."""
    file_hash, docs = json_docs(path, keep)
    out = [_answer(path, doc.line, doc.value) for doc in docs]
    if not out:
        raise InputError(path, 0, "no answers")
    return file_hash, out


def method_from_model_id(model_id: str) -> str | None:
    tokens = model_id.lower().replace("_", "-").split("-")
    return next((METHOD_HINTS[t] for t in tokens if t in METHOD_HINTS), None)


def tokens_per_s(rows: list[Answer]) -> float | None:
    """Spec-Bench's speed: mean over answers of Σ new_tokens / Σ wall_time."""
    return float(np.mean([sum(a.new_tokens) / sum(a.wall_time) for a in rows])) if rows else None


def category_figures(rows: list[Answer], baseline: list[Answer] | None) -> list[dict[str, Any]]:
    groups: dict[str, list[Answer]] = defaultdict(list)
    for a in rows:
        groups[a.category].append(a)
    base: dict[str, list[Answer]] = defaultdict(list)
    for a in baseline or []:
        base[a.category].append(a)
    named = [(c, groups[c], base.get(c, [])) for c in sorted(groups)]
    named.append(("mt_bench", [a for a in rows if a.category in MT_BENCH],
                  [a for a in baseline or [] if a.category in MT_BENCH]))
    named.append(("overall", rows, list(baseline or [])))
    out = []
    for cat, sel, bsel in named:
        if not sel:
            continue
        acc = [v for a in sel for v in a.accepts]
        tps, btps = tokens_per_s(sel), tokens_per_s(bsel)
        workload = None if cat in ("mt_bench", "overall") else CATEGORY_WORKLOADS.get(cat, cat)
        out.append({"category": cat, "workload": workload, "answers": len(sel),
                    "acceptance_length": float(np.mean(acc)) if acc else None, "tokens_per_s": tps,
                    "baseline_tokens_per_s": btps, "speedup": tps / btps if tps and btps else None})
    return out


def _cell_requests(rows: list[Answer], depth: int) -> pl.DataFrame:
    out_tokens, e2e, drafted, accepted = [], [], [], []
    counted = depth > 0 and all(a.turn_accepts is not None for a in rows)
    for a in rows:
        for t in range(len(a.new_tokens)):
            out_tokens.append(a.new_tokens[t])
            e2e.append(a.wall_time[t] * 1e3)
            if counted:
                steps = (a.turn_accepts or [])[t]
                drafted.append(len(steps) * depth)
                accepted.append(sum(s - 1 for s in steps))
    e2e_arr = np.asarray(e2e)
    frame = {"request_index": np.arange(len(e2e), dtype=np.int32), "output_tokens": out_tokens, "e2e_ms": e2e_arr,
             "start_s": np.concatenate([[0.0], np.cumsum(e2e_arr)[:-1] / 1e3])}  # batch 1: back to back
    if counted:
        frame.update(drafted_tokens=drafted, accepted_tokens=accepted)
    return pl.DataFrame(frame)


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    file_hash, rows = answers(path)
    models = sorted({a.model_id for a in rows})
    if len(models) > 1:
        first = next(a for a in rows if a.model_id != rows[0].model_id)
        raise InputError(path, first.line, f"model_id {first.model_id!r} differs from {rows[0].model_id!r} on "
                         "an earlier line; expected one Spec-Bench run per file")
    baseline = answers(opts.baseline)[1] if opts.baseline else None
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=import_run(path, FORMAT, file_hash))
    found: dict[str, Any] = {"model": models[0], "concurrency": 1, "method": method_from_model_id(models[0])}
    by_workload: dict[str, list[Answer]] = defaultdict(list)
    for a in rows:
        workload = opts.overrides.get("workload") or CATEGORY_WORKLOADS.get(a.category.lower(), a.category.lower())
        by_workload[workload].append(a)
    for workload, sel in by_workload.items():
        key, gpu_count = dims.resolve({**found, "workload": workload}, opts.overrides, parsed.warnings)
        acc = [v for a in sel for v in a.accepts]
        headline: dict[str, Any] = {}
        if acc and key.method != "none":
            tau = float(np.mean(acc))
            headline["acceptance_length"] = tau
            if key.depth > 0:
                headline["acceptance_rate"] = (tau - 1.0) / key.depth
        window = float(sum(sum(a.wall_time) for a in sel))
        parsed.cells.append(ParsedCell(key=key, requests=_cell_requests(sel, key.depth), window_s=window,
                                       gpu_count=gpu_count, headline=headline))
    parsed.warnings[:] = list(dict.fromkeys(parsed.warnings))
    parsed.summary = {"model_id": models[0], "method": parsed.cells[0].key.method,
                      "categories": category_figures(rows, baseline),
                      "baseline": str(opts.baseline) if opts.baseline else None}
    parsed.run.notes = f"Spec-Bench output model_id={models[0]} answers={len(rows)}"
    parsed.run.gpu_model, parsed.run.gpu_count = parsed.cells[0].key.gpu, parsed.cells[0].gpu_count
    return parsed
