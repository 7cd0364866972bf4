"""Token-count estimator for traces that carry text but no counts (ShareGPT, vLLM custom, Spec-Bench).

No tokenizer is bundled (each model family has its own BPE vocabulary, and downloading one is not
possible offline), so counts are *estimated* from two published rules of thumb for English text on
GPT-style BPE vocabularies: ~4 characters per token and ~0.75 words per token (OpenAI's guidance).
The estimate is the mean of the two, which damps each rule's failure mode (long identifiers and URLs
for the word rule, whitespace-heavy text for the character rule). CJK ideographs, kana and hangul
are counted as one token each instead, because BPE vocabularies rarely merge them.

Accuracy is **not measured** here against any real tokenizer: treat the numbers as approximate
(the rules of thumb themselves are usually quoted as within ~±25 % on English prose; code,
non-English text and a given model's vocabulary can be further off). Re-scoring only needs output
lengths in coarse buckets, which is why an estimate is acceptable; a trace with real counts should
always be preferred.
"""

from __future__ import annotations

import math
import re

import polars as pl

CHARS_PER_TOKEN = 4.0
TOKENS_PER_WORD = 4.0 / 3.0  # i.e. 0.75 words per token
# CJK ideographs, kana, hangul and full-width forms: about one token per character.
_WIDE = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
# Whitespace spelled out, so Python's re and polars' Rust regex agree on every character.
_SPACE = r" \t\n\r\f\v\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WIDE_CHARS = f"[{_WIDE}]"
WORDS = f"[^{_SPACE}{_WIDE}]+"  # runs of narrow (non-CJK) text between spaces
NON_BLANK = f"[^{_SPACE}]"
_WIDE_RE, _WORD_RE, _NON_BLANK_RE = re.compile(WIDE_CHARS), re.compile(WORDS), re.compile(NON_BLANK)


def estimate_tokens_expr(text: pl.Expr) -> pl.Expr:
    """Estimated token count (Int64) of each string; null stays null, blank text is 0."""
    wide = text.str.count_matches(WIDE_CHARS).cast(pl.Float64)
    narrow = text.str.len_chars().cast(pl.Float64) - wide
    words = text.str.count_matches(WORDS).cast(pl.Float64)
    blended = 0.5 * (narrow / CHARS_PER_TOKEN) + 0.5 * (words * TOKENS_PER_WORD) + wide
    est = (blended + 0.5).floor().cast(pl.Int64)  # round half up, same as the scalar version
    # Any non-blank text is at least one token.
    return (
        pl.when(text.str.contains(NON_BLANK))
        .then(pl.max_horizontal(est, pl.lit(1, pl.Int64)))
        .otherwise(pl.when(text.is_not_null()).then(pl.lit(0, pl.Int64)))
    )


def estimate_tokens(text: str) -> int:
    """Scalar version of :func:`estimate_tokens_expr` (same formula), for tests and one-off use."""
    if not _NON_BLANK_RE.search(text):
        return 0
    wide = len(_WIDE_RE.findall(text))
    words = len(_WORD_RE.findall(text))
    blended = 0.5 * ((len(text) - wide) / CHARS_PER_TOKEN) + 0.5 * (words * TOKENS_PER_WORD) + wide
    return max(1, math.floor(blended + 0.5))
