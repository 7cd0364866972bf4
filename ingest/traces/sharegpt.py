"""ShareGPT conversation dump reader (e.g. ``ShareGPT_V3_unfiltered_cleaned_split.json``).

A JSON *document*: a top-level list of ``{"id": str, "conversations": [{"from": "human" | "gpt" |
"system", "value": text}, ...]}``. Each human turn immediately followed by a model turn becomes one
request: prompt = the human text (earlier turns are not prepended), input and output tokens
*estimated* (:mod:`ingest.traces.tokens`) from the human and the model text. System turns are
ignored; a human or model turn without its partner is dropped and counted (``unpaired_turns``).
``user``/``assistant`` (and ``chatgpt``/``bard``/``bing``) are accepted as role aliases. The JSON Lines
variant many ShareGPT-derived datasets ship (one conversation object per line) is read the same way.

The list is decoded one conversation at a time from a sliding text window (``raw_decode``), so
memory holds one conversation plus the extracted columns, never the whole parsed document; the
document is still capped at ``Limits.max_json_bytes`` because its text ends up in the prompt column.
Too-deep nesting (``RecursionError``) and malformed JSON are reported on their line.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

import polars as pl

from ingest.traces.limits import Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source
from ingest.traces.tokens import estimate_tokens_expr

HUMAN = frozenset({"human", "user"})
MODEL = frozenset({"gpt", "assistant", "chatgpt", "bard", "bing", "model"})
WINDOW = 4 * 1024 * 1024
_WS = re.compile(r"[ \t\r\n]*")


class _Stream:
    """A text window over the file that advances through a JSON list, tracking line numbers."""

    def __init__(self, src: Source, limits: Limits) -> None:
        self.src, self.limits = src, limits
        self.fh = src.data_path.open("rb")
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.buf, self.pos, self.line, self.eof = "", 0, 1, False

    def fill(self) -> bool:
        """Append more text; False at end of file. Consumed text is dropped (line count kept)."""
        if self.eof:
            return False
        self.line += self.buf.count("\n", 0, self.pos)
        self.buf, self.pos = self.buf[self.pos:], 0
        block = self.fh.read(WINDOW)
        self.eof = not block
        self.buf += self.decoder.decode(block, final=self.eof)
        return not self.eof or bool(self.buf)

    def skip_ws(self) -> str:
        """Next non-blank character ('' at end of file), without consuming it."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self.eof:
                return ""
            self.fill()

    def line_at(self, pos: int) -> int:
        return self.line + self.buf.count("\n", 0, pos)

    def element(self, decoder: json.JSONDecoder) -> tuple[Any, int]:
        """Decode the value at the cursor, reading more text while it is incomplete."""
        start = self.pos
        while True:
            try:
                value, end = decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise self.src.fail(self.line_at(start), "JSON nested too deeply; expected a list of "
                                                         "conversations") from None
            except json.JSONDecodeError as exc:
                too_big = len(self.buf) - self.pos > self.limits.max_json_element_bytes
                if too_big or self.eof or not self._more():
                    where = self.line_at(min(exc.pos, len(self.buf)))
                    raise self.src.fail(where, f"invalid JSON ({exc.msg}); expected a list of conversations"
                                        ) from None
                start = self.pos
                continue
            line = self.line_at(start)
            self.pos = end
            return value, line

    def _more(self) -> bool:
        before = len(self.buf) - self.pos
        self.fill()
        return len(self.buf) - self.pos > before


def _turns(src: Source, conv: Any, line: int) -> list[tuple[str, str]]:
    if not isinstance(conv, dict) or not isinstance(conv.get("conversations"), list):
        raise src.fail(line, "expected a conversation object with a 'conversations' list")
    out: list[tuple[str, str]] = []
    for i, turn in enumerate(conv["conversations"]):
        if not isinstance(turn, dict) or not isinstance(turn.get("from"), str):
            raise src.fail(line, f"turn {i + 1} of conversation {str(conv.get('id'))[:40]!r}: expected "
                                 "{'from': role, 'value': text}")
        if not isinstance(turn.get("value"), str):
            raise src.fail(line, f"turn {i + 1} of conversation {str(conv.get('id'))[:40]!r}: expected text "
                                 f"in 'value', got {type(turn.get('value')).__name__}")
        out.append((turn["from"].strip().lower(), turn["value"]))
    return out


def read_sharegpt(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    if src.size > limits.max_json_bytes:
        raise src.fail(0, f"JSON document is {src.size:,} bytes, more than the {limits.max_json_bytes:,}-byte "
                          "limit; split it or convert it to JSONL")
    stream, decoder = _Stream(src, limits), json.JSONDecoder()
    prompts: list[str] = []
    answers: list[str] = []
    lines: list[int] = []
    unpaired = 0
    def take(conv: Any, line: int) -> None:
        nonlocal unpaired
        turns = _turns(src, conv, line)
        i = 0
        while i < len(turns):
            role, text = turns[i]
            if role in HUMAN and i + 1 < len(turns) and turns[i + 1][0] in MODEL:
                prompts.append(text)
                answers.append(turns[i + 1][1])
                lines.append(line)
                i += 2
                continue
            unpaired += role in HUMAN or role in MODEL
            i += 1

    try:
        first_char = stream.skip_ws()
        if first_char == "{":  # JSON Lines: one conversation object per line
            while stream.skip_ws() != "":
                take(*stream.element(decoder))
        elif first_char != "[":
            raise src.fail(stream.line_at(stream.pos), "expected a JSON list of conversations ('[' first) "
                                                       "or one conversation object per line")
        else:
            stream.pos += 1
            first = True
            while True:
                ch = stream.skip_ws()
                if ch == "]":
                    stream.pos += 1
                    break
                if not first:
                    if ch != ",":
                        raise src.fail(stream.line_at(stream.pos), "expected ',' or ']' between conversations")
                    stream.pos += 1
                    stream.skip_ws()
                first = False
                take(*stream.element(decoder))
        if first_char == "[" and stream.skip_ws() != "":
            raise src.fail(stream.line_at(stream.pos), "unexpected data after the closing ']'")
    except UnicodeDecodeError:
        raise src.fail(stream.line, "invalid UTF-8; expected UTF-8 text") from None
    finally:
        stream.fh.close()
    if not lines and not unpaired:
        raise src.fail(1, "no conversations in the list; expected at least one human/gpt exchange")
    frame = pl.DataFrame(
        {"_rec": pl.Series(range(len(prompts)), dtype=pl.Int64), "prompt": prompts, "_answer": answers},
        schema={"_rec": pl.Int64, "prompt": pl.String, "_answer": pl.String},
    ).with_columns(estimate_tokens_expr(pl.col("_answer")).alias("output_tokens")).drop("_answer")
    line_of = pl.Series(lines, dtype=pl.Int64)
    raw = RawTable(frame=frame, columns={"prompt": "value"}, locate=lambda rec: int(line_of[rec]))
    if unpaired:
        raw.dropped["unpaired_turns"] = unpaired
    raw.warnings.append("output tokens were estimated from the model's reply text (approximate)")
    return raw
