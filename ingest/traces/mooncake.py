"""Mooncake trace reader (the FAST'25 release of kvcache-ai/Mooncake).

Source: github.com/kvcache-ai/Mooncake, ``FAST25-release/traces/{conversation,toolagent,synthetic}_trace.jsonl``
(and the earlier arXiv ``mooncake_trace.jsonl``, same keys per ``FAST25-release/README.md``). One JSON object per line:
``{"timestamp": <ms since the first request, int>, "input_length": int, "output_length": int,
"hash_ids": [int, ...]}``. ``hash_ids`` are 512-token prefix-block ids (shared ids = shared KV prefix);
re-scoring does not model prefix caching, so they are not read. Extra keys are ignored; a trace
without ``timestamp`` (some derived Mooncake-style files) reads with null arrival times. Like Azure's,
the workload is only in the file name: ``conversation_trace`` is chat; the tool-agent and synthetic
traces fit none of code/chat/reasoning and stay unlabelled (the prompt classifier has no text to use).
"""

from __future__ import annotations

from ingest.traces.jsonlread import scan_keys
from ingest.traces.limits import Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

KEYS = {
    "timestamp": ("timestamp", "number"),
    "input_tokens": ("input_length", "number"),
    "output_tokens": ("output_length", "number"),
}


def workload_from_name(name: str) -> str | None:
    return "chat" if "conversation" in name.lower() else None


def read_mooncake(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    raw = scan_keys(src, KEYS, limits)
    raw.timestamp_unit = "ms"
    return raw
