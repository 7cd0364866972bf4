"""What would fail every cell of a vLLM run is refused before it starts (exit 2, one line, nothing written):
a launch command that cannot be found or split, a local model or draft path that does not exist, a taken
``run.port`` (tests/runner/test_vllm_backend.py), and an ``--endpoint`` that is malformed, not answering,
not a vLLM server root, or running a different speculative config than the matrix says."""

from __future__ import annotations

import contextlib
import http.server
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ingest.errors import InputError, UsageError
from runner.backends.vllm import check_endpoint, check_launch, normalize_endpoint
from runner.matrix import load_matrix
from runner.vllm.server import free_port
from tests.conftest import cli
from tests.runner.test_vllm_backend import FAKE, write_matrix


def _matrix(tmp: Path, model: str = "ok", run_extra: str = "", methods: str = "[methods.none]") -> Path:
    path = write_matrix(tmp, ["ok"], methods=methods, run_extra=run_extra)
    path.write_text(path.read_text().replace('model = "ok"', f'model = "{model}"'))
    return path


@pytest.mark.parametrize(("model", "message"), [
    ("/no/such/model", "families.ok.model: no such file or directory '/no/such/model' on this host"),
    ("~/models/tiny", "families.ok.model: '~/models/tiny': '~' is not expanded (the server starts without a "
                      "shell); use an absolute path"),
    ("./tiny", "families.ok.model: './tiny': a relative path would resolve against the server's working directory"),
])
def test_a_local_model_path_that_cannot_load_is_bad_input(tmp_path: Path, model: str, message: str) -> None:
    path = _matrix(tmp_path, model)
    with pytest.raises(InputError) as info:
        check_launch(load_matrix(path))
    assert info.value.message.startswith(message) and info.value.line == 6  # the family's model = line
    check_launch(load_matrix(_matrix(tmp_path, str(tmp_path))))  # an existing folder is fine
    check_launch(load_matrix(_matrix(tmp_path, "Qwen/Qwen3-8B")))  # a hub name is vLLM's to resolve


def test_a_missing_draft_model_is_bad_input_but_a_container_checks_its_own_paths(tmp_path: Path) -> None:
    path = _matrix(tmp_path, methods='[methods.eagle3]\ndepths = [3]\ndraft_model = "/no/draft"')
    with pytest.raises(InputError, match=r"methods\.eagle3\.draft_model: no such file or directory '/no/draft'"):
        check_launch(load_matrix(path))
    fake_docker = tmp_path / "bin" / "docker"
    fake_docker.parent.mkdir()
    fake_docker.write_text("#!/bin/sh\n")
    fake_docker.chmod(0o755)
    text = path.read_text().replace("launch = '", f"launch = '{fake_docker} run --rm img vllm serve ").replace(
        "\nlaunch = '", "\nlaunch = '")
    path.write_text(text)
    check_launch(load_matrix(path))  # /no/draft may well exist inside the container


def test_a_launch_command_that_cannot_run_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _matrix(tmp_path)
    path.write_text(path.read_text().replace("launch = '", "launch = 'vllm-not-here serve {model} # "))
    with pytest.raises(InputError) as info:
        check_launch(load_matrix(path))
    assert info.value.message == "run.launch: 'vllm-not-here' is not found on PATH (is vLLM installed on this host?)"
    path.write_text(path.read_text().replace("launch = 'vllm-not-here serve {model} # ", "launch = 'x \"{model} # "))
    with pytest.raises(InputError, match=r"run\.launch: cannot split the launch command like a shell does"):
        check_launch(load_matrix(path))
    default = tmp_path / "d.toml"
    default.write_text("\n".join(ln for ln in path.read_text().splitlines() if not ln.startswith("launch")))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SPECTUNE_VLLM_LAUNCH", raising=False)
    with pytest.raises(UsageError) as usage:
        check_launch(load_matrix(default))
    assert str(usage.value).startswith("the default launch template 'vllm serve {model} --host 127.0.0.1 --port "
                                       "{port} {args}': 'vllm' is not found on PATH")
    assert str(usage.value).endswith("; set run.launch or $SPECTUNE_VLLM_LAUNCH (docs/hosts.md)")
    monkeypatch.setenv("SPECTUNE_VLLM_LAUNCH", "nope {model}")
    with pytest.raises(UsageError, match=r"^\$SPECTUNE_VLLM_LAUNCH: 'nope' is not found on PATH"):
        check_launch(load_matrix(default))


def test_run_refuses_a_missing_model_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    path = _matrix(tmp_path, "/no/such/model")
    t0 = time.monotonic()
    res = cli("runner", "run", "--matrix", str(path), "--backend", "vllm", "--db", str(tmp_path / "s.duckdb"),
              "--runs-dir", str(tmp_path / "runs"))
    assert time.monotonic() - t0 < 30  # no server start was attempted
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == (f"error: {path}:6: families.ok.model: no such file or directory "
                                  "'/no/such/model' on this host")
    assert not (tmp_path / "s.duckdb").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("given", "root"), [
    ("http://gpu:8000", "http://gpu:8000"), ("http://gpu:8000/", "http://gpu:8000"),
    ("http://gpu:8000/v1", "http://gpu:8000"), ("https://gpu/v1/", "https://gpu"), ("gpu-host:8000", "http://gpu-host:8000"),
    ("http://gpu:8000/proxy/vllm/v1", "http://gpu:8000/proxy/vllm"), (" http://gpu:8000 ", "http://gpu:8000"),
])
def test_endpoint_urls_are_normalised_to_the_server_root(given: str, root: str) -> None:
    assert normalize_endpoint(given) == root


@pytest.mark.parametrize("bad", ["http//gpu:8000", "http:gpu", "ftp://gpu", "http://"])
def test_a_malformed_endpoint_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="not a URL"):
        normalize_endpoint(bad)


@contextlib.contextmanager
def fake_server(spec: str | None) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, str(FAKE), "--model", "ok", "--port", str(port)]
    proc = subprocess.Popen(argv + (["--speculative-config", spec] if spec else []), stdout=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield url
    finally:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_an_attached_server_must_run_the_matrix_server_config(tmp_path: Path) -> None:
    none = load_matrix(_matrix(tmp_path)).server_configs()[0]
    ngram3 = load_matrix(_matrix(tmp_path, methods="[methods.ngram]\ndepths = [3]")).server_configs()[0]
    with fake_server(None) as plain:
        check_endpoint(plain, none)
        with pytest.raises(UsageError, match=r"runs without speculative decoding .* server config is ok/ngram:3@cpu"):
            check_endpoint(plain, ngram3)
    with fake_server('{"method":"ngram","num_speculative_tokens":2}') as spec2:
        with pytest.raises(UsageError, match=r"runs speculative decoding, but the matrix's server config is ok/none"):
            check_endpoint(spec2, none)
        with pytest.raises(UsageError, match="drafts 2 tokens per step, but the matrix's server config is ok/ngram:3"):
            check_endpoint(spec2, ngram3)


def test_an_endpoint_that_is_not_there_or_not_vllm_is_exit_2_at_once(tmp_path: Path) -> None:
    path = _matrix(tmp_path)

    def attach(url: str) -> subprocess.CompletedProcess:
        return cli("runner", "run", "--matrix", str(path), "--backend", "vllm", "--endpoint", url, "--db",
                   str(tmp_path / "s.duckdb"), "--runs-dir", str(tmp_path / "runs"))

    closed = free_port()
    t0 = time.monotonic()
    res = attach(f"http://127.0.0.1:{closed}")
    assert time.monotonic() - t0 < 30  # not the matrix's startup_timeout_s of waiting
    assert res.returncode == 2 and res.stderr.startswith(f"error: --endpoint http://127.0.0.1:{closed}: cannot "
                                                         "connect (")
    assert "is the server running?" in res.stderr and res.stderr.count("\n") == 1
    handler = http.server.SimpleHTTPRequestHandler
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(tmp_path)))
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        res = attach(f"http://127.0.0.1:{web.server_address[1]}/v1")
    finally:
        web.shutdown()
    assert res.returncode == 2
    assert res.stderr.strip() == (f"error: --endpoint http://127.0.0.1:{web.server_address[1]}: no /health there "
                                  "(404): give the root of a vLLM OpenAI-compatible server, e.g. http://gpu-host:8000")
    res = attach("http//127.0.0.1:8000")
    assert res.returncode == 2 and res.stderr.strip() == ("error: --endpoint http//127.0.0.1:8000: not a URL "
                                                          "(expected e.g. http://gpu-host:8000)")
    assert not (tmp_path / "s.duckdb").exists()


def test_a_ray_driver_leaves_host_checks_to_the_nodes(tmp_path: Path) -> None:
    """On a Ray driver vLLM and the models need not exist (the GPU nodes hold them): prepare only reads the
    workloads there, and each node's task checks its own host."""
    from runner.backends.vllm import VllmBackend

    path = _matrix(tmp_path, "/models/only-on-the-gpu-nodes")
    path.write_text(path.read_text().replace("launch = '", "launch = 'vllm-only-on-nodes serve {model} # "))
    matrix = load_matrix(path)
    with pytest.raises(InputError):
        VllmBackend().prepare(matrix, "R", tmp_path / "runs")
    driver = VllmBackend(host_checks=False)
    driver.prepare(matrix, "R", tmp_path / "runs")
    assert set(driver.requests) == {"code"}  # the Ray path end to end: tests/runner/test_cluster.py


def test_endpoint_with_ray_is_a_usage_error(tmp_path: Path) -> None:
    res = cli("runner", "run", "--matrix", str(_matrix(tmp_path)), "--backend", "vllm", "--endpoint",
              "http://127.0.0.1:9", "--ray", "auto", "--db", str(tmp_path / "s.duckdb"))
    assert res.returncode == 2 and res.stderr.strip() == ("error: --endpoint attaches to one running server; it "
                                                          "cannot be combined with --ray")
