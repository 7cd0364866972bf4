"""Format auto-detection: magic bytes, then the first character, then header names / first keys.

Order: Parquet magic -> ``parquet``; a JSON list (``[`` first) -> ``sharegpt``; JSON objects per
line -> ``mooncake`` (``input_length`` + ``output_length``), ``specbench`` (``turns``), ``sharegpt``
(``conversations``: the JSON Lines variant) or ``jsonl``
(vLLM custom ``prompt``, or well-known count names); otherwise a CSV header -> ``azure``
(``TIMESTAMP,ContextTokens,GeneratedTokens``), ``burstgpt`` (``Timestamp,Model,Request tokens,
Response tokens``) or ``csv`` (well-known names). A column mapping skips the known formats and
picks the generic reader of the file's container. Anything else is an error on line 1 that says
what was found and what was expected; so is a header that fits two formats.
"""

from __future__ import annotations

from pathlib import Path

from ingest.traces.csvread import read_header
from ingest.traces.jsonlread import first_record
from ingest.traces.limits import DEFAULT_LIMITS, Limits
from ingest.traces.mapping import AmbiguousMapping, TraceMapping, canonical, infer_mapping
from ingest.traces.source import Source, open_source

# Canonical header name -> the name as the format spells it (for messages).
AZURE_NAMES = {"timestamp": "TIMESTAMP", "contexttokens": "ContextTokens", "generatedtokens": "GeneratedTokens"}
BURSTGPT_NAMES = {"timestamp": "Timestamp", "model": "Model", "request_tokens": "Request tokens",
                  "response_tokens": "Response tokens"}
AZURE, BURSTGPT = frozenset(AZURE_NAMES), frozenset(BURSTGPT_NAMES)
JSON_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})
KNOWN_CSV = (
    "Azure (TIMESTAMP,ContextTokens,GeneratedTokens), BurstGPT (Timestamp,Model,Request tokens,"
    "Response tokens,...) or generic columns input_tokens/prompt_tokens + output_tokens/completion_tokens"
)


def _first_char(src: Source) -> str:
    text = src.head.decode("utf-8-sig", errors="replace").lstrip()
    return text[:1]


def _detect_jsonl(src: Source, mapping: TraceMapping | None) -> str:
    line, obj = first_record(src)
    if mapping is not None:
        return "jsonl"
    keys = set(obj)
    if {"input_length", "output_length"} <= keys:
        return "mooncake"
    if "turns" in keys:
        return "specbench"
    if "conversations" in keys:
        return "sharegpt"  # the JSON Lines variant: one conversation per line
    try:
        if infer_mapping(sorted(keys)) is not None:
            return "jsonl"
    except AmbiguousMapping as exc:
        raise src.fail(line, f"ambiguous keys: {exc}") from None
    shown = ", ".join(repr(k) for k in sorted(keys)[:12]) or "(none)"
    raise src.fail(line, f"unrecognised JSON keys {shown}; expected Mooncake (timestamp, input_length, "
                         "output_length), vLLM custom (prompt), Spec-Bench (turns) or a column mapping")


def _detect_csv(src: Source, mapping: TraceMapping | None) -> str:
    header = read_header(src)
    names = {canonical(n) for n in header.names}
    if mapping is not None:
        return "csv"
    is_azure, is_burst = names >= AZURE, names >= BURSTGPT
    if is_azure and is_burst:
        raise src.fail(header.line, "ambiguous header: it has both the Azure and the BurstGPT columns; "
                                    "choose the format explicitly")
    if is_azure:
        return "azure"
    if is_burst:
        return "burstgpt"
    try:
        if infer_mapping(header.names) is not None:
            return "csv"
    except AmbiguousMapping as exc:
        raise src.fail(header.line, f"ambiguous columns: {exc}") from None
    for spelled, label in ((AZURE_NAMES, "an Azure trace"), (BURSTGPT_NAMES, "a BurstGPT trace")):
        specific = set(spelled) - {"timestamp"}  # "timestamp" alone says nothing
        if names & specific and len(names & set(spelled)) >= 2:
            lacking = ", ".join(repr(spelled[n]) for n in spelled if n not in names)
            raise src.fail(header.line, f"looks like {label} but lacks column(s) {lacking}")
    shown = ", ".join(repr(n) for n in header.names[:12])
    raise src.fail(header.line, f"unrecognised columns {shown}; expected {KNOWN_CSV} (or pass a mapping)")


def detect_kind(src: Source, mapping: TraceMapping | None = None) -> str:
    """The format name for a pre-scanned source (see the module docstring for the rules)."""
    if src.is_parquet:
        return "parquet"
    first = _first_char(src)
    if first == "[":
        if mapping is not None:
            raise src.fail(1, "a JSON list document is read as ShareGPT; a column mapping does not apply")
        return "sharegpt"
    if first == "{":
        return _detect_jsonl(src, mapping)
    if src.suffix in JSON_SUFFIXES:
        raise src.fail(1, f"expected JSON (the file name ends {src.suffix}) but the file starts with {first!r}")
    if src.suffix == ".parquet":
        raise src.fail(0, "not a Parquet file (no PAR1 magic bytes); expected a Parquet trace")
    return _detect_csv(src, mapping)


def detect_format(path: str | Path, mapping: TraceMapping | None = None, limits: Limits = DEFAULT_LIMITS) -> str:
    """Format name of the trace at ``path``; raises ``InputError`` when it is unknown or unsafe."""
    with open_source(path, limits, want_parquet=True if Path(path).suffix.lower() == ".parquet" else None) as src:
        return detect_kind(src, mapping)

