"""The matrix file itself: FIFOs, devices and huge files refused before a read; BOM accepted; duplicate list
entries and an unsafe name refused on their line."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.errors import InputError
from runner.matrix import load_matrix
from tests.conftest import REPO, SMALL_MATRIX
from tests.reliability.conftest import assert_clean_usage_error


def _plan(matrix: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    def cap_memory() -> None:  # the old reader grew without bound on /dev/zero: fail fast, not the machine
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "runner", "plan", "--matrix", str(matrix)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap_memory)


def test_a_fifo_as_matrix_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "m.toml"
    os.mkfifo(fifo)
    line = assert_clean_usage_error(_plan(fifo))
    assert "not a regular file (a FIFO (named pipe))" in line


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_link_to_an_endless_device_is_refused(tmp_path: Path, device: str) -> None:
    link = tmp_path / "m.toml"
    link.symlink_to(device)
    assert "a character device" in assert_clean_usage_error(_plan(link))


def test_a_huge_matrix_is_refused_from_its_size(tmp_path: Path) -> None:
    big = tmp_path / "m.toml"
    with big.open("wb") as fh:
        fh.truncate(3 << 30)  # sparse: 3 GB of NULs that cost no disk
    assert "more than the 4,194,304-byte limit" in assert_clean_usage_error(_plan(big))


def test_a_utf8_bom_matrix_is_read(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_bytes(b"\xef\xbb\xbf" + SMALL_MATRIX.encode())
    assert load_matrix(path).name == "small"


@pytest.mark.parametrize(("edit", "key", "line_of"), [
    (("depths = [2, 3]", "depths = [3, 2, 3]"), "methods.eagle3.depths: 3 is listed twice", "depths = [3, 2, 3]"),
    (('gpus = ["MI300X", "MI355X"]', 'gpus = ["MI355X", "MI355X"]'), "gpus: 'MI355X' is listed twice", "gpus ="),
    (("concurrency = [1, 16]", "concurrency = [16, 16]"), "load.concurrency: 16 is listed twice", "concurrency ="),
    (("[families.Gemma]\nmodel = \"google/gemma-4-31B-it\"", "[families.Twin]\nmodel = \"Qwen/Qwen3.5-397B-A17B\"\n"
      "tensor_parallel_size = 2"), "families.Twin: the same server as families.Qwen", "[families.Twin]"),
])
def test_duplicate_list_entries_are_refused_on_their_line(tmp_path: Path, edit: tuple[str, str], key: str,
                                                           line_of: str) -> None:
    text = SMALL_MATRIX.replace(*edit)
    assert text != SMALL_MATRIX
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_matrix(path)
    assert key in exc.value.message
    assert exc.value.line == next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(line_of))


@pytest.mark.parametrize("name", ["evil\u202etxt", "a\u2066b", "tab\there", "bell\x07", "new\nline"])
def test_a_matrix_name_with_control_or_bidi_characters_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "m.toml"
    escaped = name.encode("unicode_escape").decode().replace("\\x", "\\u00")
    path.write_text(f'name = "{escaped}"\n' + SMALL_MATRIX.replace('name = "small"\n', ""))
    with pytest.raises(InputError, match="control or bidi-override") as exc:
        load_matrix(path)
    assert exc.value.line == 1
