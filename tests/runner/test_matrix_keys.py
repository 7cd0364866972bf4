"""Matrix keys added for the vLLM runner: ${ENV} expansion, workload request_rate/ignore_eos, run.port,
run.endpoint — each validated with a one-line error naming the key; the shipped matrices load."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.errors import InputError
from runner.matrix import expand_env, load_matrix
from tests.conftest import REPO

BASE = """
name = "k"
gpus = ["MI300X"]
[methods.none]
[families.F]
model = "{model}"
[workloads.chat]
{workload}
[run]
{run}
"""


def write(tmp: Path, model: str = "m", workload: str = "", run: str = "") -> Path:
    path = tmp / "m.toml"
    path.write_text(BASE.format(model=model, workload=workload, run=run))
    return path


def test_env_references_expand_in_every_string(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ST_MODEL", "/models/tiny llama")
    monkeypatch.setenv("ST_PY", "/venv/bin/python")
    path = write(tmp_path, model="${ST_MODEL}", run='launch = "${ST_PY} -m srv --model {model} $HOME {args}"\n'
                                                     'env = { CACHE = "${ST_MODEL}/cache" }')
    m = load_matrix(path)
    assert m.families[0].model == "/models/tiny llama"
    assert m.launch == "/venv/bin/python -m srv --model {model} $HOME {args}"  # only ${NAME} expands
    assert m.env == {"CACHE": "/models/tiny llama/cache"}
    assert expand_env(["${ST_PY}", {"a": ["x${ST_PY}y"]}, 3], path) == ["/venv/bin/python",
                                                                       {"a": ["x/venv/bin/pythony"]}, 3]


def test_an_unset_variable_names_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ST_NOPE", raising=False)
    with pytest.raises(InputError) as info:
        load_matrix(write(tmp_path, model="${ST_NOPE}"))
    assert info.value.one_line() == (f"error: {tmp_path / 'm.toml'}:0: families.F.model: "
                                     "environment variable ST_NOPE is not set")


def test_new_keys_and_their_errors(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, workload="request_rate = 2.5\nignore_eos = false",
                          run="port = 8123\nendpoint = 'chat'"))
    wl = m.workloads[0]
    assert (wl.request_rate, wl.ignore_eos, m.port, m.endpoint) == (2.5, False, 8123, "chat")
    defaults = load_matrix(write(tmp_path))
    assert (defaults.workloads[0].request_rate, defaults.workloads[0].ignore_eos, defaults.port) == (None, True, None)
    for workload, run, key in [("request_rate = 0", "", "workloads.chat.request_rate"),
                               ("request_rate = 'fast'", "", "workloads.chat.request_rate"),
                               ("ignore_eos = 1", "", "workloads.chat.ignore_eos"),
                               ("", "port = 70000", "run.port"), ("", "endpoint = 'responses'", "run.endpoint")]:
        with pytest.raises(InputError, match=key.replace(".", r"\.")):
            load_matrix(write(tmp_path, workload=workload, run=run))


def test_shipped_matrices_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTUNE_VLLM_MODEL", "/x/tiny-llama")
    monkeypatch.setenv("SPECTUNE_VLLM_LAUNCH", "python -m vllm.entrypoints.openai.api_server --model {model} "
                                               "--port {port} {args}")
    smoke = load_matrix(REPO / "runner" / "matrices" / "cpu-smoke.toml")
    assert [c.label() for c in smoke.server_configs()] == ["TinyLlama/none@cpu", "TinyLlama/ngram:3@cpu"]
    assert smoke.families[0].model == "/x/tiny-llama" and smoke.requests_per_cell == 20
    assert smoke.launch.startswith("python -m vllm") and len(smoke.cells()) == 2
    default = load_matrix(REPO / "runner" / "matrices" / "default.toml")
    assert default.adaptive is None and default.launch == "vllm serve {model} --host 127.0.0.1 --port {port} {args}"
