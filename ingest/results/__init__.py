"""Bringing benchmark results from outside into the store: one reader per format, a registry, auto-detection.

Formats: ``vllm_bench`` (``vllm bench serve --save-result``, current and legacy), ``specbench``
(Spec-Bench output), ``sglang_spec`` (SGLang ``bench_speculative.py``), ``spectune_parquet`` (spectune's
own export / host shards) and ``published_csv`` (the published-results table). Readers parse and validate
without touching the store; :func:`ingest.results.land.land` writes every file of one invocation in a
single transaction, with provenance (file hash, importer, time) in ``runs`` and duplicates skipped.
"""

from __future__ import annotations

from ingest.results.model import ParsedFile, ReadOptions
from ingest.results.registry import FORMAT_CHOICES, FORMATS, read_file, read_files

# Landing (ingest.results.land) is imported by the caller after parsing: the store's imports (SQLAlchemy for
# the schema) are not needed to reject a bad file, which keeps the error path of the CLI fast.
__all__ = ["FORMATS", "FORMAT_CHOICES", "ParsedFile", "ReadOptions", "read_file", "read_files"]
