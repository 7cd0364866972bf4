"""A small local HTTP server of the tests' own, for fault handling only (the real paths use real vLLM and
Prometheus): each path answers as a broken target would — a counter reset, a hang, HTTP 500, garbage or
truncated exposition text, a Prometheus error."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REAL = (Path(__file__).parent / "data" / "vllm-0.32-cpu-ngram3.metrics.txt").read_text()

Handler = Callable[[int], tuple[int, str | bytes, float]]  # call number → (status, body, delay_s)


def exposition(drafts: float, accepted_per_pos: list[float], k: int = 3, *, start: float = 1.0e9,
               generation: float | None = None) -> str:
    """A vLLM-shaped exposition with the given cumulative counters (the real file's layout, values replaced)."""
    acc = sum(accepted_per_pos)
    gen = generation if generation is not None else drafts * 2
    lines = [
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
        "# TYPE process_start_time_seconds gauge", f"process_start_time_seconds {start}",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}',
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
        f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {drafts * k}',
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
        f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {acc}',
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
        *[f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{i}"}} {v}'
          for i, v in enumerate(accepted_per_pos)],
        "# TYPE vllm:generation_tokens_total counter",
        f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {gen}',
        "# TYPE vllm:request_success_total counter",
        f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="m"}} {drafts / 10}',
    ]
    return "\n".join(lines) + "\n"


class FaultServer:
    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.calls: dict[str, int] = {}
        server = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                n = server.calls.get(path, 0)
                server.calls[path] = n + 1
                route = server.routes.get(path)
                if route is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                status, body, delay = route(n)
                if delay:
                    time.sleep(delay)
                data = body.encode() if isinstance(body, str) else body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *a) -> None:
                pass

        ThreadingHTTPServer.request_queue_size = 128  # many scrapes connect at once
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextlib.contextmanager
def fault_server() -> Iterator[FaultServer]:
    s = FaultServer()
    s.thread.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()
