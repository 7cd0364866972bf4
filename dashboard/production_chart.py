"""Charts of the Production page: acceptance by window against the benchmark band, per-position rates, the
A/B arms. Altair builders over the frames of analysis.production.frames (no numbers computed here)."""

from __future__ import annotations

from datetime import UTC as UTC_ZONE
from datetime import datetime

import altair as alt
import polars as pl

from dashboard import charts, theme

RESTART_COLOR = "#C0392B"
CHANGE_COLOR = "#7D3C98"


UTC = alt.Scale(type="utc")  # times are UTC and drawn as UTC, whatever the browser's zone
KNOWN = "datum.interval == '95 %'"  # a window with an interval; one without is "too few tokens to tell"


def _utc_time(field: str, title: str | None = None, fmt: str = "%Y-%m-%d %H:%M") -> alt.Tooltip:
    return alt.Tooltip(field, format=fmt + " UTC", formatType="utc", title=title or field.split(":")[0])


def utc_text(iso: str) -> str:
    """An ISO 8601 timestamp as ``YYYY-MM-DD HH:MM UTC`` (formatting only)."""
    return datetime.fromisoformat(iso).astimezone(UTC_ZONE).strftime("%Y-%m-%d %H:%M UTC")


def acceptance_over_time(win: pl.DataFrame, notes: pl.DataFrame, method: str) -> alt.LayerChart:
    """Production acceptance per window (line, 95 % interval as error bars) over the benchmark's band. A window
    with too few tokens to tell has no error bar and a hollow point: it is not an exact value."""
    color = theme.color_of(method)
    base = alt.Chart(win).encode(x=alt.X("window:T", title="window start (UTC)", scale=UTC))
    y_scale = alt.Scale(zero=False, domain=[0, 1])
    band = base.mark_area(opacity=0.18, color=theme.INK_SOFT).encode(
        y=alt.Y("band_low:Q", scale=y_scale, title="acceptance rate (accepted / drafted)"), y2="band_high:Q",
        tooltip=[alt.Tooltip("band_low:Q", format=".3f", title="benchmark band low"),
                 alt.Tooltip("band_high:Q", format=".3f", title="benchmark band high"),
                 alt.Tooltip("expected_provenance:N", title="benchmark")])
    expected = base.mark_line(strokeDash=[6, 4], color=theme.INK_SOFT).encode(y=alt.Y("expected:Q", scale=y_scale))
    err = base.mark_errorbar(color=color).encode(y=alt.Y("ci_low:Q", scale=y_scale, title=""), y2="ci_high:Q")
    line = base.mark_line(color=color).encode(y=alt.Y("acceptance_rate:Q", scale=y_scale))
    points = base.mark_point(size=60, color=color, strokeWidth=2).encode(
        y=alt.Y("acceptance_rate:Q", scale=y_scale),
        fill=alt.condition(KNOWN, alt.value(color), alt.value("white")),
        tooltip=[_utc_time("window:T"), alt.Tooltip("config:N"),
                 alt.Tooltip("acceptance_rate:Q", format=".3f"), alt.Tooltip("interval:N"),
                 alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f"),
                 alt.Tooltip("acceptance_length:Q", format=".2f"),
                 alt.Tooltip("draft_tokens:Q", format=",.0f"), alt.Tooltip("intervals:Q"),
                 alt.Tooltip("resets:Q", title="restarts")])
    layers = [band, expected, err, line, points]
    if notes.height:
        rules = alt.Chart(notes).mark_rule(strokeWidth=2).encode(
            x=alt.X("ts:T", scale=UTC),
            color=alt.Color("kind:N", scale=alt.Scale(domain=["restart", "config_change", "relabel"],
                                                      range=[RESTART_COLOR, CHANGE_COLOR, theme.INK_SOFT]),
                            title="annotation"),
            tooltip=["kind:N", "target:N", "detail:N", _utc_time("ts:T", fmt="%Y-%m-%d %H:%M:%S")])
        layers.append(rules)
    return alt.layer(*layers).properties(width=760, height=280)


def positions_over_time(pos: pl.DataFrame) -> alt.Chart:
    """r_i per window: the chance that the first i draft tokens were all accepted."""
    return alt.Chart(pos).mark_line(point=True).encode(
        x=alt.X("window:T", title="window start (UTC)", scale=UTC),
        y=alt.Y("acceptance:Q", title="r_i = accepted at position i / drafts", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("position:O", title="position"),
        tooltip=[_utc_time("window:T"), "position:O",
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
