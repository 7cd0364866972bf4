"""Shared page furniture: the filter widgets (declared as :class:`dashboard.state.Param`), the simulated-data
banner, and the translation of widget values into :class:`analysis.frames.Filters`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl
import streamlit as st

from analysis.cellvalues import Slo
from analysis.frames import Filters
from analysis.labels import human_table, title
from analysis.metrics import METRICS
from dashboard import state
from dashboard.state import Param

LOAD_NOT_STATED = "load not stated"  # the load option of cells whose source gives no concurrency (NULL)


def load_options(dims: dict[str, list]) -> tuple:
    """The load choices of a page: the stated concurrencies, then "load not stated" when the store has such cells."""
    return (*dims["concurrency"], *((LOAD_NOT_STATED,) if any(dims.get("load_not_stated") or ()) else ()))


SIM_BANNER = ("**Simulated data on screen.** Rows with backend `sim` come from spectune's calibrated simulator "
              "(docs/simulator.md), not from GPU measurements. Bring real results with `spectune run "
              "--backend vllm` or `spectune results`.")


def metric_label(name: str) -> str:
    m = METRICS[name]
    return f"{m.label} ({m.unit})" if m.unit else m.label


# ---- parameter declarations (allow-lists come from the store's own values) -------------------------

def p_metric(options: Sequence[str] = tuple(METRICS), default: str = "output_throughput") -> Param:
    return Param("metric", "one", default, tuple(options), label="Metric", format_func=metric_label)


def p_many(key: str, label: str, options: Sequence[Any]) -> Param:
    return Param(key, "many", [], tuple(options), label=label)


def p_one(key: str, label: str, options: Sequence[Any], default: Any | None = None,
          format_func: Callable[[Any], str] = str) -> Param:
    opts = tuple(options)
    return Param(key, "one", default if default is not None else (opts[0] if opts else ""), opts, label=label,
                 format_func=format_func)


def p_depth(depths: Sequence[int]) -> Param:
    ds = tuple(sorted(d for d in depths if d > 0)) or (1,)
    return Param("depth", "range", (ds[0], ds[-1]), ds, label="Depth range")


def p_slo() -> list[Param]:
    return [Param("slo_ttft", "float", 2000.0, lo=1.0, hi=600_000.0, label="SLO: TTFT ≤ (ms)"),
            Param("slo_tpot", "float", 50.0, lo=0.1, hi=60_000.0, label="SLO: TPOT ≤ (ms)")]


def p_margin() -> Param:
    """Practical equivalence margin (%): candidates this close to the best count as equivalent."""
    return Param("margin", "float", 2.0, lo=0.0, hi=50.0, step=0.5, label="Equivalence margin (%)")


def table(frame: pl.DataFrame, titles: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """Every table on screen: human column titles and one candidate column (analysis.labels.human_table; values
    keep their types, so sorting stays numeric); machine names stay in Parquet/JSON. ``titles`` names columns
    whose title depends on the view (``winner_a`` → ``Winner on MI300X``)."""
    if "column_config" in kwargs:  # configs are keyed by the column's shown (human) title
        kwargs["column_config"] = {(titles or {}).get(k) or title(k): v for k, v in kwargs["column_config"].items()}
    kwargs.setdefault("hide_index", True)
    return st.dataframe(human_table(frame, titles), **kwargs)


def p_bool(key: str, label: str, default: bool = False) -> Param:
    return Param(key, "bool", default, label=label)


# ---- rendering -------------------------------------------------------------------------------------

def render(page: str, p: Param, container: Any = None) -> Any:
    """Draw the widget for one parameter (its state was seeded by :func:`dashboard.state.seed`)."""
    c = container or st.sidebar
    key = state.widget_key(page, p)
    if p.kind == "one":
        return c.selectbox(p.label, p.options, key=key, format_func=p.format_func)
    if p.kind == "many":
        return c.multiselect(p.label, p.options, key=key, format_func=p.format_func, placeholder="All")
    if p.kind == "range":
        # select_slider decides single vs range from `value`, not from session state: the URL's value goes
        # in through `value` (state.seed keeps it under an init key)
        return c.select_slider(p.label, options=list(p.options), key=key,
                               value=st.session_state.get(state.init_key(page, p), p.default))
    if p.kind == "float":
        return c.number_input(p.label, min_value=p.lo, max_value=p.hi, key=key, step=p.step or 10.0)
    if p.kind == "bool":
        return c.toggle(p.label, key=key)
    raise ValueError(p.kind)


def setup(page: str, params: Sequence[Param], sidebar: Sequence[str] | None = None) -> dict[str, Any]:
    """Seed from the URL, warn about bad parameters, draw the sidebar widgets; returns current values."""
    problems = state.seed(page, params)
    state.warn(problems)
    for p in params:
        if sidebar is None or p.key in sidebar:
            render(page, p)
    return state.values(page, params)


def finish(page: str, params: Sequence[Param]) -> None:
    state.write_url(page, params)


def filters(v: dict[str, Any], *, gpus: Sequence[str] | None = None, concurrency: Sequence[int] | None = None
            ) -> Filters:
    depth = v.get("depth") or (0, 64)
    return Filters(
        gpus=tuple(gpus if gpus is not None else v.get("gpu") or ()),
        families=tuple(v.get("fam") or ()), workloads=tuple(v.get("wl") or ()),
        methods=tuple(v.get("meth") or ()),
        concurrency=tuple(concurrency if concurrency is not None else (
            [v["conc"]] if isinstance(v.get("conc"), int) else [None] if v.get("conc") == LOAD_NOT_STATED
            else v.get("conc") or ())),
        depth_min=int(depth[0]), depth_max=int(depth[1]),
    )


def slo(v: dict[str, Any]) -> Slo:
    return Slo(ttft_ms=float(v.get("slo_ttft", 2000.0)), tpot_ms=float(v.get("slo_tpot", 50.0)))


def banner(simulated: bool) -> None:
    if simulated:
        st.warning(SIM_BANNER, icon=":material/science:")


def any_simulated(*frames: pl.DataFrame) -> bool:
    return any(bool("backend" in f.columns and f.height and (f["backend"] == "sim").any()) for f in frames)


def described(v: dict[str, Any], params: Sequence[Param]) -> dict[str, str]:
    """Filters as text for reports: label → value ("all" for an empty multi-select)."""
    out = {}
    for p in params:
        val = v.get(p.key)
        if p.kind == "many":
            out[p.label] = ", ".join(map(str, val)) if val else "all"
        elif p.kind == "range":
            out[p.label] = f"{val[0]}–{val[1]}"
        else:
            out[p.label] = (p.format_func(val) if p.kind == "one" else ("yes" if val else "no") if p.kind == "bool"
                            else str(val))
    return out
