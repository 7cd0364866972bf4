"""User-given dimension values (``--gpu``, ``--family``, ``--model``, ``--workload``, ``--dataset``, ``--method``)
checked against the store.

A value the store holds is kept; one that matches a stored value except for case is read as that value, with a
note (``qwen`` → ``Qwen``); anything else is a usage error that lists the valid values, suggests the closest,
and says whether the store's cells are simulated or measured — so ``--gpu MI355`` on the default data says so
instead of answering "no cells".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb

from ingest.errors import UsageError, did_you_mean
from ingest.sql import frame as query

DIMENSIONS = ("gpu", "family", "model", "workload", "dataset", "method")


def store_label(con: duckdb.DuckDBPyConnection) -> str:
    """'simulated', 'measured' or 'simulated or measured': what the store's successful cells are."""
    backends = set(query(con, "SELECT DISTINCT r.backend FROM cells c JOIN runs r USING (run_id) "
                              "WHERE c.status = 'ok'")["backend"].to_list())
    if not backends:
        return "measured"
    if backends == {"sim"}:
        return "simulated"
    return "measured" if "sim" not in backends else "simulated or measured"


def stored_values(con: duckdb.DuckDBPyConnection, dimension: str) -> list[str]:
    if dimension not in DIMENSIONS:  # an identifier: allow-listed, never user text
        raise ValueError(f"unknown dimension {dimension!r}")
    return [str(v) for v in query(con, f"SELECT DISTINCT {dimension} FROM cells WHERE status = 'ok' "
                                       f"AND {dimension} IS NOT NULL ORDER BY {dimension}")[dimension].to_list()]


def resolve_values(con: duckdb.DuckDBPyConnection, given: Mapping[str, Sequence[str]]
                   ) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """``given`` (dimension → values) with case fixed to the store's spelling, and the notes to print.

    Raises UsageError (one line) for a value the store does not hold in any case.
    """
    out: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for dimension, values in given.items():
        if not values:
            out[dimension] = ()
            continue
        valid = stored_values(con, dimension)
        by_lower = {v.lower(): v for v in valid}
        if dimension == "model":  # a model id may be given without its organisation: Qwen3-8B for Qwen/Qwen3-8B
            short: dict[str, list[str]] = {}
            for v in valid:
                short.setdefault(v.rsplit("/", 1)[-1].lower(), []).append(v)
            by_lower.update({k: vs[0] for k, vs in short.items() if len(vs) == 1 and k not in by_lower})
        fixed = []
        for value in values:
            if value in valid:
                fixed.append(value)
            elif value.strip().lower() in by_lower:
                fixed.append(by_lower[value.strip().lower()])
                how = ("a model named without its organisation" if fixed[-1].lower() != value.strip().lower()
                       else "names are matched ignoring case")
                notes.append(f"note: --{dimension} {value} read as {fixed[-1]!r} ({how})")
            else:
                listed = ", ".join(valid) if valid else "none"
                shown = repr(value if len(value) <= 60 else value[:60] + "…")  # escapes control characters
                raise UsageError(f"--{dimension} {shown}: no {store_label(con)} cells with this {dimension} in the "
                                 f"store; valid: {listed}{did_you_mean(value, valid)}")
        out[dimension] = tuple(fixed)
    return out, notes
