"""What re-scoring reads: a trace file, folder or glob reduced to re-scoring buckets (one streaming pass per file,
on Ray with ``--ray``), or a stored trace loaded as a frame; and the trace reader's limits with the file cap a
user set (``--max-trace-bytes`` / ``$SPECTUNE_MAX_TRACE_BYTES``)."""

from __future__ import annotations

import argparse
import dataclasses as dc
from pathlib import Path

from analysis.rescore.distributed import ray_map, ray_session
from analysis.rescore.reduce import STREAMED_SHARDS, ReadSpec, read_buckets, trace_files
from analysis.rescore.stored import load_trace, looks_like_id
from analysis.rescore.workload import assign_file, assign_stored, normalise_selector
from ingest import caps
from ingest.errors import InputError, UsageError
from ingest.trace_store import trace_id_for
from ingest.traces import DEFAULT_LIMITS, read_trace
from ingest.traces.column_flags import mapping_from_args
from ingest.traces.registry import check_request


def load_input(args: argparse.Namespace, con, shard_by: str = "auto"):
    """(buckets or frame, meta): a file, folder or glob is reduced to re-scoring buckets in one streaming pass
    per file (analysis.rescore.reduce; on Ray with --ray); a stored trace id is loaded as a frame."""
    path = Path(args.trace)
    if args.workload is not None and not args.workload.strip():  # as ingest trace says it (one check, shared)
        check_request(path, "auto", None, args.workload)
    selector = normalise_selector(args.workload)
    files = trace_files(args.trace)
    if files is None and not looks_like_id(args.trace):
        raise InputError(path, 0, "no such file, folder or glob (TRACE is neither a file nor a trace id)")
    if files is not None:
        if shard_by not in STREAMED_SHARDS:  # output length / hour: per-request values, so the exact reader
            if len(files) > 1 or getattr(args, "ray", None):
                raise UsageError(f"--shard-by {shard_by} works on one trace file (it needs every request's own "
                                 "values); for a folder, glob or --ray use workload, column or none")
            tf = read_trace(files[0], args.format, mapping_from_args(args.maps, args.timestamp_unit, files[0]), None,
                            limits=trace_limits(args))
            frame, source = assign_file(tf.frame, tf.format, tf.name, selector)
            assignment = source.assignment()
            return frame, {"trace_id": trace_id_for(tf.file_hash), "name": tf.name, "format": tf.format,
                           "file_hash": tf.file_hash, "source": "file", "workload_assignment": assignment,
                           "workload_source": source.as_dict(), "dropped": dict(tf.dropped),
                           "warnings": list(tf.warnings)}
        spec = ReadSpec(args.format, mapping_from_args(args.maps, args.timestamp_unit, files[0]), selector,
                        trace_limits(args))
        if getattr(args, "ray", None):
            with ray_session(args.ray, getattr(args, "settings", None)):  # the command's settings, when it gave them
                read = read_buckets(args.trace, files, spec, shard_by, ray_map(args.ray_files_per_task))
            return read.buckets, {**read.meta, "ray": args.ray}
        read = read_buckets(args.trace, files, spec, shard_by)
        return read.buckets, read.meta
    frame, meta = load_trace(con, args.trace)
    frame, source = assign_stored(frame, meta, selector)
    return frame, {**meta, "workload_source": source.as_dict()}


def trace_limits(args: argparse.Namespace):
    """The trace reader's limits with the file cap from --max-trace-bytes / $SPECTUNE_MAX_TRACE_BYTES (ingest.caps)."""
    caps.set_from_flag(caps.TRACE_CAP, getattr(args, "max_trace_bytes", None))
    value, source = caps.resolve(caps.TRACE_CAP, getattr(args, "settings", None))
    return dc.replace(DEFAULT_LIMITS, max_file_bytes=value, file_cap_hint=(
        f" ({source}); raise it with {caps.TRACE_CAP.flag} SIZE or ${caps.TRACE_CAP.env}"))
