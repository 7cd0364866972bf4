"""Bulk loads: the rows of many cells at once (an export folder, the embedded default data), without per-row work.

Owns three things ``ingest.store.write_tables_bulk`` and the importers need at 10 M rows: :func:`segments`
(runs of one cell's rows, found in one pass, no hashing), :func:`keep_cells` (a semi join done on those runs)
and :func:`bootstrap_frames` (every cell's bootstrap replicates: columns go to numpy once, each cell is a
slice, one frame comes out). Replicates equal what ``store.write_cell`` stores for the same cell: both go
through ``cellstats.bootstrap_arrays`` with the cell's seed and its successful requests in request order.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ingest import cellstats, steady

_BOOT_COLUMNS = ("output_tokens", "e2e_ms", "ttft_ms", "tpot_ms", "drafted_tokens", "accepted_tokens")
_NEW_RUN = (pl.col("cell_id") != pl.col("cell_id").shift()) | (pl.col("run_id") != pl.col("run_id").shift())


def _scan(frame: pl.DataFrame, check_order: bool) -> tuple[pl.DataFrame, bool]:
    """Segments, and whether request_index goes backwards inside one (one pass over the key columns)."""
    new = _NEW_RUN.fill_null(True)
    back = (~new & (pl.col("request_index").diff() < 0)).fill_null(False).any() if check_order else pl.lit(False)
    flags = frame.select(new.alias("new"), back.alias("back"))
    starts = flags["new"].arg_true().cast(pl.Int64)
    segs = frame.select("run_id", "cell_id")[starts].with_columns(
        starts.alias("start"), (starts.shift(-1).fill_null(frame.height) - starts).alias("len"))
    return segs, bool(flags["back"][0])


def segments(frame: pl.DataFrame) -> pl.DataFrame:
    """Runs of equal (run_id, cell_id) in row order: run_id, cell_id, start, len.

    Exports and runner output keep each cell's rows together, so this is one row per cell; scattered rows
    give several segments per cell.
    """
    if frame.height == 0:
        return pl.DataFrame(schema={"run_id": pl.String, "cell_id": pl.String, "start": pl.Int64, "len": pl.Int64})
    return _scan(frame, check_order=False)[0]


def keep_cells(frame: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``frame`` whose (run_id, cell_id) is in ``keys`` — a semi join done on segments, not rows."""
    if frame.height == 0:
        return frame
    segs = segments(frame)
    keep = segs.join(keys.unique().with_columns(pl.lit(True).alias("keep")), on=["run_id", "cell_id"],
                     how="left", maintain_order="left")["keep"].fill_null(False).to_numpy()
    if keep.all():
        return frame
    return frame.filter(pl.Series(np.repeat(keep, segs["len"].to_numpy())))


def bootstrap_frames(cells: pl.DataFrame, requests: pl.DataFrame, model_draws: pl.DataFrame | None = None
                     ) -> pl.DataFrame:
    """Bootstrap replicates of every ok cell in ``cells`` from its rows in ``requests`` (failed requests left out),
    times the cell's model-draw factors where ``model_draws`` has them (simulated cells)."""
    ok_cells = cells.filter(pl.col("status") == "ok")
    if requests.height == 0 or ok_cells.height == 0:
        return pl.DataFrame()
    if "steady_output_throughput" not in ok_cells.columns:  # cells written before schema 2
        ok_cells = steady_columns(ok_cells, requests)
    ok_cells = ok_cells.select("run_id", "cell_id", "depth", "output_throughput", "steady_output_throughput",
                               "steady_fallback")
    ordered = "request_index" in requests.columns
    segs, backwards = _scan(requests, check_order=ordered)
    if backwards or segs.select("run_id", "cell_id").is_duplicated().any():
        # replicates depend on the order of a cell's rows: group them and use request order, as write_cell does
        requests = requests.sort("run_id", "cell_id", *(["request_index"] if ordered else []), maintain_order=True)
        segs = segments(requests)
    span = {(r, c): (a, a + n) for r, c, a, n in segs.iter_rows()}
    n_rows = requests.height
    arrays = {c: requests[c].cast(pl.Float64).to_numpy() if c in requests.columns else np.full(n_rows, np.nan)
              for c in _BOOT_COLUMNS}  # nulls → NaN; zero-copy for float columns without nulls
    if np.isnan(arrays["output_tokens"]).any():  # token counts: a missing one counts 0 (bootstrap_arrays' input)
        arrays["output_tokens"] = np.nan_to_num(arrays["output_tokens"], nan=0.0)
    ok = requests["ok"].fill_null(True).to_numpy() if "ok" in requests.columns else np.ones(n_rows, dtype=bool)
    B = cellstats.BOOTSTRAP_REPLICATES
    factors: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    if model_draws is not None and model_draws.height:
        md = model_draws.sort("run_id", "cell_id", "replicate")
        for (run_id, cell_id), grp in md.group_by(["run_id", "cell_id"], maintain_order=True):
            factors[(run_id, cell_id)] = {k: grp[k].to_numpy() for k in cellstats.METRIC_KEYS if k in grp.columns}
    done, parts = [], {k: [] for k in (*cellstats.METRIC_KEYS, "steady_output_throughput")}
    for run_id, cell_id, depth, tput, steady_tput, fallback in ok_cells.iter_rows():
        if (run_id, cell_id) not in span:
            continue
        a, b = span[(run_id, cell_id)]
        mask = ok[a:b]
        cols = {c: v[a:b] if mask.all() else v[a:b][mask] for c, v in arrays.items()}
        seed = cellstats.seed_for(cell_id)
        boot = cellstats.bootstrap_arrays(cols, tput, depth=int(depth), seed=seed)
        boot = cellstats.apply_model_factors(boot, factors.get((run_id, cell_id)))
        # the cell's own steady figure and fallback (as write_cell stored them), no second pass over its rows
        boot["steady_output_throughput"] = steady.replicates(fallback, steady_tput, tput, boot["output_throughput"])
        done.append((run_id, cell_id))
        for k in parts:
            parts[k].append(boot[k])
    if not done:
        return pl.DataFrame()
    keys = pl.DataFrame(done, schema={"run_id": pl.String, "cell_id": pl.String}, orient="row")
    return keys[np.repeat(np.arange(len(done)), B)].with_columns(
        pl.Series("replicate", np.tile(np.arange(B, dtype=np.int16), len(done))),
        *[pl.Series(k, np.concatenate(v)) for k, v in parts.items()],
    )


def _steady_window(arrays: dict[str, np.ndarray], starts: np.ndarray | None, ok: np.ndarray, a: int, b: int,
                   concurrency: int) -> steady.Window:
    if starts is None:
        empty = np.zeros(0)
        return steady.Window(empty, empty, 0.0, 0.0, 0, "no per-request start times")
    return steady.measure(starts[a:b], arrays["e2e_ms"][a:b], arrays["ttft_ms"][a:b], arrays["output_tokens"][a:b],
                          ok[a:b], concurrency)


def steady_columns(cells: pl.DataFrame, requests: pl.DataFrame) -> pl.DataFrame:
    """``cells`` with the steady-state columns computed from their rows in ``requests`` (for bulk inputs written
    before those columns existed, e.g. an older export or embedded default data). Cells without rows get the
    fallback (the whole-window figure, flagged)."""
    ordered = requests.sort("run_id", "cell_id", "request_index", maintain_order=True) if (
        "request_index" in requests.columns) else requests
    segs = segments(ordered)
    span = {(r, c): (a, a + n) for r, c, a, n in segs.iter_rows()}
    n_rows = ordered.height
    arrays = {c: ordered[c].cast(pl.Float64).to_numpy() if c in ordered.columns else np.full(n_rows, np.nan)
              for c in ("e2e_ms", "ttft_ms", "output_tokens")}
    starts = ordered["start_s"].cast(pl.Float64).to_numpy() if "start_s" in ordered.columns else None
    ok = ordered["ok"].fill_null(True).to_numpy() if "ok" in ordered.columns else np.ones(n_rows, dtype=bool)
    rows: dict[str, list] = {k: [] for k in steady.COLUMNS}
    for run_id, cell_id, conc, gpus, whole in cells.select(
            "run_id", "cell_id", "concurrency", "gpu_count", "output_throughput").iter_rows():
        a, b = span.get((run_id, cell_id), (0, 0))
        w = _steady_window(arrays, starts if b > a else None, ok, a, b, int(conc))
        value = float(w.tokens_in.sum() / w.window_s) if w.fallback is None else whole
        rows["steady_output_throughput"].append(value)
        rows["steady_output_throughput_per_gpu"].append(value / gpus if value is not None and gpus else None)
        rows["steady_window_s"].append(w.window_s if w.whole_s > 0 else None)
        rows["steady_requests"].append(w.requests_in)
        rows["steady_fallback"].append(w.fallback)
    return cells.drop([c for c in steady.COLUMNS if c in cells.columns]).with_columns(
        pl.Series("steady_output_throughput", rows["steady_output_throughput"], dtype=pl.Float64),
        pl.Series("steady_output_throughput_per_gpu", rows["steady_output_throughput_per_gpu"], dtype=pl.Float64),
        pl.Series("steady_window_s", rows["steady_window_s"], dtype=pl.Float64),
        pl.Series("steady_requests", rows["steady_requests"], dtype=pl.Int32),
        pl.Series("steady_fallback", rows["steady_fallback"], dtype=pl.String),
    )
