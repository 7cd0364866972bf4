"""Data as literal text inside Streamlit Markdown: the one door every store/trace/import string (tenant, workload,
GPU, model, dataset, file name, analysis sentence that names them) goes through before it reaches ``st.markdown``,
``st.caption``, ``st.info``/``warning``/``error``/``success``, a subheader or a widget label.

Streamlit renders those as GitHub Markdown plus its own extensions (``:color[…]`` directives, ``:material/…:``
icons, emoji shortcodes, ``$…$`` LaTeX, bare-URL and e-mail autolinks): a label such as ``![x](http://host/p.png)``
would otherwise be an image the browser fetches. CommonMark lets a backslash make ASCII punctuation literal, and
Streamlit's LaTeX and emoji detectors skip an escaped ``$`` or ``:``. :func:`text` escapes the characters that open
a construct — always ``\\ ` * _ [ ] ~ $ @ |``; ``:`` next to a word or before ``/`` or ``[``; ``<`` before a
non-space; ``&`` of an entity; the dot of ``www.``; a block marker (``#``, ``>``, ``-``, ``+``, ``=``, ``1.``) at
the start — and folds line breaks and control characters to spaces (no headings, lists, tables or code blocks
from a newline). The rest of the punctuation stays as it is, so ``p < 0.01`` or ``Qwen3.5-27B`` read the same in
the source. Raw HTML is shown as text by Streamlit anyway (``unsafe_allow_html`` is never set).

Escapes do not stop GFM's bare-URL and e-mail autolinks: remark-gfm finds ``http://``, ``www.`` and ``x@y.z`` in
the text after parsing (a chart-less page of such labels showed four live links in Chromium). So :data:`JOINER`, an
invisible WORD JOINER (U+2060), goes inside each ``://``, after each ``www`` and after each ``@``: the reader sees
the same characters, no autolink pattern matches. Compare shown text with :func:`unjoined`.
"""

from __future__ import annotations

import re

_ALWAYS = re.compile(r"([\\`*_\[\]~$@|])")
# ":" opening a directive, icon or URL scheme, or closing a shortcode (Streamlit loads its emoji plugin when the
# raw source holds ":word:"; an escaped closing colon never matches)
_BEFORE = re.compile(r"(:(?=[\w/+\-\[])|(?<=[\w+\-]):|<(?=\S)|&(?=#?\w+;))")
_WWW = re.compile(r"(?i)(www)(?=\\?\.)")
_SCHEME = re.compile(r"(:)(?=//)")
_AT = re.compile(r"(@)")
JOINER = "\u2060"  # WORD JOINER: zero width, no break opportunity
_START = re.compile(r"^(\s*)([#>+=\-]|\d+(?=[.)]))")
_BREAKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_PLAIN_URL = re.compile(r"https?://[^\s()<>\[\]\\`\"']+")


def text(value: object) -> str:
    """``value`` as Markdown source that renders exactly as its characters (one line)."""
    out = _BEFORE.sub(r"\\\1", _ALWAYS.sub(r"\\\1", _BREAKS.sub(" ", str(value))))
    out = _WWW.sub(r"\1" + JOINER + r"\\", out)
    out = _AT.sub(r"\1" + JOINER, _SCHEME.sub(r"\1" + JOINER, out))
    return _START.sub(lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2)[0].isdigit() else "\\" + m.group(2)),
                      out, count=1)


def link(url: str) -> str:
    """A source URL as a link when it is a plain http(s) URL (shown as its own escaped text), else as text."""
    if _PLAIN_URL.fullmatch(url or ""):
        return f"[{text(url)}]({url})"
    return text(url)


def unjoined(shown: str) -> str:
    """Text as a reader copies it, without the invisible joiners :func:`text` adds."""
    return shown.replace(JOINER, "")
