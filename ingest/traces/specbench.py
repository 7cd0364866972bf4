"""Spec-Bench question file reader (``data/spec_bench/question.jsonl`` of hemingkx/Spec-Bench).

One JSON object per line: ``{"question_id": int, "category": str, "turns": [str, ...]}``. Each turn
is one request whose prompt is the turn text (earlier turns are not prepended: the input length of
a second turn is understated). The file has no output lengths, so each request gets vLLM's
``--spec-bench-output-len`` default (256), with a warning. Categories map to workloads:

* ``coding`` -> ``code``
* ``math_reasoning`` (and MT-bench's ``math`` and ``reasoning``) -> ``reasoning``
* everything else (MT-bench's writing/roleplay/extraction/stem/humanities, translation,
  summarization, qa, rag) -> ``chat``
"""

from __future__ import annotations

import polars as pl

from ingest.traces.jsonlread import scan_keys
from ingest.traces.limits import Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

CATEGORY_WORKLOADS = {"coding": "code", "math_reasoning": "reasoning", "math": "reasoning", "reasoning": "reasoning"}
DEFAULT_WORKLOAD = "chat"
KEYS = {"workload": ("category", "label"), "prompt": ("turns", "list")}


def read_specbench(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    raw = scan_keys(src, KEYS, limits)
    df = raw.frame
    missing = df.get_column("prompt").is_null()
    if missing.any():
        raise src.fail(raw.locate(int(missing.arg_true()[0])), "missing 'turns'; expected a list of strings")
    category = pl.col("workload").str.strip_chars().str.to_lowercase()
    turns = (
        df.with_columns(
            pl.when(category.is_null() | (category == ""))
            .then(None)
            .otherwise(category.replace_strict(CATEGORY_WORKLOADS, default=DEFAULT_WORKLOAD))
            .alias("workload")
        )
        .rename({"_rec": "_src"})
        .explode("prompt")
        .filter(pl.col("prompt").is_not_null())  # a record with no turns gives no request
    )
    empty = df.height - turns.get_column("_src").n_unique()
    raw.frame = turns.with_row_index("_rec").with_columns(pl.col("_rec").cast(pl.Int64))
    if empty:
        raw.dropped["empty_turns"] = empty
    raw.columns = {"workload": "category", "prompt": "turns"}
    raw.default_output = True
    return raw
