"""Uploads: capped (config, server, page), names never used as paths, temp files removed, a 2 GB upload refused
quickly without being read into memory — at every layer a 2 GB file could arrive through.

Layers: the real browser (Chromium refuses the file before sending a byte), the real Streamlit server (a
2 GB Content-Length is answered 413 before the body is read; a body without Content-Length is cut at the
cap while streaming), the "Your traffic" page (its own cap, AppTest), and the readers/CLIs (a sparse 2 GB
file is refused after reading at most a few MB: measured wall time and peak RSS of the real process).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlparse

import pytest

from ingest import sql, store
from ingest.errors import InputError
from ingest.traces import Limits, read_trace
from tests.conftest import REPO
from tests.reliability.conftest import fingerprint
from tests.reliability.stclient import Session, raw_put, rss_mb, serve, xsrf_cookie

GiB = 1024**3
SAMPLE = (REPO / "data" / "samples" / "traces" / "azure_code.csv").read_bytes()
MARK = "Zq7evil"
# (A NUL in a file name cannot come from a browser, and Streamlit itself refuses it before the page runs.)
HOSTILE_NAMES = [f"../../../../../tmp/{MARK}.csv", f"/etc/cron.d/{MARK}.csv", f"..\\..\\{MARK}.csv",
                 f"{MARK}\u202ecsv.exe.csv", MARK + "A" * 300 + ".csv", f"{MARK}; rm -rf ~.csv", f"{MARK}$(id).csv",
                 f"~/{MARK}.csv", f"{MARK}\n.csv"]


def sparse(path: Path, size: int = 2 * GiB, head: bytes = b"") -> Path:
    with path.open("wb") as fh:  # no disk blocks: the test costs nothing however big the file claims to be
        fh.write(head)
        fh.truncate(size)
    return path


_HWM_WRAPPER = (
    "import atexit, runpy, sys\n"
    "def _report():\n"
    "    with open('/proc/self/status') as fh:\n"
    "        hwm = next(line for line in fh if line.startswith('VmHWM'))\n"
    "    sys.stderr.write('\\nSPECTUNE_HWM_KB ' + hwm.split()[1] + '\\n')\n"
    "atexit.register(_report)\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
)


def measured(argv: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    """(exit code, wall seconds, peak RSS MB, stderr) of one real subprocess.

    Peak RSS is the child's own VmHWM, read at its exit: rusage's ru_maxrss would inherit the (large)
    pytest parent's high-water mark across fork+exec on Linux.
    """
    assert argv[0] == "-m"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _HWM_WRAPPER, *argv[1:]], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.monotonic() - t0
    lines = proc.stderr.splitlines()
    hwm = [int(line.split()[1]) for line in lines if line.startswith("SPECTUNE_HWM_KB ")]
    err = "\n".join(line for line in lines if not line.startswith("SPECTUNE_HWM_KB ")).strip() + "\n"
    return proc.returncode, elapsed, (hwm[-1] / 1024 if hwm else float("nan")), err


# ---- readers and CLIs ---------------------------------------------------------------------------

CLIS = [["-m", "ingest", "trace"], ["-m", "analysis", "rescore"], ["-m", "ingest", "results"]]


@pytest.mark.parametrize("argv", CLIS, ids=["ingest-trace", "analysis-rescore", "ingest-results"])
def test_cli_refuses_a_2gb_file_quickly_in_bounded_memory(argv: list[str], tmp_path: Path, tiny_store: Path) -> None:
    huge = sparse(tmp_path / "huge.csv", head=b"TIMESTAMP,ContextTokens,GeneratedTokens\n")
    before = fingerprint(tiny_store)
    code, seconds, rss, err = measured([*argv, str(huge), "--db", str(tiny_store)], {"SPECTUNE_DB": str(tiny_store)})
    print(f"{' '.join(argv[1:])}: 2 GiB refused in {seconds:.2f} s, peak RSS {rss:.0f} MB: {err.strip()[:160]}")
    assert code == 2 and err.startswith(f"error: {huge}:") and "Traceback" not in err
    assert seconds < 30  # generous for a loaded CI machine; typically ~2 s, almost all of it imports
    assert rss < 600  # the file is never read whole: the process stays at its import footprint
    assert fingerprint(tiny_store) == before


def test_reader_size_cap_refuses_before_reading_a_byte(tmp_path: Path) -> None:
    """With the upload cap as its limit, the reader refuses a 2 GB file from its size alone."""
    huge = sparse(tmp_path / "huge.csv", head=b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n")
    tracemalloc.start()
    t0 = time.monotonic()
    with pytest.raises(InputError) as info:
        read_trace(huge, limits=Limits(max_file_bytes=200 * 1024 * 1024))
    seconds = time.monotonic() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "limit" in info.value.message and info.value.line == 0
    assert seconds < 2 and peak < 2 * 1024 * 1024, (seconds, peak)


# ---- the "Your traffic" page (AppTest) ------------------------------------------------------------

class OpenLog:
    """Every file-system event whose path mentions ``MARK`` (audit hooks cannot be removed: a flag arms it)."""

    events: ClassVar[list[tuple[str, str]]] = []
    armed: ClassVar[bool] = False
    installed: ClassVar[bool] = False

    @classmethod
    def hook(cls, event: str, args: tuple) -> None:
        if not cls.armed or not (event == "open" or event.startswith(("os.", "shutil."))):
            return
        for a in args:
            if isinstance(a, str | bytes | os.PathLike):
                text = os.fsdecode(a) if not isinstance(a, str) else a
                if MARK in text:
                    cls.events.append((event, text[:200]))

    @classmethod
    @contextlib.contextmanager
    def watching(cls):
        if not cls.installed:
            sys.addaudithook(cls.hook)
            cls.installed = True
        cls.events.clear()
        cls.armed = True
        try:
            yield cls.events
        finally:
            cls.armed = False


@pytest.fixture
def page_env(default_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db = tmp_path / "store.duckdb"
    db.write_bytes(default_db.read_bytes())
    monkeypatch.setenv("SPECTUNE_DB", str(db))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # every temp folder the page makes lands here
    monkeypatch.chdir(tmp_path)  # a relative upload name would resolve here: must stay empty of it
    return db, scratch


def _traffic():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("views/traffic.py")
    at.run()
    assert not at.exception
    return at


def _names(db: Path) -> list[tuple[str, str]]:
    with store.session(db, read_only=True) as con:
        return sql.frame(con, "SELECT name, source_path FROM traces ORDER BY name").rows()


def test_upload_names_are_labels_never_paths(page_env) -> None:
    db, scratch = page_env
    at = _traffic()
    baseline = set(scratch.iterdir())  # (opening the app may make a temp folder of its own, once)
    with OpenLog.watching() as events:
        for i, name in enumerate(HOSTILE_NAMES):
            data = SAMPLE + f"2023-11-16 19:00:0{i}.0000000,100,{10 + i}\n".encode()  # new content each time
            at.file_uploader(key="traffic.upload").set_value((name, data, "text/csv")).run()
            assert not at.exception, (name, [e.message[:300] for e in at.exception])
            assert not at.error, (name, [e.value[:300] for e in at.error])
    assert events == [], events  # no open/mkdir/rename/copy ever touched a path built from an upload name
    assert set(scratch.iterdir()) == baseline  # the uploads' temp folders are removed
    assert not any(MARK in p.name for p in Path.cwd().rglob("*")) and not Path(f"/tmp/{MARK}.csv").exists()
    stored = [(n, s) for n, s in _names(db) if MARK in n]
    assert len(stored) == len(HOSTILE_NAMES), stored
    for name, source in stored:
        assert source == "upload"
        assert not any(c in name for c in ("/", "\\", "\x00", "\u202e", "$", ";", "~")), name
        assert len(name) <= 120


def test_the_path_watch_sees_file_system_events(tmp_path: Path) -> None:
    """The control for the test above: the audit hook does record a path built from a name."""
    with OpenLog.watching() as events:
        (tmp_path / f"{MARK}.csv").write_text("x")
        (tmp_path / f"{MARK}.csv").unlink()
    assert [e for e, _ in events] == ["open", "os.remove"], events


def test_oversized_upload_is_refused_by_the_page_and_stores_nothing(page_env, monkeypatch) -> None:
    db, scratch = page_env
    monkeypatch.setenv("SPECTUNE_MAX_UPLOAD_MB", "1")
    before = fingerprint(db)
    at = _traffic()
    baseline = set(scratch.iterdir())
    big = SAMPLE * (1_300_000 // len(SAMPLE) + 1)
    at.file_uploader(key="traffic.upload").set_value(("big.csv", big, "text/csv")).run()
    assert not at.exception
    assert any("over the 1 MB limit" in e.value for e in at.error), [e.value for e in at.error]
    assert set(scratch.iterdir()) == baseline  # refused before a temp file was even made
    assert fingerprint(db) == before


def test_bad_upload_leaves_no_temp_file_and_no_rows(page_env) -> None:
    db, scratch = page_env
    before = fingerprint(db)
    at = _traffic()
    baseline = set(scratch.iterdir())
    for name, data in (("junk.csv", bytes(range(256)) * 64), ("neg.csv", b"input_tokens,output_tokens\n-5,3\n"),
                       ("junk.csv.gz", gzip.compress(bytes(range(256)) * 64)),
                       ("cut.csv.gz", (REPO / "tests" / "corpus" / "traces" / "gzip_truncated.csv.gz").read_bytes())):
        at.file_uploader(key="traffic.upload").set_value((name, data, "text/csv")).run()
        assert not at.exception
        # the Markdown source escapes the file name's punctuation (dashboard/md.py); compare what a reader sees
        errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]
        assert errors and all(e.startswith("error: ") and "\n" not in e for e in errors), errors
        assert "spectune-upload" not in " ".join(errors)  # the private temp path is never shown
    assert set(scratch.iterdir()) == baseline
    assert fingerprint(db) == before


# ---- the real server and the real browser ------------------------------------------------------

@pytest.fixture(scope="module")
def live(default_db: Path, tmp_path_factory: pytest.TempPathFactory):
    with serve(default_db, tmp_path_factory.mktemp("up") / "server.log") as (url, pid):
        yield url, pid


def _with_session(url: str, fn):
    """Run ``fn(session_id, token)`` while a real session is connected (uploads need a live session)."""
    token = xsrf_cookie(url)

    async def go():
        async with Session(url, token) as s:
            await s.run("", "traffic")
            assert s.session_id
            return await asyncio.to_thread(fn, s.session_id, token)

    return asyncio.run(go())


def test_server_answers_a_2gb_content_length_with_413_before_reading(live) -> None:
    url, pid = live

    def put(session_id: str, token: str) -> tuple[int, float, float, float]:
        r0 = rss_mb(pid)
        status, seconds = raw_put(url, f"/_stcore/upload_file/{session_id}/f1", {
            "X-Xsrftoken": token, "Cookie": f"_streamlit_xsrf={token}", "Content-Length": str(2 * GiB),
            "Content-Type": "multipart/form-data; boundary=zz"}, b"--zz\r\n" + b"x" * 65536)
        return status, seconds, r0, rss_mb(pid)

    status, seconds, r0, r1 = _with_session(url, put)
    print(f"server: 2 GiB Content-Length → {status} in {seconds * 1000:.0f} ms; RSS {r0:.0f} → {r1:.0f} MB")
    assert status == 413 and seconds < 5
    assert r1 - r0 < 50


def test_server_cuts_an_unannounced_body_at_the_cap(default_db: Path, tmp_path: Path) -> None:
    """No Content-Length (chunked): the server stops reading at the cap (here lowered to 1 MB) and answers 413."""
    with serve(default_db, tmp_path / "server.log", "--server.maxUploadSize", "1") as (url, _pid):
        def put(session_id: str, token: str) -> tuple[int, int]:
            u = urlparse(url)
            head = (f"PUT /_stcore/upload_file/{session_id}/f2 HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                    f"X-Xsrftoken: {token}\r\nCookie: _streamlit_xsrf={token}\r\nTransfer-Encoding: chunked\r\n"
                    "Content-Type: multipart/form-data; boundary=zz\r\nConnection: close\r\n\r\n").encode()
            sent = 0
            with socket.create_connection((u.hostname, u.port), timeout=30) as s:
                s.sendall(head)
                part = (b'--zz\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n'
                        b"Content-Type: text/csv\r\n\r\n")
                s.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                chunk = b"x" * 65536
                with contextlib.suppress(OSError):  # the server may hang up once the cap is passed
                    while sent < 8 * 1024 * 1024:
                        s.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        sent += len(chunk)
                    s.sendall(b"0\r\n\r\n")
                data = s.recv(4096)
            return int(data.split(b" ", 2)[1]), sent

        status, sent = _with_session(url, put)
        assert status == 413, (status, sent)


@pytest.mark.browser
def test_browser_refuses_a_2gb_file_without_sending_it(live, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.e2e.server import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} missing (apt-get install -y chromium)")
    url, pid = live
    huge = sparse(tmp_path / "huge.csv")
    # this process's peak so far (the whole session's): reading the 2 GiB file would raise it by ≥ 2 GiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            uploads: list[str] = []
            page.on("request", lambda r: uploads.append(r.url) if "upload_file" in r.url else None)
            page.goto(f"{url}/traffic")
            page.get_by_text("Upload a trace").wait_for()
            r0, t0 = rss_mb(pid), time.monotonic()
            page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(huge))
            page.get_by_text("File must be 200.0MB or smaller").wait_for()
            seconds, r1 = time.monotonic() - t0, rss_mb(pid)
        finally:
            browser.close()
    mine = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"browser: 2 GiB file refused in {seconds:.2f} s; server RSS {r0:.0f} → {r1:.0f} MB; test RSS {mine:.0f} MB")
    assert uploads == []  # not a byte was sent
    assert seconds < 10 and r1 - r0 < 100
    assert mine < before + 1024  # the file was never read into this process either
