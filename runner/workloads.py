"""Workloads: the requests a cell sends — built-in prompt sets, a user's dataset, or a replayed trace.

A matrix workload's ``source`` names one of:

- a built-in prompt set under ``data/workloads/`` (``code``, ``chat``, ``reasoning``; JSONL, written for
  spectune): prompts are shuffled with a seed from the workload name and cycled to the request count;
- a prompt dataset: ShareGPT JSON (first human turn of each conversation), JSONL with a ``prompt``
  field (optional per-line ``max_tokens``/``output_tokens``), or Spec-Bench ``question.jsonl``
  (``question_id, category, turns``: the first turn);
- a traffic trace to replay (any format ``ingest.traces.read_trace`` reads: Azure, BurstGPT, Mooncake,
  generic CSV/JSONL/Parquet with timestamps): request *i* goes out at its arrival time with the
  trace's output length as ``max_tokens``; its prompt text when the trace has one, else text of about
  the trace's input length synthesized from the built-in sets (estimated here; the vLLM backend fits it
  to the server's tokenizer through ``/tokenize``, and vLLM reports the exact count).

``format`` is ``auto`` (by name, suffix and first line), ``builtin``, ``prompts``, ``sharegpt``,
``specbench``, ``trace``, or a trace format name. ``request_rate`` turns a prompt set into Poisson
arrivals, and rescales a trace's arrival times to that mean rate (keeping its bursts). Relative paths
resolve against the matrix file's folder. Bad files raise ``InputError``.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ingest.errors import InputError
from ingest.paths import DATA_DIR
from ingest.traces import read_trace
from runner.matrix import WorkloadSpec
from runner.vllm.client import Prompt

BUILTIN_DIR = DATA_DIR / "workloads"
PROMPT_FORMATS = ("builtin", "prompts", "sharegpt", "specbench")
MAX_DATASET_BYTES = 512 * 1024 * 1024  # prompt datasets are read whole; traces stream with their own limits
# The trace readers' own token estimate (ingest.traces.tokens): ~4 chars/token blended with 4/3 tokens/word.
CHARS_PER_TOKEN, TOKENS_PER_WORD = 4.0, 4.0 / 3.0


@dataclass(slots=True)
class WorkloadRequests:
    """The prompts of one workload, in send order, and arrival times when the load is open-loop.

    ``synth`` holds, per prompt, (the input length a trace asked for, the filler offset) when its text was
    synthesized (None for real text), so the text can be re-made once the server's tokenizer is known
    (:meth:`resynthesized`).
    """

    name: str
    prompts: list[Prompt]
    arrival_times_s: list[float] | None
    source: str  # what was read, for logs and run notes
    synth: list[tuple[int, int] | None] | None = None

    def head(self, n: int) -> WorkloadRequests:
        return self.slice(0, n, shift=False)

    def slice(self, start: int, stop: int, shift: bool = True) -> WorkloadRequests:
        """Requests [start, stop) — a later batch of an adaptive cell, arrival times shifted to 0."""
        times = None
        if self.arrival_times_s is not None:
            part = self.arrival_times_s[start:stop]
            times = [t - part[0] for t in part] if part and shift else part
        synth = self.synth[start:stop] if self.synth is not None else None
        return WorkloadRequests(self.name, self.prompts[start:stop], times, self.source, synth)

    def resynthesized(self, tokens_per_estimate: float) -> WorkloadRequests:
        """Synthesized prompts re-made so that, at ``tokens_per_estimate`` real tokens per estimated token
        (measured on the server's tokenizer), each holds about the trace's input length in real tokens."""
        if not self.synth or not any(self.synth) or tokens_per_estimate <= 0:
            return self
        words = filler_words()
        prompts = [p if s is None else replace(p, text=synth_prompt(max(1, round(s[0] / tokens_per_estimate)),
                                                                    words, offset=s[1]))
                   for p, s in zip(self.prompts, self.synth, strict=True)]
        return WorkloadRequests(self.name, prompts, self.arrival_times_s, self.source, self.synth)


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.jsonl"))


def resolve_source(spec: WorkloadSpec, base_dir: Path | None) -> tuple[str, Path]:
    """(kind, path): kind is a PROMPT_FORMATS entry or ``trace:<format>``."""
    src = spec.source or spec.name
    fmt = spec.format
    builtin = BUILTIN_DIR / f"{src}.jsonl"
    if fmt in ("auto", "builtin") and "/" not in src and builtin.is_file():
        return "builtin", builtin
    if fmt == "builtin":
        raise InputError(src, 0, f"workload {spec.name}: no built-in prompt set {src!r} "
                                 f"(built-ins: {', '.join(builtin_names())})")
    path = Path(src).expanduser()
    if not path.is_absolute() and base_dir is not None and (base_dir / path).exists():
        path = base_dir / path
    if not path.is_file():
        close = difflib.get_close_matches(src, builtin_names(), n=1, cutoff=0.6) if "/" not in src else []
        hint = f"; did you mean the built-in {close[0]!r}?" if close else ""
        raise InputError(src, 0, f"workload {spec.name}: no such file, and not a built-in prompt set "
                                 f"({', '.join(builtin_names())}){hint}")
    if fmt in ("prompts", "jsonl-prompts", "sharegpt", "specbench"):
        return ("prompts" if fmt == "jsonl-prompts" else fmt), path
    if fmt == "trace":
        return "trace:auto", path
    if fmt != "auto":
        return f"trace:{fmt}", path
    return _detect(path), path


def _detect(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".json"):
        return "sharegpt"
    if name.endswith(".jsonl"):
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    try:
                        obj = json.loads(raw)
                    except ValueError:
                        break
                    if isinstance(obj, dict) and "turns" in obj:
                        return "specbench"
                    if isinstance(obj, dict) and "prompt" in obj and not ({"timestamp", "arrival_time"} & set(obj)):
                        return "prompts"
                    break
    return "trace:auto"


def _read_text(path: Path) -> str:
    if path.stat().st_size > MAX_DATASET_BYTES:
        raise InputError(path, 0, f"prompt dataset larger than {MAX_DATASET_BYTES // 2**20} MB")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(path, 0, "expected UTF-8 text") from None


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_prompt_jsonl(path: Path, kind: str) -> list[Prompt]:
    """JSONL of ``{"prompt": ...}`` (``prompts``/``builtin``) or Spec-Bench ``{"turns": [...]}``."""
    out = []
    for line_no, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InputError(path, line_no, f"expected one JSON object per line ({exc.args[0]})") from None
        if not isinstance(obj, dict):
            raise InputError(path, line_no, "expected a JSON object")
        if kind == "specbench":
            turns = obj.get("turns")
            if not isinstance(turns, list) or not turns or not isinstance(turns[0], str) or not turns[0].strip():
                raise InputError(path, line_no, "expected 'turns': a non-empty list of strings (Spec-Bench)")
            out.append(Prompt(text=turns[0]))
            continue
        text = obj.get("prompt")
        if not isinstance(text, str) or not text.strip():
            raise InputError(path, line_no, "expected a non-empty string field 'prompt'")
        tokens = _positive_int(obj.get("max_tokens")) or _positive_int(obj.get("output_tokens"))
        out.append(Prompt(text=text, max_tokens=tokens, expected_output_tokens=tokens))
    return out


def read_sharegpt(path: Path) -> list[Prompt]:
    """The first human turn of each ShareGPT conversation (``conversations`` of ``{from, value}``)."""
    try:
        data = json.loads(_read_text(path))
    except ValueError as exc:
        raise InputError(path, getattr(exc, "lineno", 0), f"expected ShareGPT JSON ({exc.args[0]})") from None
    if not isinstance(data, list):
        raise InputError(path, 1, "expected a JSON list of conversations (ShareGPT)")
    out = []
    for conv in data:
        turns = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(turns, list):
            continue
        first = next((t.get("value") for t in turns if isinstance(t, dict)
                      and t.get("from") in ("human", "user") and isinstance(t.get("value"), str)), None)
        if first and first.strip():
            out.append(Prompt(text=first))
    return out


@functools.cache
def filler_words() -> list[str]:
    words: list[str] = []
    for path in sorted(BUILTIN_DIR.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                words += json.loads(line)["prompt"].split()
    return words


def synth_prompt(tokens: int, words: list[str], offset: int) -> str:
    """Text estimated at ``tokens`` tokens: built-in words from ``offset`` on (so prompts differ)."""
    picked: list[str] = []
    chars = -1
    i = offset
    while True:
        w = words[i % len(words)]
        est = 0.5 * (chars + 1 + len(w)) / CHARS_PER_TOKEN + 0.5 * (len(picked) + 1) * TOKENS_PER_WORD
        if picked and est > tokens:
            break
        picked.append(w)
        chars += 1 + len(w)
        i += 1
    return " ".join(picked)


def read_trace_requests(path: Path, fmt: str, n: int) -> tuple[list[Prompt], list[float] | None, list[str],
                                                               list[tuple[int, int] | None]]:
    """The first ``n`` requests of a trace: prompts (text or synthesized), arrival times, warnings, and per
    prompt (target input tokens, filler offset) where the text was synthesized."""
    tf = read_trace(path, fmt)
    frame = tf.frame.head(n)
    if frame.height == 0:
        raise InputError(path, 0, "trace has no usable requests")
    words = filler_words()
    prompts: list[Prompt] = []
    synth: list[tuple[int, int] | None] = []
    for row in frame.iter_rows(named=True):
        out = int(row["output_tokens"]) if row["output_tokens"] else None
        text = row["prompt"]
        if text:
            synth.append(None)
        else:
            target, offset = max(1, int(row["input_tokens"] or 1)), int(row["request_index"]) * 97
            text = synth_prompt(target, words, offset=offset)
            synth.append((target, offset))
        prompts.append(Prompt(text=text, max_tokens=out, expected_output_tokens=out))
    ts = frame["timestamp_s"]
    times = ts.to_list() if ts.null_count() == 0 else None
    notes = list(tf.warnings)
    if synthesized := sum(s is not None for s in synth):
        notes.append(f"{synthesized} prompts synthesized to the trace's input lengths (fitted to the server's "
                     f"tokenizer when it has /tokenize)")
    return prompts, times, notes, synth


def _seed(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


def poisson_arrivals(n: int, rate: float, seed: int) -> list[float]:
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, n)
    gaps[0] = 0.0
    return np.cumsum(gaps).tolist()


def rescale_arrivals(times: list[float], rate: float) -> tuple[list[float], str]:
    """A trace's arrival times stretched or squeezed to a mean of ``rate`` requests/s, keeping its shape
    (bursts and lulls) — how a production trace is replayed faster or slower than it was recorded."""
    origin = min(times)
    span = max(times) - origin
    if len(times) < 2 or span <= 0:
        return [t - origin for t in times], f"arrival times kept (no span to rescale to {rate:g} req/s)"
    recorded = (len(times) - 1) / span
    factor = recorded / rate
    return ([(t - origin) * factor for t in times],
            f"arrival times scaled x{factor:.3g} to {rate:g} req/s (recorded {recorded:.3g} req/s)")


def load_workload(spec: WorkloadSpec, n: int, base_dir: Path | None = None) -> WorkloadRequests:
    """``n`` requests of a workload in send order (a trace shorter than ``n`` gives all it has)."""
    kind, path = resolve_source(spec, base_dir)
    if kind.startswith("trace:"):
        prompts, times, notes, synth = read_trace_requests(path, kind.split(":", 1)[1], n)
        if times is not None and spec.request_rate:
            times, note = rescale_arrivals(times, spec.request_rate)
            notes.append(note)
        source = f"trace {path}" + (f" ({'; '.join(notes)})" if notes else "")
        return WorkloadRequests(spec.name, prompts, times, source, synth)
    pool = read_sharegpt(path) if kind == "sharegpt" else read_prompt_jsonl(path, kind)
    if not pool:
        raise InputError(path, 0, f"workload {spec.name}: no prompts found ({kind})")
    order = np.random.default_rng(_seed(spec.name)).permutation(len(pool))
    reps = math.ceil(n / len(pool))
    prompts = [pool[i] for i in np.tile(order, reps)[:n]]
    times = poisson_arrivals(n, spec.request_rate, _seed(spec.name) + 1) if spec.request_rate else None
    return WorkloadRequests(spec.name, prompts, times, f"{kind} {path}")
