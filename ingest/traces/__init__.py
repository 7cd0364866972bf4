"""Traffic-trace readers: many public formats in, one normalised polars schema out.

    from ingest.traces import read_trace, TraceMapping
    tf = read_trace("AzureLLMInferenceTrace_code.csv")          # format auto-detected
    tf.frame        # polars DataFrame in TRACE_SCHEMA, one row per request
    tf.summary()    # requests, workload_mix, shards, duration_s, means, dropped, warnings

Formats (``FORMATS``): azure, burstgpt, mooncake, sharegpt, jsonl (vLLM custom / mapped), specbench,
csv and parquet (generic, with a :class:`TraceMapping`). Bad input raises
:class:`ingest.errors.InputError` with the file, the line and what was expected. See docs/traces.md.
"""

from ingest.errors import InputError
from ingest.traces.detect import detect_format
from ingest.traces.limits import DEFAULT_LIMITS, Limits
from ingest.traces.mapping import TIMESTAMP_UNITS, TraceMapping
from ingest.traces.registry import FORMAT_CHOICES, FORMATS, TraceFormat, read_trace
from ingest.traces.schema import TRACE_SCHEMA, TraceFrame, empty_trace
from ingest.traces.tokens import estimate_tokens, estimate_tokens_expr

__all__ = [
    "DEFAULT_LIMITS",
    "FORMATS",
    "FORMAT_CHOICES",
    "TIMESTAMP_UNITS",
    "TRACE_SCHEMA",
    "InputError",
    "Limits",
    "TraceFormat",
    "TraceFrame",
    "TraceMapping",
    "detect_format",
    "empty_trace",
    "estimate_tokens",
    "estimate_tokens_expr",
    "read_trace",
]
