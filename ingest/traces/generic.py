"""Generic CSV and JSONL traces: any columns, told apart by a :class:`TraceMapping`.

With an explicit mapping, exactly those columns are read (a mapped column missing from a CSV header
is an error on the header line; a mapped JSON key missing on a line is a missing value there). With
no mapping, well-known names are used (:func:`ingest.traces.mapping.infer_mapping`). This is also the
vLLM custom-dataset reader: ``{"prompt": text, "output_tokens": int (optional)}`` per line, the
format of ``vllm bench serve --dataset-name custom``; input tokens are then estimated from the prompt
and a missing output count takes vLLM's ``--custom-output-len`` default (256), with a warning.
"""

from __future__ import annotations

from ingest.errors import InputError
from ingest.traces.csvread import read_header, require_columns, scan_columns
from ingest.traces.jsonlread import first_record, scan_keys
from ingest.traces.limits import Limits
from ingest.traces.mapping import AUTO_UNIT, AmbiguousMapping, TraceMapping, infer_mapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

FIELD_KINDS = {
    "input_tokens": "number",
    "output_tokens": "number",
    "drafted_tokens": "number",
    "accepted_tokens": "number",
    "workload": "label",
    "shard": "label",
    "prompt": "text",
}
EXPECTED = "input_tokens/prompt_tokens and output_tokens/completion_tokens, or a prompt column"


def resolve_mapping(src: Source, names: list[str], mapping: TraceMapping | None, line: int) -> TraceMapping:
    """The given mapping (checked) or one inferred from well-known names; errors name ``line``."""
    if mapping is None:
        try:
            mapping = infer_mapping(names)
        except AmbiguousMapping as exc:
            raise src.fail(line, f"ambiguous columns: {exc}") from None
        if mapping is None:
            shown = ", ".join(repr(n) for n in names[:12])
            raise src.fail(line, f"unrecognised columns {shown}; expected {EXPECTED} (or pass a mapping)")
    if problems := mapping.problems():
        raise InputError(src.path, 0, f"bad column mapping: {problems[0]}")
    if mapping.output_tokens is None and mapping.input_tokens is not None:
        raise src.fail(line, "no output token column; expected output_tokens/completion_tokens (or a mapping)")
    return mapping


def _finish(raw: RawTable, mapping: TraceMapping) -> RawTable:
    raw.timestamp_unit = mapping.timestamp_unit
    raw.default_output = mapping.input_tokens is None  # prompt-only traces behave like vLLM custom
    return raw


def read_generic_csv(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    header = read_header(src)
    m = resolve_mapping(src, header.names, mapping, header.line)
    return _finish(scan_columns(src, header, require_columns(src, header, m.columns(), "the column mapping")), m)


def read_generic_jsonl(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    line, first = first_record(src)
    m = resolve_mapping(src, list(first), mapping, line)
    keys = {fld: (col, FIELD_KINDS.get(fld, "number")) for fld, col in m.columns().items()}
    if "timestamp" in keys:
        unit = m.timestamp_unit
        keys["timestamp"] = (keys["timestamp"][0], "text" if unit == "datetime" else "label" if unit == AUTO_UNIT
                             else "number")
    if m.input_tokens is None and m.output_tokens is None:
        keys["output_tokens"] = ("output_tokens", "number")  # vLLM custom: optional on any line
    return _finish(scan_keys(src, keys, limits), m)
