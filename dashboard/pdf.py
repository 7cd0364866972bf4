"""The PDF report, laid out by ReportLab (platypus): summary page, charts inline with captions, tables with
human headers that wrap and repeat their header row across pages, a footer (and the simulated label) on
every page.

Fonts are embedded TrueType, so every character the dashboard prints (``dflash·5``, ``≈``, ``–``, ``→``,
family and workload names in any Latin, Greek or Cyrillic script) stays itself in the text layer:
DejaVu Sans from the system (Debian's fonts-dejavu-core; scripts/test.sh installs it on CI) when present,
else Bitstream Vera, which ships inside the ReportLab wheel itself — so ``pip install -r requirements.txt``
alone still makes a correct PDF. DejaVu is Vera extended; the few characters Vera lacks (``→``, Greek) are
spelled in ASCII (``->``, ``tau``) only when Vera is the font in use (docs/reports.md).
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import reportlab
from reportlab.lib import colors
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.lib.utils import ImageReader
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import (
    BaseDocTemplate,
    CondPageBreak,
    Flowable,
    Frame,
    Image,
    KeepTogether,
    PageTemplate,
    Paragraph,
    Preformatted,
    Spacer,
    Table,
    TableStyle,
)

PAGE_W, PAGE_H = landscape(A4)
MARGIN = 14 * mm
FRAME_W = PAGE_W - 2 * MARGIN
FRAME_H = PAGE_H - 2 * MARGIN - 10  # the footer sits in the bottom margin
BODY_PT, TABLE_PT, CODE_PT = 9.0, 7.0, 7.5
SYSTEM_DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
BUNDLED_VERA = Path(reportlab.__file__).parent / "fonts"
SIM_COLOR = colors.HexColor("#8a5a00")
SPELLED = {"→": "->", "←": "<-", "τ": "tau", "α": "alpha", "✓": "v", "✗": "x", "‑": "-"}


@dataclass(frozen=True)
class Fonts:
    """The registered font names (regular, bold, italic, mono) and the characters they hold."""

    regular: str
    bold: str
    italic: str
    mono: str
    source: str  # "DejaVu (system)" / "Vera (bundled with ReportLab)"
    chars: frozenset[int]


@cache
def fonts(choice: str = "auto") -> Fonts:
    """``auto``: the system's DejaVu when installed, else ReportLab's own Vera; ``bundled``: Vera always (what
    a machine with requirements.txt only gets)."""
    files = {"regular": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "italic": "DejaVuSans-Oblique.ttf",
             "mono": "DejaVuSansMono.ttf"}
    if choice == "auto" and all((SYSTEM_DEJAVU / f).is_file() for f in files.values()):
        folder, prefix, source = SYSTEM_DEJAVU, "SpectuneDejaVu", "DejaVu (system)"
    else:
        files = {"regular": "Vera.ttf", "bold": "VeraBd.ttf", "italic": "VeraIt.ttf", "mono": "Vera.ttf"}
        folder, prefix, source = BUNDLED_VERA, "SpectuneVera", "Vera (bundled with ReportLab)"
    names = {}
    for role, f in files.items():
        name = f"{prefix}-{role}"
        font = TTFont(name, str(folder / f))
        pdfmetrics.registerFont(font)
        names[role] = name
        if role == "regular":
            chars = frozenset(font.face.charToGlyph)
    return Fonts(**names, source=source, chars=chars)


def fit(text: str, f: Fonts) -> str:
    """``text`` with the characters the font has no glyph for spelled in ASCII where a spelling exists."""
    if text.isascii():  # every font here has ASCII
        return text
    return "".join(SPELLED.get(ch, ch) if ord(ch) not in f.chars else ch for ch in text)


@dataclass(frozen=True)
class Styles:
    f: Fonts

    def p(self, name: str) -> ParagraphStyle:
        return _styles(self.f)[name]

    def para(self, text: str, style: str) -> Paragraph:
        return Paragraph(html.escape(fit(text, self.f), quote=False), self.p(style))

    def lines(self, lines: Sequence[str], style: str) -> Preformatted:
        """Lines kept as they are, plain spaces included (a copied command pastes into a shell): a deploy
        command already cut at shell-word boundaries."""
        return Preformatted("\n".join(fit(ln, self.f) for ln in lines), self.p(style))


@cache
def _styles(f: Fonts) -> dict[str, ParagraphStyle]:
    name = "spectune"
    base = ParagraphStyle(name, fontName=f.regular, fontSize=BODY_PT, leading=BODY_PT * 1.3)
    return {
        "title": ParagraphStyle(name, parent=base, fontName=f.bold, fontSize=16, leading=20, spaceAfter=2),
        "meta": ParagraphStyle(name, parent=base, textColor=colors.grey, spaceAfter=6),
        "h2": ParagraphStyle(name, parent=base, fontName=f.bold, fontSize=11.5, leading=15, spaceBefore=8,
                             spaceAfter=3),
        "sim": ParagraphStyle(name, parent=base, fontName=f.bold, textColor=SIM_COLOR, borderColor=SIM_COLOR,
                              borderWidth=0.8, borderPadding=4, backColor=colors.HexColor("#fff3cd"),
                              spaceBefore=4, spaceAfter=8),
        "body": base,
        "caption": ParagraphStyle(name, parent=base, fontName=f.italic, fontSize=8.5, textColor=colors.grey,
                                  spaceBefore=2, spaceAfter=10),
        "cell": ParagraphStyle(name, parent=base, fontSize=TABLE_PT, leading=TABLE_PT * 1.25),
        "cellnum": ParagraphStyle(name, parent=base, fontSize=TABLE_PT, leading=TABLE_PT * 1.25,
                                  alignment=TA_RIGHT),
        "head": ParagraphStyle(name, parent=base, fontName=f.bold, fontSize=TABLE_PT, leading=TABLE_PT * 1.25),
        "answer": ParagraphStyle(name, parent=base, fontName=f.bold, fontSize=10.5, leading=13),
        "code": ParagraphStyle(name, parent=base, fontName=f.mono, fontSize=CODE_PT, leading=CODE_PT * 1.3),
        "note": ParagraphStyle(name, parent=base, fontName=f.italic, fontSize=8, leading=10),
    }


def heading(s: Styles, text: str) -> list[Flowable]:
    """A section heading that never ends a page: a new page when less than ~5 lines are left below it."""
    return [CondPageBreak(60), s.para(text, "h2")]


def code_chars(width_pt: float, f: Fonts) -> int:
    """How many characters of the code font fit in ``width_pt``."""
    return max(20, int(width_pt / pdfmetrics.stringWidth("0", f.mono, CODE_PT)))


def image(png: bytes, max_h: float = FRAME_H - 60) -> Image:
    """A chart picture (vl-convert PNG at scale 2) at its own size, shrunk to fit the frame."""
    w_px, h_px = ImageReader(io.BytesIO(png)).getSize()
    w, h = w_px / 2 * 0.75, h_px / 2 * 0.75  # 2 pixels per CSS pixel; 0.75 pt per CSS pixel
    k = min(1.0, FRAME_W / w, max_h / h)
    pic = Image(io.BytesIO(png), width=w * k, height=h * k)
    pic.hAlign = "LEFT"
    return pic


def table(s: Styles, head: list[str], rows: list[list[str]], numeric: list[bool], widths: list[float]) -> Table:
    room = [w - 6.5 for w in widths]

    def cell(j: int, text: str) -> object:
        # a cell that fits its column stays a plain string: ReportLab sets it ~20× faster than a Paragraph
        text = fit(text, s.f)
        if "\n" not in text and pdfmetrics.stringWidth(text, s.f.regular, TABLE_PT) <= room[j]:
            return text
        return s.para(text, "cellnum" if numeric[j] else "cell")

    cells = [[s.para(h, "head") for h in head]]
    cells += [[cell(j, t) for j, t in enumerate(r)] for r in rows]
    t = Table(cells, colWidths=widths, repeatRows=1, hAlign="LEFT")
    t.setStyle(TableStyle([
        ("FONT", (0, 1), (-1, -1), s.f.regular, TABLE_PT, TABLE_PT * 1.25),
        *[("ALIGN", (j, 1), (j, -1), "RIGHT") for j, num in enumerate(numeric) if num],
        ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#bbbbbb")),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eeeeee")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 1.5), ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
        ("LEFTPADDING", (0, 0), (-1, -1), 3), ("RIGHTPADDING", (0, 0), (-1, -1), 3),
    ]))
    return t


def column_widths(s: Styles, head: list[str], cols: list[list[str]]) -> tuple[list[float], list[float]]:
    """Per column: its natural width (longest cell, at most 45 characters' worth) and the least it can
    wrap to (its longest word up to 14 characters' worth, a third of its natural width), in points, padding
    included."""
    def w(text: str, font: str = s.f.regular) -> float:
        return pdfmetrics.stringWidth(fit(text, s.f), font, TABLE_PT) + 8

    cap, floor = w("0" * 45), w("0" * 14)
    natural, least = [], []
    for h, col in zip(head, cols, strict=True):
        natural.append(min(cap, max([w(h, s.f.bold), *(w(t) for t in col)])))
        longest_word = max([w(x, s.f.bold) for x in h.split() or [""]] + [w(x) for t in col for x in t.split()])
        # a cell may wrap to about three lines, never inside a word (up to 14 characters)
        least.append(min(natural[-1], max(min(floor, longest_word), natural[-1] / 3, w("0" * 6))))
    return natural, least


def column_groups(least: list[float], keys: list[int], avail: float = FRAME_W) -> list[list[int]]:
    """Columns split into groups that fit ``avail`` at their least widths, each repeating the ``keys``."""
    groups: list[list[int]] = []
    for i in range(len(least)):
        if groups and sum(least[j] for j in groups[-1]) + least[i] <= avail:
            groups[-1].append(i)
        elif not groups or i in keys:
            groups.append([i])
        else:
            groups.append([*keys, i])
    return groups


def fitted(natural: list[float], least: list[float], avail: float = FRAME_W) -> list[float]:
    """Widths that fill at most ``avail``: natural when they fit, else the spare room shared out in
    proportion to what each column would like beyond its least width."""
    if sum(natural) <= avail:
        return natural
    spare = max(0.0, avail - sum(least))
    want = sum(n - lo for n, lo in zip(natural, least, strict=True)) or 1.0
    return [lo + spare * (n - lo) / want for n, lo in zip(natural, least, strict=True)]


def build(flow: list[Flowable], f: Fonts, title: str, footer: str, sim_label: str | None) -> bytes:
    """The document: ``flow`` in an A4-landscape frame; every page carries ``footer`` and its number, and the
    simulated label when ``sim_label`` is set (a chart page travels on its own too)."""
    out = io.BytesIO()

    def page(canvas, doc) -> None:  # type: ignore[no-untyped-def]
        canvas.saveState()
        canvas.setFont(f.regular, 7.5)
        canvas.setFillColor(colors.grey)
        canvas.drawString(MARGIN, MARGIN - 12, fit(footer, f))
        canvas.drawRightString(PAGE_W - MARGIN, MARGIN - 12, f"page {doc.page}")
        if sim_label:
            canvas.setFont(f.bold, 7.5)
            canvas.setFillColor(SIM_COLOR)
            canvas.drawString(MARGIN, PAGE_H - MARGIN + 6, fit(sim_label, f))
        canvas.restoreState()

    doc = BaseDocTemplate(out, pagesize=(PAGE_W, PAGE_H), leftMargin=MARGIN, rightMargin=MARGIN, topMargin=MARGIN,
                          bottomMargin=MARGIN, title=title, author="spectune", creator="spectune (ReportLab)")
    doc.addPageTemplates([PageTemplate("page", [Frame(MARGIN, MARGIN, FRAME_W, PAGE_H - 2 * MARGIN, id="body",
                                                      leftPadding=0, rightPadding=0, topPadding=0,
                                                      bottomPadding=0)], onPage=page)])
    doc.build(flow)
    return out.getvalue()


__all__ = ["FRAME_W", "Fonts", "KeepTogether", "Spacer", "Styles", "build", "code_chars", "column_groups",
           "column_widths", "fit", "fitted", "fonts", "image", "table"]
