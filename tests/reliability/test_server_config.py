"""Server defaults: the repo's .streamlit/config.toml keeps the dashboard local, XSRF-protected, telemetry-free
and upload-capped — checked in the file AND on a real server started with nothing but that file."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from tests.conftest import REPO
from tests.reliability.stclient import Session, listening_addresses, raw_put, serve

CONFIG = REPO / ".streamlit" / "config.toml"


def _config() -> dict:
    return tomllib.loads(CONFIG.read_text())


def test_config_file_has_the_safe_defaults() -> None:
    cfg = _config()
    server, browser = cfg.get("server", {}), cfg.get("browser", {})
    assert server.get("address") == "127.0.0.1"
    assert server.get("enableXsrfProtection") is True
    assert server.get("enableCORS", True) is True  # Streamlit turns XSRF off when CORS is off
    assert server.get("headless") is True
    assert isinstance(server.get("maxUploadSize"), int) and 1 <= server["maxUploadSize"] <= 200
    assert browser.get("gatherUsageStats") is False
    assert "0.0.0.0" not in CONFIG.read_text()


def test_traffic_page_cap_never_exceeds_the_server_cap() -> None:
    text = (REPO / "dashboard" / "views" / "traffic.py").read_text()
    assert "MAX_UPLOAD_MB" in text
    assert "min(200" in text and _config()["server"]["maxUploadSize"] <= 200


@pytest.fixture(scope="module")
def server(default_db: Path, tmp_path_factory: pytest.TempPathFactory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    with serve(default_db, log) as (url, pid):  # only --server.port on the command line
        yield url, pid, log


def test_real_server_listens_on_loopback_only(server) -> None:
    url, _pid, _log = server
    port = urlparse(url).port
    addrs = listening_addresses(port)
    assert addrs, "no listening socket found for the server's port"
    assert addrs <= {"127.0.0.1", "::1"}, addrs  # never 0.0.0.0 / ::


def test_real_server_sets_an_xsrf_cookie_and_refuses_uploads_without_it(server) -> None:
    url, _pid, _log = server
    r = httpx.get(url + "/_stcore/health", timeout=10)
    assert r.status_code == 200 and r.cookies.get("_streamlit_xsrf")
    status, _ = raw_put(url, "/_stcore/upload_file/some-session/some-file",
                        {"Content-Type": "multipart/form-data; boundary=x", "Content-Length": "10"}, b"0123456789")
    assert status == 403  # XSRF check comes before anything else


def test_real_server_tells_the_browser_not_to_gather_usage_stats(server) -> None:
    url, _pid, _log = server

    async def first_session() -> bool | None:
        async with Session(url) as s:
            res = await s.run("", "")
            assert res.status == "FINISHED_SUCCESSFULLY" and not res.exceptions
            return s.gather_usage_stats

    assert asyncio.run(first_session()) is False
