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


@pytest.mark.parametrize(("old", "new", "message"), [
    ("[run]\n", "[run]\nrequest_per_cell = 20\n",
     "run.request_per_cell: unknown key (did you mean 'requests_per_cell'?)"),
    ("[workloads.chat]\n", "[workloads.chat]\nmax_token = 48\n",
     "workloads.chat.max_token: unknown key (did you mean 'max_tokens'?)"),
    ("[methods.none]\n", "[methods.ngram]\ndepth = [3]\n", "methods.ngram.depth: unknown key (did you mean 'depths'?)"),
    ('model = "m"\n', 'model = "m"\ntp = 2\n', "families.F.tp: unknown key (expected one of model, "),
    ("[run]\n", "[loads]\nconcurrency = [2]\n[run]\n", "loads: unknown key (did you mean 'load'?)"),
    ("[run]\n", "[load]\nconcurency = [4]\n[run]\n", "load.concurency: unknown key (did you mean 'concurrency'?)"),
])
def test_a_misspelled_key_is_refused_on_its_line(tmp_path: Path, old: str, new: str, message: str) -> None:
    """A typo must never fall back to a default silently (request_per_cell = 20 used to run 200 per cell)."""
    path = write(tmp_path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(InputError) as info:
        load_matrix(path)
    lines = path.read_text().splitlines()
    key = message.split(":")[0].split(".")[-1]
    assert info.value.message.startswith(message), info.value.message
    assert info.value.line > 0 and key in lines[info.value.line - 1], (info.value.line, lines)


def test_plan_and_run_refuse_a_misspelled_key_with_exit_2(tmp_path: Path) -> None:
    from tests.conftest import cli

    path = write(tmp_path, run="request_per_cell = 20")
    for args in (["plan"], ["run", "--db", str(tmp_path / "s.duckdb")]):
        res = cli("runner", *args, "--matrix", str(path))
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.strip() == (f"error: {path}:10: run.request_per_cell: unknown key "
                                      "(did you mean 'requests_per_cell'?)")
    assert not (tmp_path / "s.duckdb").exists()


def test_the_documented_example_uses_only_known_keys(tmp_path: Path) -> None:
    """docs/matrix.md's "every key" example is the key list the loader accepts (no key refused there)."""
    import re

    block = re.search(r"```toml\n(.*?)```", (REPO / "docs" / "matrix.md").read_text(), re.S)
    assert block is not None
    path = tmp_path / "doc.toml"
    path.write_text(block.group(1))
    m = load_matrix(path)
    assert [w.name for w in m.workloads] == ["code", "chat", "prod"] and m.adaptive is not None
    assert m.port == 8000 and m.env == {"VLLM_USE_V1": "1"} and m.families[0].draft_models == {
        "eagle3": "/models/qwen3.5-eagle3"}
