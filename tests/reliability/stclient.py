"""A minimal Streamlit protocol client (HTTP + websocket) for loopback load tests and upload probes.

It does what the browser's first steps do: GET ``/_stcore/health`` (the server sets the ``_streamlit_xsrf``
cookie there), open ``/_stcore/stream`` with that token as the second websocket sub-protocol and a same-origin
``Origin`` header, send a ``rerun_script`` BackMsg (query string + page), and read ForwardMsgs until
``script_finished``. Exceptions the app shows (``delta.new_element.exception``) are collected, so a run
that "finished" with an error on screen still counts as a failure. Loopback only: the URL must be
127.0.0.1 or localhost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

XSRF_COOKIE = "_streamlit_xsrf"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class RunResult:
    seconds: float
    status: str  # FINISHED_SUCCESSFULLY, ... or "timeout"
    exceptions: list[str] = field(default_factory=list)
    elements: int = 0


def _loopback(url: str) -> str:
    host = urlparse(url).hostname
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"refusing a non-loopback target: {host}")
    return url.rstrip("/")


def xsrf_cookie(url: str) -> str:
    """The XSRF cookie the server hands a browser (set on the health check the frontend polls first)."""
    r = httpx.get(_loopback(url) + "/_stcore/health", timeout=10)
    r.raise_for_status()
    token = r.cookies.get(XSRF_COOKIE)
    if not token:
        raise RuntimeError("the server set no XSRF cookie (is server.enableXsrfProtection off?)")
    return token


class Session:
    """One browser-like session over a websocket (``async with Session(url) as s: await s.run(...)``)."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = _loopback(url)
        self.token = token
        self.ws = None
        self.session_id: str | None = None
        self.gather_usage_stats: bool | None = None  # what the server tells the browser

    async def __aenter__(self) -> Session:
        token = self.token or xsrf_cookie(self.url)
        ws_url = "ws://" + self.url.split("://", 1)[1] + "/_stcore/stream"
        self.ws = await websockets.connect(
            ws_url, subprotocols=["streamlit", token], origin=self.url,
            additional_headers={"Cookie": f"{XSRF_COOKIE}={token}"}, max_size=64 * 1024 * 1024, open_timeout=30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, query: str = "", page: str = "", timeout_s: float = 120.0) -> RunResult:
        """Rerun the app with ``query`` (URL query string) on ``page`` (url path, "" = default page)."""
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        t0 = time.monotonic()
        await self.ws.send(msg.SerializeToString())
        res = RunResult(0.0, "timeout")
        deadline = t0 + timeout_s
        while time.monotonic() < deadline:
            try:
                raw = await self._recv(deadline - time.monotonic())
            except TimeoutError:
                break
            fwd = ForwardMsg.FromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                if fwd.new_session.initialize.session_id:
                    self.session_id = fwd.new_session.initialize.session_id
                self.gather_usage_stats = fwd.new_session.config.gather_usage_stats
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                res.elements += 1
                el = fwd.delta.new_element
                if el.WhichOneof("type") == "exception":
                    res.exceptions.append(f"{el.exception.type}: {el.exception.message}"[:300])
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(fwd.script_finished)
                if status != "FINISHED_EARLY_FOR_RERUN":
                    res.status = status
                    break
        res.seconds = time.monotonic() - t0
        return res

    async def _recv(self, timeout_s: float) -> bytes:
        data = await asyncio.wait_for(self.ws.recv(), timeout=max(timeout_s, 0.01))
        return data if isinstance(data, bytes) else data.encode()


def rss_mb(pid: int) -> float:
    """Resident set size of a process and all its descendants (MB), from /proc."""
    def children(p: int) -> list[int]:
        out = []
        for task in os.listdir(f"/proc/{p}/task"):
            try:
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    out += [int(c) for c in fh.read().split()]
            except OSError:
                pass
        return out

    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            todo += children(p)
        except OSError:
            continue
    return total / 1024


@contextlib.contextmanager
def serve(db: Path, log: Path, *flags: str, timeout_s: float = 90.0) -> Iterator[tuple[str, int]]:
    """``streamlit run dashboard/app.py`` from the repo root with ONLY the repo's .streamlit/config.toml plus
    ``flags`` (no address/XSRF overrides, so the config's own defaults are what is tested). Yields (url, pid);
    the server's process group is stopped on exit."""
    port = _free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "dashboard/app.py", "--server.port", str(port), *flags]
    env = {**os.environ, "SPECTUNE_DB": str(db), "PYTHONPATH": str(REPO)}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dashboard did not start: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_addresses(port: int) -> set[str]:
    """Local addresses anything listens on for ``port`` (from /proc/net/tcp{,6})."""
    out = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if state == "0A" and int(p, 16) == port:  # 0A = LISTEN
                if width == 8:
                    out.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]))
                else:
                    words = [bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, 32, 8)]
                    out.add(socket.inet_ntop(socket.AF_INET6, b"".join(words)))
    return out


def raw_put(url: str, path: str, headers: dict[str, str], body: bytes, timeout_s: float = 30.0) -> tuple[int, float]:
    """Send a PUT with exactly these headers (e.g. a huge Content-Length) and a short body; returns
    (HTTP status, seconds to the answer). Raw socket: no client library buffers or fixes the request."""
    u = urlparse(_loopback(url))
    head = [f"PUT {path} HTTP/1.1", f"Host: {u.hostname}:{u.port}", "Connection: close",
            *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    t0 = time.monotonic()
    with socket.create_connection((u.hostname, u.port), timeout=timeout_s) as s:
        s.sendall("\r\n".join(head).encode())
        with contextlib.suppress(OSError):  # the server may answer and close before reading the body
            s.sendall(body)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, time.monotonic() - t0
