"""A trace read and validated with its workloads assigned: what is stored (``spectune trace``) and what the
dashboard's traffic page uploads."""

from __future__ import annotations

from pathlib import Path

from ingest.classify import assign_workloads
from ingest.traces.limits import DEFAULT_LIMITS
from ingest.traces.mapping import TraceMapping
from ingest.traces.registry import read_trace


def read_assigned(path: Path, fmt: str, workload: str | None, mapping: TraceMapping | None, name: str | None,
                  limits=None):
    """Read and validate a trace and fill missing workloads; returns (TraceFrame, assignment counts)."""
    # Workloads are assigned here, before the trace lands, because prompt text is not stored.
    tf = read_trace(path, fmt, mapping, workload, name=name, limits=limits or DEFAULT_LIMITS)
    tf.frame, assignment = assign_workloads(tf.frame)
    return tf, assignment
