"""A small misbehaving OpenAI-compatible streaming server for the client's fault tests.

Owns the faults, chosen per request by the prompt text (or the last chat message):
``ok`` streams normally; ``error500`` answers HTTP 500; ``hang`` sends two chunks then goes silent;
``truncate`` ends the HTTP body cleanly without ``[DONE]``; ``crash`` drops the connection mid-body;
``badjson`` sends a broken data line; ``sse-error`` sends vLLM's in-stream error event; ``nousage``
streams without the usage chunk; ``slow`` trickles a chunk every 50 ms for a long time.
Stdlib only, chunked transfer written by hand so truncation and crashes are exact.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNKS = 5


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/health":
            self._plain(200, b"")
        else:
            self._plain(404, b"not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        chat = self.path.endswith("/chat/completions")
        kind = body["messages"][-1]["content"] if chat else body["prompt"]
        self.server.seen.append(kind)
        n = min(int(body.get("max_tokens", CHUNKS)), 50)
        if kind == "error500":
            self._plain(500, b'{"error": {"message": "boom: engine dead"}}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if chat:
            self._event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        if kind == "slow":
            for _ in range(400):
                if self.server.stopping.wait(0.05):
                    return
                self._event(self._piece(chat, "x"))
            return
        sent = 2 if kind in ("hang", "crash") else n
        for i in range(sent):
            self._event(self._piece(chat, f"t{i}"))
        if kind == "hang":
            self.server.stopping.wait(10.0)
            return
        if kind == "crash":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if kind == "badjson":
            self._raw(b"data: {not json\n\n")
        if kind == "sse-error":
            self._event({"error": {"message": "engine overloaded", "code": 500}})
        if kind != "nousage":
            self._event({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": sent}})
        if kind != "truncate":
            self._raw(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    @staticmethod
    def _piece(chat: bool, text: str) -> dict[str, Any]:
        if chat:
            return {"choices": [{"index": 0, "delta": {"content": text}}]}
        return {"choices": [{"index": 0, "text": text}]}

    def _event(self, obj: dict[str, Any]) -> None:
        self._raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _plain(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stopping = threading.Event()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5.0)
        # Let handler threads that were parked on `stopping` see it before the next test binds.
        time.sleep(0.01)
