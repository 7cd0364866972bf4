"""The bad-input corpus: every case raises InputError with the manifest's line and message, on one line."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ingest.errors import InputError
from ingest.traces import DEFAULT_LIMITS, TraceMapping, read_trace

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "corpus" / "traces"
SAMPLES = REPO / "data" / "samples" / "traces"
CASES: list[dict[str, Any]] = tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["case"]
GiB = 1024**3
AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"


def _long_jsonl(path: Path) -> None:
    path.write_text('{"prompt": "x", "output_tokens": 1}\n{"prompt": "' + "a" * 5_000_000 + '"}\n')


def _long_csv(path: Path) -> None:
    path.write_text(AZ + "2023-11-16 18:15:47.0000000," + "1" * 5_000_000 + ",3\n")


def _sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with path.open("wb") as fh:  # sparse: no disk blocks are written
            fh.truncate(size)

    return make


def _copy(sample: str) -> Callable[[Path], None]:
    return lambda path: shutil.copyfile(SAMPLES / sample, path)


GENERATORS: dict[str, Callable[[Path], None]] = {
    "long_line_jsonl": _long_jsonl,
    "long_line_csv": _long_csv,
    "sparse_5gb": _sparse(5 * GiB),
    "sparse_2gb": _sparse(2 * GiB),
    "directory": lambda path: path.mkdir(),
    "missing": lambda path: None,
    "copy_generic_sample": _copy("generic.csv"),
    "copy_azure_sample": _copy("azure_code.csv"),
}


def _path_for(case: dict[str, Any], tmp_path: Path) -> Path:
    if "generate" not in case:
        return CORPUS / case["file"]
    path = tmp_path / case["file"]
    GENERATORS[case["generate"]](path)
    return path


@pytest.mark.parametrize("case", CASES, ids=[f"{c['file']}-{c['format']}" for c in CASES])
def test_corpus_case_raises_input_error_on_the_right_line(case: dict[str, Any], tmp_path: Path) -> None:
    path = _path_for(case, tmp_path)
    limits = replace(DEFAULT_LIMITS, **case.get("limits", {}))
    mapping = TraceMapping(**case["mapping"]) if "mapping" in case else None
    with pytest.raises(InputError) as info:
        read_trace(path, case["format"], mapping=mapping, workload=case.get("workload"), limits=limits)
    err = info.value
    assert (err.line, case["contains"] in err.message) == (case["line"], True), err.one_line()
    one = err.one_line()
    assert "\n" not in one and "\r" not in one
    assert one.startswith(f"error: {path}:{case['line']}: ")


def test_every_corpus_file_is_in_the_manifest_and_there_are_enough_kinds() -> None:
    committed = {p.name for p in CORPUS.iterdir() if p.suffix not in (".py", ".toml")}
    listed = {c["file"] for c in CASES if "generate" not in c}
    assert committed == listed
    assert len(committed) >= 30
    assert len({(c["file"], c["format"]) for c in CASES}) == len(CASES)
