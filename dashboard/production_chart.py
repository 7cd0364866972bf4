"""Charts of the Production page: acceptance by window against the benchmark band, per-position rates, the
A/B arms. Altair builders over the frames of analysis.production.frames (no numbers computed here)."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboard import charts, theme

RESTART_COLOR = "#C0392B"
CHANGE_COLOR = "#7D3C98"


def acceptance_over_time(win: pl.DataFrame, notes: pl.DataFrame, method: str) -> alt.LayerChart:
    """Production acceptance per window (line, 95 % interval as error bars) over the benchmark's band."""
    color = theme.color_of(method)
    base = alt.Chart(win).encode(x=alt.X("window:T", title="window start (UTC)"))
    y_scale = alt.Scale(zero=False, domain=[0, 1])
    band = base.mark_area(opacity=0.18, color=theme.INK_SOFT).encode(
        y=alt.Y("band_low:Q", scale=y_scale, title="acceptance rate (accepted / drafted)"), y2="band_high:Q",
        tooltip=[alt.Tooltip("band_low:Q", format=".3f", title="benchmark band low"),
                 alt.Tooltip("band_high:Q", format=".3f", title="benchmark band high"),
                 alt.Tooltip("expected_provenance:N", title="benchmark")])
    expected = base.mark_line(strokeDash=[6, 4], color=theme.INK_SOFT).encode(y=alt.Y("expected:Q", scale=y_scale))
    err = base.mark_errorbar(color=color).encode(y=alt.Y("ci_low:Q", scale=y_scale, title=""), y2="ci_high:Q")
    line = base.mark_line(point=True, color=color).encode(
        y=alt.Y("acceptance_rate:Q", scale=y_scale),
        tooltip=[alt.Tooltip("window:T", format="%Y-%m-%d %H:%M"), alt.Tooltip("config:N"),
                 alt.Tooltip("acceptance_rate:Q", format=".3f"), alt.Tooltip("ci_low:Q", format=".3f"),
                 alt.Tooltip("ci_high:Q", format=".3f"), alt.Tooltip("acceptance_length:Q", format=".2f"),
                 alt.Tooltip("draft_tokens:Q", format=",.0f"), alt.Tooltip("intervals:Q"),
                 alt.Tooltip("resets:Q", title="restarts")])
    layers = [band, expected, err, line]
    if notes.height:
        rules = alt.Chart(notes).mark_rule(strokeWidth=2).encode(
            x="ts:T", color=alt.Color("kind:N", scale=alt.Scale(domain=["restart", "config_change", "relabel"],
                                                                  range=[RESTART_COLOR, CHANGE_COLOR, theme.INK_SOFT]),
                                      title="annotation"),
            tooltip=["kind:N", "target:N", "detail:N", alt.Tooltip("ts:T", format="%Y-%m-%d %H:%M:%S")])
        layers.append(rules)
    return alt.layer(*layers).properties(width=760, height=280)


def positions_over_time(pos: pl.DataFrame) -> alt.Chart:
    """r_i per window: the chance that the first i draft tokens were all accepted."""
    return alt.Chart(pos).mark_line(point=True).encode(
        x=alt.X("window:T", title="window start (UTC)"),
        y=alt.Y("acceptance:Q", title="r_i = accepted at position i / drafts", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("position:O", title="position"),
        tooltip=[alt.Tooltip("window:T", format="%Y-%m-%d %H:%M"), "position:O",
                 alt.Tooltip("acceptance:Q", format=".3f")]).properties(width=760, height=220)


def ab_chart(arms: pl.DataFrame, metric: str) -> alt.LayerChart:
    """Both arms' value of one metric with its 95 % interval."""
    rows = arms.filter(pl.col("metric") == metric).with_columns(
        (pl.col("arm") + " · " + pl.col("target") + " · " + pl.col("config")).alias("arm_label"))
    base = alt.Chart(rows).encode(y=alt.Y("arm_label:N", title=None))
    bars = base.mark_point(filled=True, size=90, color=theme.INK).encode(
        x=alt.X("value:Q", title=metric, scale=alt.Scale(zero=False)),
        tooltip=["target:N", "config:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
                 alt.Tooltip("ci_high:Q", format=".4g")])
    err = base.mark_rule(strokeWidth=2, color=theme.INK).encode(x="ci_low:Q", x2="ci_high:Q")
    return alt.layer(err, bars).properties(width=560, height=90)


def finished(chart: alt.TopLevelMixin, title: str, subtitle: str = "", *, export: bool = False) -> alt.TopLevelMixin:
    return charts.finish(charts.titled(chart, title, subtitle), export=export)
