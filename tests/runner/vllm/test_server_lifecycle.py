"""VllmServer without vLLM: command lines, port checks, failed starts and process-group cleanup.

Stand-in commands (small Python processes) exercise the process handling; the real server is in
test_real_vllm.py.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path

import pytest

from runner.vllm.server import (
    ServerStartError,
    VllmServer,
    build_server_args,
    free_port,
    log_tail,
    port_in_use,
    render_command,
    speculative_config,
)
from tests.runner.vllm.fake_openai import FakeServer

PY = shlex.quote(sys.executable)


def spec_of(args: list[str]) -> dict[str, object]:
    return json.loads(args[args.index("--speculative-config") + 1])


def test_speculative_config_shapes() -> None:
    assert speculative_config("none", 0) is None
    assert speculative_config("mtp", 3) == {"method": "mtp", "num_speculative_tokens": 3}
    assert speculative_config("ngram", 3) == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2,
    }
    low = speculative_config("ngram", 2, {"prompt_lookup_max": 1})
    assert low is not None and (low["prompt_lookup_min"], low["prompt_lookup_max"]) == (1, 1)
    high = speculative_config("ngram", 2, {"prompt_lookup_min": 6})
    assert high is not None and (high["prompt_lookup_min"], high["prompt_lookup_max"]) == (6, 6)
    draft = speculative_config("draft_model", 4, draft_model="/m/draft")
    assert draft == {"method": "draft_model", "num_speculative_tokens": 4, "model": "/m/draft"}
    with pytest.raises(ValueError):
        speculative_config("eagle3", 0)


def test_server_args() -> None:
    assert build_server_args("none", 0) == []
    args = build_server_args(
        "eagle3", 5, speculative_extra={"model": "a/b"}, tensor_parallel_size=8,
        extra_flags=["--max-num-seqs", "64"],
    )
    assert spec_of(args) == {"method": "eagle3", "num_speculative_tokens": 5, "model": "a/b"}
    assert args[2:] == ["--tensor-parallel-size", "8", "--max-num-seqs", "64"]
    assert "--tensor-parallel-size" not in build_server_args("mtp", 2, tensor_parallel_size=1)


def test_render_command_keeps_json_and_paths_whole() -> None:
    args = build_server_args("ngram", 3, extra_flags=["--dtype", "float32"])
    argv = render_command("vllm serve {model} --host 127.0.0.1 --port {port} {args}", "/m/my model", 8123, args)
    assert argv[:7] == ["vllm", "serve", "/m/my model", "--host", "127.0.0.1", "--port", "8123"]
    assert spec_of(argv)["num_speculative_tokens"] == 3
    assert argv[-2:] == ["--dtype", "float32"]
    no_args_slot = render_command("python -m srv --model={model} --port={port}", "m", 1, ["--x"])
    assert no_args_slot == ["python", "-m", "srv", "--model=m", "--port=1", "--x"]


def test_port_in_use_is_refused_before_launch(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert port_in_use(port)
        server = VllmServer("m", port=port, log_path=tmp_path / "log", command_template=f"{PY} -c pass")
        with pytest.raises(ServerStartError, match=f"^port {port} in use$"):
            server.start()
        assert server.proc is None
    assert not port_in_use(free_port())


def test_exit_before_healthy_reports_log_tail(tmp_path: Path) -> None:
    script = "import sys; print('loading {model}'); print('ValueError: no such model'); sys.exit(3)"
    server = VllmServer(
        "/nope", log_path=tmp_path / "srv.log", command_template=f"{PY} -c {shlex.quote(script)}"
    )
    server.start()
    pgid = server.pgid
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        server.wait_healthy(30)
    assert time.monotonic() - t0 < 10
    msg = str(info.value)
    assert msg == ("server exited with code 3 before becoming healthy: ValueError: no such model "
                   f"(log: {tmp_path / 'srv.log'})")
    assert "\n" not in msg
    assert pgid is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_stop_kills_the_whole_group_even_if_sigterm_is_ignored(tmp_path: Path) -> None:
    # A leader with a grandchild that ignores SIGTERM: only the SIGKILL escalation ends it.
    child = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    leader = (
        f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(300)"
    )
    server = VllmServer("m", log_path=tmp_path / "log", command_template=f"{PY} -c {shlex.quote(leader)}")
    with server:
        time.sleep(0.5)
        pgid = server.pgid
        assert pgid is not None
        os.killpg(pgid, 0)
        t0 = time.monotonic()
        server.stop(grace_s=1.0)
        assert time.monotonic() - t0 < 8  # 1 s grace, then SIGKILL and init's reaping
    # the context exit stops again: idempotent
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_health_timeout_stops_the_process(tmp_path: Path) -> None:
    server = VllmServer("m", log_path=tmp_path / "log", command_template=f"{PY} -c 'import time; time.sleep(60)'")
    server.start()
    pgid = server.pgid
    assert pgid is not None
    with pytest.raises(ServerStartError, match="not healthy after 1 s"):
        server.wait_healthy(1)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_attach_mode() -> None:
    with FakeServer() as fake:
        server = VllmServer.attach(fake.base_url + "/")
        assert server.base_url == fake.base_url
        assert server.wait_healthy(5) < 5
        with server:
            assert server.proc is None
    dead = VllmServer.attach(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ServerStartError, match=r"not healthy after 0\.5 s"):
        dead.wait_healthy(0.5)


def test_log_tail_is_one_trimmed_line(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("".join(f"line {i}\n\n" for i in range(100)) + "x" * 5000 + "\n")
    tail = log_tail(log)
    assert "\n" not in tail and len(tail) <= 1503 and tail.endswith("x")
    assert log_tail(tmp_path / "missing") == "(no log)"
