"""Text pages for the PDF report, written directly as PDF (no renderer): title, filters, tables.

Tables must line up, so the body is set in Courier, one of the fourteen fonts every PDF reader has (nothing
embedded, and the text stays selectable and searchable). Those fonts cover Windows-1252 only: the few
other characters the dashboard prints (≤, ≈, →, τ …) are spelled in ASCII, anything else becomes "?".
A page is A4 landscape; :data:`CHARS_PER_LINE` and :data:`LINES_PER_PAGE` are what fits on it.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE_W, PAGE_H = 842, 595  # A4 landscape, points
MARGIN = 36
BODY_PT, LEADING = 8.0, 10.5
TITLE_PT = 14.0
CHARS_PER_LINE = int((PAGE_W - 2 * MARGIN) / (0.6 * BODY_PT))  # Courier advances 0.6 em
LINES_PER_PAGE = int((PAGE_H - 2 * MARGIN - TITLE_PT - 12) / LEADING)

SPELLED = {"≤": "<=", "≥": ">=", "≈": "~", "≠": "!=", "→": "->", "←": "<-", "−": "-", "τ": "tau", "α": "alpha",
           "✓": "v", "✗": "x", "‑": "-", "\u00a0": " "}


@dataclass(frozen=True)
class Line:
    text: str
    strong: bool = False  # bold (section names, the simulated-data label)


def _encode(text: str) -> bytes:
    text = "".join(SPELLED.get(ch, ch) for ch in text)
    raw = text.encode("cp1252", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)").replace(b"\r", b" ")


def _content(title: str, lines: list[Line]) -> bytes:
    y = PAGE_H - MARGIN - TITLE_PT
    ops = [b"BT", b"/F2 %.1f Tf" % TITLE_PT, b"%d %.1f Td" % (MARGIN, y), b"(" + _encode(title) + b") Tj", b"ET"]
    y -= TITLE_PT + 6
    for ln in lines:
        y -= LEADING
        font = b"/F3" if ln.strong else b"/F1"
        ops += [b"BT", font + b" %.1f Tf" % BODY_PT, b"%d %.1f Td" % (MARGIN, y),
                b"(" + _encode(ln.text[:CHARS_PER_LINE]) + b") Tj", b"ET"]
    return b"\n".join(ops)


def text_pdf(pages: list[tuple[str, list[Line]]]) -> bytes:
    """A PDF with one page per (title, lines); each page holds at most :data:`LINES_PER_PAGE` lines."""
    fonts = {b"F1": b"Courier", b"F2": b"Helvetica-Bold", b"F3": b"Courier-Bold"}
    objs: list[bytes] = []  # object n is objs[n - 1]

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    tree = add(b"")
    font_refs = {name: add(b"<< /Type /Font /Subtype /Type1 /BaseFont /" + base + b" /Encoding /WinAnsiEncoding >>")
                 for name, base in fonts.items()}
    resources = b"<< /Font << " + b" ".join(b"/%s %d 0 R" % (n, r) for n, r in font_refs.items()) + b" >> >>"
    kids = []
    for title, lines in pages or [("", [])]:
        stream = _content(title, lines[:LINES_PER_PAGE])
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources %s /Contents %d 0 R >>"
                        % (tree, PAGE_W, PAGE_H, resources, content)))
    objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objs[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, catalog, xref)
    return bytes(out)


def paginate(title: str, lines: list[Line]) -> list[tuple[str, list[Line]]]:
    """Split lines into pages; pages after the first are titled "… (continued)"."""
    out = []
    for i in range(0, max(len(lines), 1), LINES_PER_PAGE):
        out.append((title if i == 0 else f"{title} (continued)", lines[i:i + LINES_PER_PAGE]))
    return out
