"""The one method → colour mapping of the whole app (charts, legends, exports).

Okabe & Ito's colour-blind-safe palette (2008), plus Paul Tol's wine for the ninth method, so no two
methods are confused under deuteranopia or protanopia. None of the colours is black or white, so every
one stays visible on both the light and the dark Streamlit theme; ``none`` is a neutral grey because it is
the baseline, not a contender. Text drawn on a coloured cell uses :data:`TEXT_ON` (chosen by luminance).
"""

from __future__ import annotations

import json

METHOD_COLORS: dict[str, str] = {
    "none": "#999999",         # grey: the baseline
    "mtp": "#0072B2",          # blue
    "eagle3": "#E69F00",       # orange
    "dflash": "#009E73",       # bluish green
    "dspark": "#CC79A7",       # reddish purple
    "ngram": "#56B4E9",        # sky blue
    "suffix": "#D55E00",       # vermillion
    "draft_model": "#F0E442",  # yellow
    "medusa": "#882255",       # wine (Tol)
}
FALLBACK = "#BBBBBB"
SELECTED_STROKE = "#000000"  # the drill-down cell; on a coloured cell, so visible in both themes
FONT_SIZE = 14

# Chart furniture drawn on the background (Pareto front and its rings, the break-even rule, outlines of
# published points, subtitles): dark ink in every export (white background). On screen the background may
# be light or dark, and Streamlit only tells which from the second run of a session on (st.context.theme is
# "light" on the first run whatever the theme), so the app draws it in a mid grey that reads on both (like
# Streamlit's own captions), lighter once the theme is known to be dark (:func:`for_screen`). Distinct
# values from the colours drawn *on* coloured cells (SELECTED_STROKE, TEXT_ON), which stay black.
INK = "#222222"
INK_SOFT = "#555555"
SCREEN_INK = {INK: "#8A8A8A", INK_SOFT: "#8A8A8A"}
DARK_INK = {INK: "#E6E6E6", INK_SOFT: "#B8B8B8"}
SIM_COLOR = "#B34700"  # the simulated-data label on exported charts (dark orange: 5.6:1 on white)


def _luminance(hex_color: str) -> float:
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


# Black text on light fills, white on dark ones (WCAG contrast: the higher of the two wins).
TEXT_ON: dict[str, str] = {
    m: ("#000000" if (_luminance(c) + 0.05) / 0.05 >= 1.05 / (_luminance(c) + 0.05) else "#FFFFFF")
    for m, c in METHOD_COLORS.items()
}


def methods_in_order(present: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Known methods in palette order, then unknown ones (grey) alphabetically: a stable legend order."""
    known = [m for m in METHOD_COLORS if not present or m in present]
    return known + sorted(set(present) - set(METHOD_COLORS))


def color_of(method: str) -> str:
    return METHOD_COLORS.get(method, FALLBACK)


def scale_domain_range(present: list[str] | tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Domain and range for an Altair colour scale: the same colour for a method on every chart."""
    domain = methods_in_order(present)
    return domain, [color_of(m) for m in domain]


def for_screen(spec: dict, dark: bool = False) -> dict:
    """The same Vega-Lite spec with the background ink of :data:`SCREEN_INK` (or :data:`DARK_INK` when the
    theme is known to be dark); cells keep their colours and their black text."""
    text = json.dumps(spec)
    for light, screen in (DARK_INK if dark else SCREEN_INK).items():
        text = text.replace(f'"{light}"', f'"{screen}"')
    return json.loads(text)
