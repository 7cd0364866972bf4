"""Cached data access for the dashboard: the only place pages get data from (no SQL, no math here).

:class:`StoreReader` (one per DB path, ``st.cache_resource``) opens a short-lived **read-only** DuckDB
connection per query, so a runner process can take the write lock between queries. Query results are
cached with ``st.cache_data`` keyed by the filter values and a *stamp* of the store's content
(ingest/storestamp.py): new results written by a runner change the stamp, which refreshes every view. The first
start builds the default store with its progress shown in a status box.
Each function only calls into :mod:`analysis`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import streamlit as st

from analysis import drilldown, explore, frames, gpu_compare, load, pareto, provenance, published, winners
from analysis import glance as glance_
from analysis.cellvalues import Slo
from analysis.production import frames as production_frames_
from analysis.production import load as production_load
from analysis.production import request_load
from analysis.production.ab import ABOptions
from analysis.production.report import ProductionQuery, ab_report, production_report
from analysis.production.request_segments import SegmentQuery, segments_frame, segments_report, windows_frame
from analysis.schedule import schedules
from dashboard import first_start
from ingest import open_store, storestamp
from ingest.errors import UsageError

TTL_S = 600


@dataclass(frozen=True)
class StoreReader:
    path: str

    @contextlib.contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        con = open_store.connect(self.path, read_only=True)
        try:
            yield con
        finally:
            con.close()

    def stamp(self) -> str:
        """Changes whenever the store's content changes (ingest/storestamp.py: DuckDB's checkpoint headers, the
        WALs' bytes, the real file's times): part of every cache key."""
        return storestamp.store_stamp(self.path) or ""


def db_path() -> str:
    return first_start.db_path()


@st.cache_resource(show_spinner="Opening the results store (first start builds it from data/, ~10 s)…")
def _reader(path: str) -> StoreReader:
    if not Path(path).exists():  # the default store is built from the embedded data on first use
        open_store.connect(path, read_only=False).close()
    return StoreReader(path)


def reader() -> StoreReader:
    path = db_path()
    first_start.ensure_store(path)  # normally done by app.py already; a store removed meanwhile is rebuilt here
    return _reader(path)


def stamp() -> str:
    return reader().stamp()


# ---- cached queries (arguments are the cache key; `st_` is the store stamp) ---------------------------

@st.cache_data(ttl=TTL_S, show_spinner=False)
def dimension_values(path: str, st_: tuple) -> dict[str, list]:
    with _reader(path).connection() as con:
        return frames.distinct_values(con)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def winners_doc(path: str, st_: tuple, metric: str, f: frames.Filters, slo: Slo, best_depth: bool = False,
                margin_pct: float = 2.0) -> dict:
    with _reader(path).connection() as con:
        return winners.winners(con, metric, f, slo_ttft_ms=slo.ttft_ms, slo_tpot_ms=slo.tpot_ms,
                               best_depth_per_method=best_depth, margin_pct=margin_pct)


def split_published(doc: dict) -> tuple[dict, dict]:
    """analysis.glance.split_published: the published groups and the rest (simulated or measured)."""
    return glance_.split_published(doc)


def published_winners(doc: dict) -> dict:
    """analysis.glance.published: the published winner per model × dataset, with its source."""
    return glance_.published(doc)


def glance(doc: dict) -> dict:
    """analysis.glance's one-sentence summary of a winners document (the CLI's ``summary``). Not cached: the
    summary takes under a millisecond, hashing the document for a cache key ~0.1 s."""
    return glance_.summary(doc)


def lead_answer(published: dict, rest: dict) -> str:
    """analysis.glance's opening answer over the published figures and the other cells (not cached, as glance)."""
    return glance_.lead(published, rest)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def schedules_doc(path: str, st_: tuple, metric: str, f: frames.Filters, draft_models: tuple[tuple[str, str], ...] = ()
                  ) -> dict:
    """analysis.schedule's document (depth schedule per batch size vs the best static depth, with commands)."""
    with _reader(path).connection() as con:
        return schedules(con, metric, f, draft_models=dict(draft_models))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def drill(path: str, st_: tuple, group: drilldown.Group, metric: str, f: frames.Filters, slo: Slo
          ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    with _reader(path).connection() as con:
        ranked = drilldown.candidates(con, group, metric, f, slo)
        return ranked, drilldown.positions(con, group, f), drilldown.latency_summary(con, ranked)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def by_depth(path: str, st_: tuple, metric: str, f: frames.Filters, slo: Slo) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return explore.by_depth(con, f, metric, slo)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def by_position(path: str, st_: tuple, f: frames.Filters) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return explore.by_position(con, f)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def tradeoff(path: str, st_: tuple, f: frames.Filters, latency: str) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return pareto.tradeoff(con, f, latency)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def speedups(path: str, st_: tuple, f: frames.Filters, metric: str, best_depth: bool, slo: Slo) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return load.speedup_vs_load(con, f, metric, best_depth=best_depth, slo=slo)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def gpu_ratios(path: str, st_: tuple, f: frames.Filters, gpu_a: str, gpu_b: str, metric: str, slo: Slo
               ) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return gpu_compare.ratios(con, f, gpu_a, gpu_b, metric, slo)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def gpu_efficiency(path: str, st_: tuple, f: frames.Filters) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return gpu_compare.efficiency(con, f)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def runs(path: str, st_: tuple) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return provenance.runs(con)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def table_counts(path: str, st_: tuple) -> pl.DataFrame:
    with _reader(path).connection() as con:
        return provenance.table_counts(con)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def published_table() -> pl.DataFrame:
    return published.table()


@st.cache_data(ttl=TTL_S, show_spinner=False)
def published_overlay(metric: str, families: tuple[str, ...], workloads: tuple[str, ...],
                      methods: tuple[str, ...]) -> pl.DataFrame:
    return published.overlay(metric, families=families, workloads=workloads, methods=methods)


def overlay_in_range(points: pl.DataFrame, measured: pl.DataFrame
                     ) -> tuple[pl.DataFrame, pl.DataFrame, tuple[float, float] | None]:
    """(drawn, left out, measured range) of the published points (analysis.published.split_by_range)."""
    return published.split_by_range(points, measured)


def gpu_servers(ratios: pl.DataFrame) -> pl.DataFrame:
    return gpu_compare.servers(ratios)


def winner_changes(a: dict, b: dict) -> pl.DataFrame:
    return gpu_compare.winner_changes(a, b)


def speedup_lines(s: pl.DataFrame, best_depth: bool) -> pl.DataFrame:
    """The speedup rows with a null row where a line has no cell at a load (the chart breaks it there)."""
    return load.with_gaps(s, best_depth)


def break_even(s: pl.DataFrame) -> pl.DataFrame:
    return load.break_even(s)


# ---- production (ingest watch → analysis.production) -------------------------------------------------

@st.cache_data(ttl=TTL_S, show_spinner=False)
def production_segments(path: str, st_: tuple) -> list[str]:
    with _reader(path).connection() as con:
        return production_load.segment_names(con)


@st.cache_data(ttl=TTL_S, show_spinner="Re-scoring the segment with its production acceptance…")
def production_doc(path: str, st_: tuple, segment: str, window_s: float) -> dict:
    with _reader(path).connection() as con:
        return production_report(con, ProductionQuery(segments=(segment,), window_s=window_s))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def production_ab(path: str, st_: tuple, segment: str, metric: str, block_s: float = 60.0) -> dict | None:
    with _reader(path).connection() as con:
        try:
            return ab_report(con, (segment,), None, None, None, None, ABOptions(metric=metric, block_s=block_s))
        except UsageError:
            return None  # not exactly two targets: no A/B on this segment


def production_frames(doc: dict) -> dict[str, pl.DataFrame]:
    return {"windows": production_frames_.windows(doc), "positions": production_frames_.positions(doc),
            "annotations": production_frames_.annotations(doc),
            "recommendations": production_frames_.recommendations(doc)}


def ab_frame(doc: dict) -> pl.DataFrame:
    return production_frames_.ab_arms(doc)


# ---- acceptance by segment inside one deployment (ingest requests → analysis.production.request_segments) ----

@st.cache_data(ttl=TTL_S, show_spinner=False)
def request_label_keys(path: str, st_: tuple) -> list[str]:
    with _reader(path).connection() as con:
        return request_load.label_keys(con)


@st.cache_data(ttl=TTL_S, show_spinner="Re-scoring each segment with its acceptance from requests…")
def request_segments_doc(path: str, st_: tuple, by: str, window_s: float) -> dict:
    with _reader(path).connection() as con:
        return segments_report(con, SegmentQuery(by=by, window_s=window_s))


def request_segment_frames(doc: dict) -> dict[str, pl.DataFrame]:
    return {"segments": segments_frame(doc), "windows": windows_frame(doc)}
