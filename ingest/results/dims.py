"""A cell's dimensions for an imported file: ``--set key=value`` first, then the file's own metadata, else unknown.

Result files rarely carry every spectune dimension (a ``vllm bench serve`` file knows its model and
``max_concurrency`` but not the GPU or workload). Resolution order per dimension: the user's ``--set``,
the value the reader found in the file (metadata keys, model id, ...), a family inferred from the model
name, and finally ``unknown`` (text), ``0`` (depth) or NULL (concurrency: "load not stated") with a warning, so
nothing is guessed silently.
"""

from __future__ import annotations

import csv
from functools import cache
from typing import Any

from ingest import labels
from ingest.errors import UsageError
from ingest.paths import DATA_DIR
from ingest.records import KNOWN_METHODS, CellKey

SETTABLE: tuple[str, ...] = ("method", "depth", "family", "model", "workload", "gpu", "concurrency", "gpu_count")
INT_KEYS: frozenset[str] = frozenset({"depth", "concurrency", "gpu_count"})
UNKNOWN = "unknown"
MODELS_CSV = DATA_DIR / "models.csv"
MAX_DEPTH = 64
MAX_LABEL = 200
# Families seen in published results beyond the configured ones, so common model ids resolve.
EXTRA_FAMILIES: tuple[str, ...] = ("Llama", "Vicuna", "DeepSeek", "gpt-oss", "GLM", "Mistral")


class BadDimension(UsageError):
    """A dimension value from a file fails the check ``--set`` applies; ``key`` is the file's key for it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def problem(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for dimension ``key`` (None: fine). The one check for every route a
    value comes by: ``--set``, a file's metadata, a model id read from a result."""
    text = str(value).strip()
    if not text or (isinstance(value, bool) and key not in INT_KEYS):
        return "expected a value"
    if len(text) > MAX_LABEL or labels.unsafe(text):
        # control characters (NUL, newlines) and bidi overrides would garble or spoof labels in charts,
        # reports and CSV exports
        return f"expected a printable value of at most {MAX_LABEL} characters"
    if key in INT_KEYS:
        # ASCII digits only: str.isdigit() also accepts '²' (int() raises) and '٣' (read as 3)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            text = str(value)
        if not (text.isascii() and text.isdigit() and len(text) <= 9) or (key == "depth" and int(text) > MAX_DEPTH):
            return "expected a whole number" + (f" ≤ {MAX_DEPTH}" if key == "depth" else "")
    return None


def parse_sets(items: list[str]) -> dict[str, str]:
    """``["method=eagle3", "depth=3"]`` → a validated dict (bad keys or values are usage errors)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or not value:
            raise UsageError(f"--set {item!r}: expected key=value")
        if key not in SETTABLE:
            raise UsageError(f"--set {key}: unknown key (expected one of {', '.join(SETTABLE)})")
        why = problem(key, value)
        if why is not None:
            shown = value if key in INT_KEYS and len(value) <= 20 and not labels.unsafe(value) else None
            raise UsageError(f"--set {key}{'=' + shown if shown else ''}: {why}")
        out[key] = value
    return out


@cache
def known_families() -> tuple[str, ...]:
    names: list[str] = []
    if MODELS_CSV.exists():
        with open(MODELS_CSV, newline="", encoding="utf-8") as fh:
            names = [row["family"] for row in csv.DictReader(fh) if row.get("family")]
    names += [f for f in EXTRA_FAMILIES if f not in names]
    return tuple(sorted(names, key=len, reverse=True))  # longest first: "gpt-oss" before "gpt"


def family_from_model(model: str | None) -> str | None:
    if not model:
        return None
    low = model.lower()
    return next((f for f in known_families() if f.lower() in low), None)


def resolve(found: dict[str, Any], overrides: dict[str, str], warnings: list[str],
            where: str = "", hints: dict[str, str] | None = None) -> tuple[CellKey, int]:
    """The cell key and GPU count from overrides > file values > inference > unknown (with a warning).

    A file value that fails :func:`problem` raises :class:`BadDimension` (the reader names its line).

    ``hints`` replaces "not in the file" in the warning for a dimension the file does mention, but
    without a usable value (e.g. vLLM's ``max_concurrency: null``)."""
    values = {k: v for k, v in found.items() if v is not None and v != ""}
    for name, value in values.items():  # file values pass the check --set values pass
        if name in SETTABLE and (why := problem(name, value)) is not None:
            raise BadDimension(name, f"{where + ': ' if where else ''}{name} {labels.shown(str(value))} "
                                     f"from the file: {why}")
    values.update(overrides)
    prefix = f"{where}: " if where else ""
    hints = hints or {}

    def text(name: str) -> str:
        if name in values:
            return str(values[name]).strip()
        warnings.append(f"{prefix}{name} not in the file; stored as '{UNKNOWN}' (pass --set {name}=...)")
        return UNKNOWN

    method = text("method").lower()
    if method not in KNOWN_METHODS and method != UNKNOWN:
        warnings.append(f"{prefix}method {method!r} is not one of {', '.join(KNOWN_METHODS)}")
    model = text("model")
    if "family" not in values:
        inferred = family_from_model(model if model != UNKNOWN else None)
        if inferred:
            values["family"] = inferred
    family = text("family")
    workload = text("workload").lower()
    gpu = text("gpu")
    if "depth" in values:
        depth = int(values["depth"])
    else:
        depth = 0
        if method != "none":
            warnings.append(f"{prefix}depth not in the file; stored as 0 (pass --set depth=...)")
    concurrency: int | None
    if "concurrency" in values:
        concurrency = int(values["concurrency"])
    else:
        concurrency = None  # "load not stated": never 0, never pooled with a stated load
        why = hints.get("concurrency", "concurrency not in the file")
        warnings.append(f"{prefix}{why}; stored as load not stated (pass --set concurrency=...)")
    gpu_count = int(values.get("gpu_count", 0) or 0)
    return CellKey(method, depth, family, model, workload, gpu, concurrency), gpu_count
