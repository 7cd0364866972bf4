"""BurstGPT trace reader (both the 6-column and the newer 8-column release).

Source: github.com/HPMLL/BurstGPT. ``BurstGPT_1.csv`` / ``_2.csv`` have
``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``; ``BurstGPT_3.csv``
(release v2.0) inserts ``Session ID,Elapsed time`` after Timestamp. Columns are found by *name*, so
both parse. Timestamp is seconds (integer in v1, float in v3, not zero-based); Model
(``ChatGPT`` / ``GPT-4``) becomes the shard key. Rows with ``Response tokens`` = 0 are the failed
requests the BurstGPT README describes (the ``_without_fails`` files omit them): they are dropped
and counted as ``zero_output_tokens``. Total tokens, Log Type, Session ID and Elapsed time are not
used (Elapsed time is the source system's latency, not ours).
"""

from __future__ import annotations

from ingest.traces.csvread import read_header, require_columns, scan_columns
from ingest.traces.limits import Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

COLUMNS = {
    "timestamp": "Timestamp",
    "input_tokens": "Request tokens",
    "output_tokens": "Response tokens",
    "shard": "Model",
}


def read_burstgpt(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    header = read_header(src)
    raw = scan_columns(src, header, require_columns(src, header, COLUMNS, "a BurstGPT trace"))
    raw.timestamp_unit, raw.timestamp_required = "s", True
    return raw
