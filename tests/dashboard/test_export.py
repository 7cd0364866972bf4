"""Exports: real vl-convert output (PNG/SVG/PDF headers), CSV formula escaping, file names."""

from __future__ import annotations

import io

import altair as alt
import polars as pl

from dashboard import export


def _chart() -> alt.Chart:
    return alt.Chart(pl.DataFrame({"x": ["a", "b"], "y": [1, 2]}).to_arrow()).mark_bar().encode(x="x:N", y="y:Q")


def test_chart_bytes_are_real_files():
    c = _chart()
    assert export.chart_bytes(c, "png")[:8] == b"\x89PNG\r\n\x1a\n"
    assert export.chart_bytes(c, "pdf")[:5] == b"%PDF-"
    assert b"<svg" in export.chart_bytes(c, "svg")[:200]
    html = export.chart_bytes(c, "html").decode()
    assert "<script src=\"http" not in html and "vega-embed" in html


def test_csv_escapes_formulas_but_not_numbers():
    df = pl.DataFrame({"t": ["=1+1", "+cmd", "-x", "@SUM(A1)", "\tx", "plain"], "n": [-1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    back = pl.read_csv(io.BytesIO(export.csv_bytes(df)))
    assert back["T"].to_list() == ["'=1+1", "'+cmd", "'-x", "'@SUM(A1)", "'\tx", "plain"]
    assert back["N"].to_list() == df["n"].to_list()


def test_csv_headers_are_human_titles_parquet_keeps_machine_names():
    df = pl.DataFrame({"gain_vs_default_pct": [1.5], "keep_default": [True], "family": ["Qwen"]})
    header = export.csv_bytes(df).decode().splitlines()[0]
    assert header == "Gain vs default (%),Keep the default?,Model family"
    assert pl.read_parquet(io.BytesIO(export.parquet_bytes(df))).columns == df.columns


def test_parquet_round_trips():
    df = pl.DataFrame({"a": [1, 2], "b": ["x", "=y"]})
    assert pl.read_parquet(io.BytesIO(export.parquet_bytes(df))).equals(df)


def test_file_names_follow_the_view():
    assert export.slug("winners", "output_throughput", "MI355X") == "winners_output-throughput_MI355X"
    assert export.slug("x", "../../etc/passwd", "a b;c") == "x_etc-passwd_a-b-c"
