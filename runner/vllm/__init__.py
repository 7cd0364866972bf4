"""The real-vLLM backend's building blocks: server lifecycle, /metrics parsing and the load client.

- :mod:`runner.vllm.server`: start (or attach to) a vLLM OpenAI-compatible server for one server
  config, wait for ``/health``, stop it with its whole process group.
- :mod:`runner.vllm.metrics`: spec-decode counters from Prometheus text, deltas over a window.
- :mod:`runner.vllm.client`: an async streaming load generator measuring TTFT/TPOT/ITL/e2e.
"""

from runner.vllm.client import LoadResult, Prompt, RequestResult, run_load
from runner.vllm.metrics import delta, fetch_metrics_text, parse_spec_counters, snapshot
from runner.vllm.server import (
    DEFAULT_COMMAND,
    ServerStartError,
    VllmServer,
    build_server_args,
    free_port,
    speculative_config,
)

__all__ = [
    "DEFAULT_COMMAND",
    "LoadResult",
    "Prompt",
    "RequestResult",
    "ServerStartError",
    "VllmServer",
    "build_server_args",
    "delta",
    "fetch_metrics_text",
    "free_port",
    "parse_spec_counters",
    "run_load",
    "snapshot",
    "speculative_config",
]
