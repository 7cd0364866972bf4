"""Downloads: every chart as PNG, SVG and PDF (Altair through vl-convert, offline) and its data as CSV and
Parquet, with buttons labelled by format and files named after the view.

Bytes are produced only when a button is clicked (``st.download_button`` with a callable), so a page rerun
never pays for rendering. CSV cells that a spreadsheet would run as a formula (leading ``= + - @``, tab or
carriage return, after any spaces or zero-width characters) get a leading apostrophe (OWASP CSV injection
guidance); numeric columns are left as numbers.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import altair as alt
import polars as pl
import streamlit as st

from analysis.labels import human_columns

# Full-width forms too: some spreadsheet locales turn "＝" into "=" on entry.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "＝", "＋", "－", "＠")
# Skipped before the first character is judged: spaces, and invisible characters (zero-width space/joiners,
# word joiner, BOM, no-break space) that a spreadsheet may drop on paste, leaving "=…" to run.
INVISIBLE_LEAD = " \u00a0\u200b\u200c\u200d\u2060\ufeff"
MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "csv": "text/csv",
        "parquet": "application/vnd.apache.parquet", "html": "text/html"}


def slug(*parts: object) -> str:
    """A file-name-safe name from view parts: ``winners``, ``output_throughput``, ``MI355X`` →
    ``winners_output-throughput_MI355X`` (underscores inside a part become hyphens)."""
    clean = []
    for p in parts:
        text = re.sub(r"[^A-Za-z0-9.]+", "-", str(p).replace("_", "-")).strip("-.")
        if text:
            clean.append(text[:40])
    return "_".join(clean) or "spectune"


class ScriptSafeJSON(json.JSONEncoder):
    """JSON that can sit inside an HTML <script>: ``<``, ``>`` and ``&`` as \\u escapes, so a data value
    such as ``</script><script>…`` (a shard or trace name from an uploaded file) stays a string."""

    def encode(self, o: object) -> str:
        return super().encode(o).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def chart_bytes(chart: alt.TopLevelMixin, fmt: str) -> bytes:
    if fmt == "svg":
        buf = io.StringIO()
        chart.save(buf, format="svg")
        return buf.getvalue().encode()
    if fmt == "html":
        buf = io.StringIO()
        chart.save(buf, format="html", inline=True, json_kwds={"cls": ScriptSafeJSON})
        return buf.getvalue().encode()
    out = io.BytesIO()
    chart.save(out, format=fmt, **({"scale_factor": 2} if fmt == "png" else {}))
    return out.getvalue()


def _json_text(value: object) -> str:
    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, default=str, ensure_ascii=False)


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs) as JSON text: CSV has no nesting (and polars cannot cast a list to text).
    Categorical/Enum columns become plain text so :func:`escape_formulas` sees them too."""
    out = []
    for c, t in frame.schema.items():
        if isinstance(t, pl.List | pl.Struct | pl.Array):
            out.append(pl.col(c).map_elements(_json_text, return_dtype=pl.String))
        elif isinstance(t, pl.Categorical | pl.Enum):
            out.append(pl.col(c).cast(pl.String))
    return frame.with_columns(out) if out else frame


def escape_formulas(frame: pl.DataFrame) -> pl.DataFrame:
    cols = []
    for c, t in frame.schema.items():
        if t == pl.String:
            starts = pl.col(c).str.strip_chars_start(INVISIBLE_LEAD).str.slice(0, 1).is_in(list(FORMULA_START))
            cols.append(pl.when(starts).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c))
    return frame.with_columns(cols) if cols else frame


def csv_bytes(frame: pl.DataFrame, titles: dict[str, str] | None = None) -> bytes:
    """CSV for a spreadsheet: human column titles (analysis.labels, with the view's own ``titles``; Parquet keeps
    the machine names)."""
    return escape_formulas(_flat(human_columns(frame, titles))).write_csv().encode()


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


def _button(label: str, data: Callable[[], bytes], name: str, fmt: str, key: str) -> None:
    st.download_button(label, data=data, file_name=f"{name}.{fmt}", mime=MIME[fmt], key=key, on_click="ignore")


def buttons(chart: Callable[[], alt.TopLevelMixin] | None, frame: pl.DataFrame | None, name: str, key: str,
            titles: dict[str, str] | None = None) -> None:
    """One row of download buttons: PNG, SVG, PDF for the chart (built by the ``chart`` callable only when a
    button is clicked); CSV (human headers, ``titles`` for the view's own) and Parquet (machine names) for its
    data."""
    items: list[tuple[str, Callable[[], bytes], str]] = []
    if chart is not None:
        for fmt in ("png", "svg", "pdf"):
            items.append((fmt.upper(), lambda fmt=fmt: chart_bytes(chart(), fmt), fmt))
    if frame is not None:
        items.append(("CSV", lambda: csv_bytes(frame, titles), "csv"))
        items.append(("Parquet", lambda: parquet_bytes(frame), "parquet"))
    with st.container(horizontal=True, gap="small"):
        for label, data, fmt in items:
            _button(label, data, name, fmt, f"dl.{key}.{fmt}")
