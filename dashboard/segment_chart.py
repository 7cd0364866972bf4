"""Charts of acceptance by segment inside one deployment (Production page, logged requests): each segment's
acceptance from its requests with the 95 % interval, against the benchmark band, and the same per time window.
Altair builders over the frames of analysis.production.request_segments (no numbers computed here)."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboard import theme


def by_segment(seg: pl.DataFrame, method: str) -> alt.LayerChart:
    """One point per segment (acceptance rate, error bar = 95 % bootstrap over its requests); grey ticks: the
    benchmark band for what the deployment runs."""
    color = theme.color_of(method)
    y_scale = alt.Scale(zero=False, domain=[0, 1])
    base = alt.Chart(seg).encode(x=alt.X("segment:N", title="segment (request label)", sort=None,
                                         axis=alt.Axis(labelAngle=0, labelLimit=200)))
    band = base.mark_bar(opacity=0.18, color=theme.INK_SOFT, size=36).encode(
        y=alt.Y("band_low:Q", scale=y_scale, title="acceptance rate (accepted / drafted)"), y2="band_high:Q",
        tooltip=[alt.Tooltip("band_low:Q", format=".3f", title="benchmark band low"),
                 alt.Tooltip("band_high:Q", format=".3f", title="benchmark band high"),
                 alt.Tooltip("benchmark:N", title="benchmark")])
    err = base.mark_errorbar(color=color, ticks=True).encode(y=alt.Y("ci_low:Q", scale=y_scale, title=""),
                                                             y2="ci_high:Q")
    point = base.mark_point(filled=True, size=90, color=color).encode(
        y=alt.Y("acceptance_rate:Q", scale=y_scale),
        tooltip=[alt.Tooltip("target:N", title="deployment"), alt.Tooltip("segment:N"), alt.Tooltip("config:N"),
                 alt.Tooltip("requests:Q", format=",.0f"), alt.Tooltip("acceptance_rate:Q", format=".3f"),
                 alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f"),
                 alt.Tooltip("acceptance_length:Q", format=".2f"), alt.Tooltip("draft_tokens:Q", format=",.0f")])
    return alt.layer(band, err, point).properties(width=max(240, 90 * max(1, seg.height)), height=280)


def over_time(win: pl.DataFrame) -> alt.LayerChart:
    """Each segment's acceptance per window from its requests (error bars: 95 % interval; none below 5 requests)."""
    y_scale = alt.Scale(zero=False, domain=[0, 1])
    base = alt.Chart(win).encode(x=alt.X("window:T", title="window start (UTC)"),
                                 color=alt.Color("segment:N", title="segment"))
    err = base.mark_errorbar().encode(y=alt.Y("ci_low:Q", scale=y_scale, title=""), y2="ci_high:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y("acceptance_rate:Q", scale=y_scale, title="acceptance rate (accepted / drafted)"),
        tooltip=[alt.Tooltip("window:T", format="%Y-%m-%d %H:%M"), alt.Tooltip("segment:N"),
                 alt.Tooltip("target:N", title="deployment"), alt.Tooltip("requests:Q"),
                 alt.Tooltip("acceptance_rate:Q", format=".3f"), alt.Tooltip("ci_low:Q", format=".3f"),
                 alt.Tooltip("ci_high:Q", format=".3f")])
    return alt.layer(err, line).properties(width=760, height=260)
