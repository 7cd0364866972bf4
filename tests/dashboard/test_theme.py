"""The shared palette: every method has one distinct colour, readable text on it, none black or white."""

from __future__ import annotations

from dashboard import theme
from ingest.records import KNOWN_METHODS


def test_every_known_method_has_a_distinct_colour():
    methods = [m for m in KNOWN_METHODS if m != "eagle"]
    colours = [theme.color_of(m) for m in methods]
    assert len(set(colours)) == len(colours) and theme.FALLBACK not in colours
    assert not set(colours) & {"#000000", "#FFFFFF"}  # both themes need every colour visible


def test_text_on_each_colour_has_contrast():
    for m, c in theme.METHOD_COLORS.items():
        fg = theme.TEXT_ON[m]
        lum = [theme._luminance(x) for x in (c, fg)]
        assert (max(lum) + 0.05) / (min(lum) + 0.05) >= 4.5, m


def test_domain_order_is_stable():
    dom, rng = theme.scale_domain_range(["ngram", "mtp", "zzz"])
    assert dom == ["mtp", "ngram", "zzz"] and rng[-1] == theme.FALLBACK
