"""A stand-in vLLM server *process* for the backend's fault tests (launched through the launch template).

    python tests/runner/fake_vllm.py --model BEHAVIOUR --port PORT [--speculative-config JSON] [...]

Like ``vllm serve`` it forks a worker into its own process group (so group cleanup is exercised),
serves ``/health``, ``/version``, ``/v1/models``, ``/metrics`` (spec-decode counters that grow while it
"speculates"), ``/tokenize`` and streamed ``/v1/completions`` / ``/v1/chat/completions``. The model name picks the
behaviour (so one matrix can hold several): ``ok``; ``exit`` (dies at start, like a bad model path);
``nohealth`` (never healthy); ``crash-after-N`` (the process dies mid-stream on request N+1);
``crash-once-N`` (the same, only the first time in this working dir); ``hang`` (two tokens, then
silence); ``err500``; ``truncate`` (no ``[DONE]``); ``slow`` (50 ms per token); ``flaky`` (like
``exit`` while ``$FAKE_VLLM_FAIL`` is set, else ``ok``); ``notokenize`` (no ``/tokenize``); ``oldvllm``
(an older vLLM: exits like argparse on ``--per-request-spec-decode-metrics``, else ``ok``). Its
"tokenizer" (``/tokenize``, ``usage.prompt_tokens``) counts one token per two characters. Stdlib only.
Unknown flags are ignored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STATE: dict[str, Any] = {"requests": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0, "per_pos": []}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    behaviour = "ok"
    depth = 0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/health":
            self._plain(503 if self.behaviour == "nohealth" else 200, b"")
        elif self.path == "/version":
            self._plain(200, b'{"version": "0.0.0-fake"}')
        elif self.path == "/v1/models":
            self._plain(200, json.dumps({"data": [{"id": self.behaviour}]}).encode())
        elif self.path == "/metrics":
            self._plain(200, self._metrics().encode(), "text/plain; version=0.0.4")
        else:
            self._plain(404, b"not found")

    def _metrics(self) -> str:
        if not self.depth:
            return "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0.0\n"
        lines = []
        with LOCK:
            for name, value in (("drafts", STATE["drafts"]), ("draft_tokens", STATE["draft_tokens"]),
                                ("accepted_tokens", STATE["accepted"])):
                lines += [f"# TYPE vllm:spec_decode_num_{name}_total counter",
                          f'vllm:spec_decode_num_{name}_total{{engine="0",model_name="m"}} {float(value)}']
            lines.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter")
            for i, v in enumerate(STATE["per_pos"]):
                labels = f'engine="0",position="{i}"'
                lines.append(f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels}}} {float(v)}")
        return "\n".join(lines) + "\n"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if self.path == "/tokenize":  # a stand-in tokenizer: one token per two characters
            if self.behaviour == "notokenize":
                self._plain(404, b'{"detail": "Not Found"}')
            else:
                self._plain(200, json.dumps({"count": _tokens(body), "max_model_len": 4096}).encode())
            return
        with LOCK:
            STATE["requests"] += 1
            n_req = STATE["requests"]
        b = self.behaviour
        if b == "err500":
            self._plain(500, b'{"error": {"message": "fake engine error"}}')
            return
        chat = self.path.endswith("/chat/completions")
        n = int(body.get("max_tokens", 16))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        crash_at = int(b.rsplit("-", 1)[1]) if b.startswith(("crash-after-", "crash-once-")) else None
        if crash_at is not None and b.startswith("crash-once-") and Path("crashed-once").exists():
            crash_at = None
        for i in range(2 if b == "hang" else n):
            if crash_at is not None and n_req > crash_at and i == 2:
                Path("crashed-once").touch()
                os._exit(9)
            piece = {"delta": {"content": f"t{i} "}} if chat else {"text": f"t{i} "}
            self._event({"choices": [{"index": 0, **piece}]})
            self._speculate()
            time.sleep(0.05 if b == "slow" else 0.002)
        if b == "hang":
            time.sleep(3600)
        self._event({"choices": [], "usage": {"prompt_tokens": _tokens(body), "completion_tokens": n}})
        if b != "truncate":
            self._raw(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _speculate(self) -> None:
        if not self.depth:
            return
        with LOCK:
            STATE["drafts"] += 1
            STATE["draft_tokens"] += self.depth
            # accept the first depth-1 positions every time: acceptance (k-1)/k, per-position r = 1,..,1,0
            STATE["accepted"] += self.depth - 1
            for i in range(self.depth - 1):
                STATE["per_pos"][i] += 1

    def _event(self, obj: dict[str, Any]) -> None:
        self._raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _plain(self, status: int, data: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _tokens(body: dict[str, Any]) -> int:
    text = body.get("prompt") or " ".join(m.get("content", "") for m in body.get("messages") or [])
    return max(1, (len(str(text)) + 1) // 2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--speculative-config", default=None)
    args, unknown = ap.parse_known_args(argv)
    print(f"fake vllm: model={args.model} port={args.port} spec={args.speculative_config} extra={unknown}", flush=True)
    if args.model == "oldvllm" and "--per-request-spec-decode-metrics" in unknown:
        at = unknown.index("--per-request-spec-decode-metrics")
        print(f"api_server.py: error: unrecognized arguments: {' '.join(unknown[at:at + 2])}", flush=True)
        sys.exit(2)
    if args.model == "exit" or (args.model == "flaky" and os.environ.get("FAKE_VLLM_FAIL")):
        print("ValueError: model path does not exist: exit", flush=True)
        sys.exit(1)
    spec = json.loads(args.speculative_config) if args.speculative_config else {}
    Handler.behaviour = args.model
    Handler.depth = int(spec.get("num_speculative_tokens", 0))
    STATE["per_pos"] = [0] * Handler.depth
    # A "worker" in the same process group, like vLLM's engine core: it must die with the group.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print("fake vllm: ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
