"""The streaming document reader (ingest/results/jsonstream.py): json.loads' values, lines, errors; any block size."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.results import jsonstream
from ingest.results.jsonstream import SKIPPED_ARRAY, SKIPPED_OBJECT, json_docs, keep_top

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "results"
HOSTILE_TEXT = ['a "quoted" \\ back\\slash', "NaN Infinity -Infinity", "é中\u2028\U0001f600", "\\u0000", "x" * 50,
                "}]{[,:", ""]


def _same(a: object, b: object) -> bool:
    """Equal as json.loads gives it, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([0, -1, 7, 2**70, -(2**65)])
    if kind == 1:
        return rng.choice([0.5, -0.0, 1e-300, 123.456e10, float("nan"), float("inf"), float("-inf")])
    if kind == 2:
        return rng.choice(HOSTILE_TEXT)
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.choice(HOSTILE_TEXT) * rng.randrange(1, 4)
    if kind in (5, 6):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(HOSTILE_TEXT) + str(i): _random_value(rng, depth + 1) for i in range(rng.randrange(4))}


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1 << 20])
def test_values_lines_and_offsets_match_json_loads_at_any_block_size(tmp_path: Path, monkeypatch,
                                                                     block: int) -> None:
    monkeypatch.setattr(jsonstream, "CHUNK", block)
    rng = random.Random(block)
    docs = [{"k": _random_value(rng), "i": i, "1e400": 1} for i in range(40)]
    pieces, starts, pos, line = [], [], 0, 1
    for i, d in enumerate(docs):
        sep = ["\n", "\n\n   \n", " ", "\r\n"][i % 4] if i else "\n \n"
        text = json.dumps(d, indent=(2 if i % 3 == 0 else None), ensure_ascii=bool(i % 2))
        if i % 5 == 0:
            text = text.replace('"1e400": 1', '"1e400": 1e400')
        pieces.append(sep)
        pos += len(sep.encode())
        line += sep.count("\n")
        starts.append((pos, line))
        pieces.append(text)
        pos += len(text.encode())
        line += text.count("\n")
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(pieces))
    got = json_docs(path)
    assert [(d.offset, d.line) for d in got] == starts
    expected = [json.loads(t) for t in pieces[1::2]]
    assert all(_same(g.value, e) for g, e in zip(got, expected, strict=True))


def test_nan_infinity_and_overflowing_numbers_read_as_json_loads_reads_them(tmp_path: Path) -> None:
    text = ('{"a": NaN, "b": [Infinity, -Infinity, 1e400, -1e400, 1e-400, 123456789012345678901234567890],'
            ' "c": "NaN Infinity", "d": 0.1}')
    path = tmp_path / "x.json"
    path.write_text(text)
    assert _same(json_docs(path)[0].value, json.loads(text))
    path.write_text('{"d": 0.1, "e": -2}')  # no overflow: the fast (double) pass alone
    assert json_docs(path)[0].value == {"d": 0.1, "e": -2}


def test_a_policy_builds_what_it_keeps_and_leaves_placeholders(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"keep": [1, {"a": [2]}], "gen": ["' + "t" * 3_000_000 + '", "u"], "obj": {"x": [1]}, "s": 5}')
    doc = json_docs(path, keep_top({"keep"}))[0].value
    assert doc == {"keep": [1, {"a": [2]}], "gen": SKIPPED_ARRAY, "obj": SKIPPED_OBJECT, "s": 5}


def test_doc_key_line_finds_the_key_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"a": 1}\n{\n  "b": 2,\n  "duration": -1\n}\n')
    second = json_docs(path)[1]
    assert (second.line, second.key_line("duration"), second.key_line("absent")) == (2, 4, 2)


def test_syntax_errors_keep_jsons_message_and_line_in_small_files(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    for text, line, message in (('{"a": 1,\n "b" 2}', 2, "Expecting ':' delimiter"),
                                ('{"a": 1}\n{"b": [1, 2}\n', 2, "Expecting ',' delimiter"),
                                ('{"a": 1', 1, "Expecting ',' delimiter"),
                                ("[" * 5000, 1, "nesting too deep")):
        path.write_text(text)
        with pytest.raises(InputError) as exc:
            json_docs(path)
        assert (exc.value.line, message in exc.value.message) == (line, True), exc.value.one_line()


def test_syntax_errors_in_big_files_are_found_on_their_line_in_bounded_memory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(jsonstream, "EXACT_ERRORS_BYTES", 1000)  # as if the file were over the exact-error size
    path = tmp_path / "x.json"
    path.write_text('{"a": 1}\n' + " \n" * 3000 + '{"b": 2,\n"c" 3}\n')
    with pytest.raises(InputError) as exc:
        json_docs(path)
    assert exc.value.line == 3003 and "invalid JSON" in exc.value.message


def test_the_samples_read_as_json_loads_reads_them() -> None:
    for path in sorted(SAMPLES.glob("*.json*")):
        text = path.read_text()
        expected = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" \
            else [json.loads(text)]
        got = [d.value for d in json_docs(path)]
        assert all(_same(g, e) for g, e in zip(got, expected, strict=True)) and len(got) == len(expected), path
