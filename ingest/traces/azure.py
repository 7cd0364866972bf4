"""Azure LLM inference trace (2023 Splitwise and 2024 DynamoLLM releases) reader.

Source: github.com/Azure/AzurePublicDataset, ``AzureLLMInferenceTrace_{code,conv}.csv`` (2023, one
hour) and ``AzureLLMInferenceTrace_{code,conv}_1week.csv`` (2024). Header
``TIMESTAMP,ContextTokens,GeneratedTokens``; TIMESTAMP is a wall-clock date-time (2023:
``2023-11-16 18:17:03.9799600``, 7 fractional digits, no zone; 2024:
``2024-05-10 00:00:00.009930+00:00``); ContextTokens are prompt tokens, GeneratedTokens output
tokens. Code and conversation files share the shape; which one a file is shows only in its name, so
a file name containing ``code`` defaults the workload to ``code`` and ``conv`` to ``chat`` (an
explicit workload wins).
"""

from __future__ import annotations

from ingest.traces.csvread import read_header, require_columns, scan_columns
from ingest.traces.limits import Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

COLUMNS = {"timestamp": "TIMESTAMP", "input_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"}


def workload_from_name(name: str) -> str | None:
    """Azure publishes one file per workload and says which only in the name (``..._code``, ``..._conv``)."""
    stem = name.lower()
    if "code" in stem:
        return "code"
    if "conv" in stem:
        return "chat"
    return None


def read_azure(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    header = read_header(src)
    raw = scan_columns(src, header, require_columns(src, header, COLUMNS, "an Azure LLM inference trace"))
    raw.timestamp_unit, raw.timestamp_required = "datetime", True
    return raw
