"""Size and value caps for trace uploads: the numbers that keep hostile or broken files bounded.

Every reader takes a :class:`Limits`; the defaults are what the CLI and the dashboard use. They are
generous enough for the real public traces (the Azure 2024 conversation week is ~1.1 GB, ShareGPT V3
is ~0.7 GB) and small enough that a 2 GB upload of junk, a zip bomb or a 5 MB line fails fast with a
clear error instead of exhausting memory.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps applied while reading one trace file."""

    max_file_bytes: int = 4 * GiB  # on-disk size, checked before any byte is read
    max_decompressed_bytes: int = 4 * GiB  # for .gz input: stops zip bombs while inflating
    max_line_bytes: int = 1 * MiB  # CSV / JSONL physical line; a ShareGPT document is exempt
    max_json_bytes: int = 1 * GiB  # whole-document JSON (ShareGPT); its text ends up in memory
    max_json_element_bytes: int = 64 * MiB  # one ShareGPT conversation
    max_tokens_per_request: int = 10_000_000  # larger counts are corrupt data, and overflow Int32 maths
    max_backwards_s: float = 3600.0  # arrivals may be out of order by this much; more is an error
    warn_span_s: float = 366 * 86_400.0  # first to last arrival: longer is a wrong unit or garbage (a warning)
    default_output_tokens: int = 256  # vLLM's --custom-output-len / --spec-bench-output-len default
    file_cap_hint: str = ""  # appended to the over-size error: which setting holds max_file_bytes (ingest.caps)


DEFAULT_LIMITS = Limits()
