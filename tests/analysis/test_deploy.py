"""Deploy commands: complete, shell-quoted, and a --speculative-config vLLM would accept.

The acceptance rules are vLLM 0.32's own (vllm/config/speculative.py ``_verify_args``: a method and
num_speculative_tokens > 0; vllm/v1/spec_decode/dynamic/utils.py: a schedule is a list of 3-item
[start, end, K] ranges, positive, start ≤ end, sorted and non-overlapping, the first starting at 1,
K ≥ 0), restated here so the check runs without a vLLM install.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from analysis.deploy import DRAFTER_PLACEHOLDER, serve_command
from analysis.rescore.config import KNOWN_METHODS, NEEDS_DRAFT_MODEL, Choice, scheduled
from tests.conftest import cli


def vllm_would_accept(config: dict) -> None:
    assert config["method"] in KNOWN_METHODS and config["method"] != "none"
    k = config["num_speculative_tokens"]
    assert isinstance(k, int) and k > 0
    sched = config.get("num_speculative_tokens_per_batch_size")
    if sched is not None:
        assert isinstance(sched, list) and sched
        prev_end = 0
        for entry in sorted(sched, key=lambda e: e[0]):
            assert isinstance(entry, list) and len(entry) == 3 and all(isinstance(x, int) for x in entry)
            start, end, depth = entry
            assert 0 < start <= end and depth >= 0 and start > prev_end
            prev_end = end
        assert min(e[0] for e in sched) == 1
        assert k == max(e[2] for e in sched)  # the cap: every range's depth is min(K, range depth)
    if config["method"] in NEEDS_DRAFT_MODEL:
        assert config.get("model")


def parse(command: str) -> tuple[list[str], dict | None]:
    argv = shlex.split(command)
    assert argv[:2] == ["vllm", "serve"]
    assert "--tensor-parallel-size" in argv
    config = json.loads(argv[argv.index("--speculative-config") + 1]) if "--speculative-config" in argv else None
    return argv, config


@pytest.mark.parametrize("choice", [Choice("mtp", 3), Choice("ngram", 4), Choice("eagle3", 2),
                                    scheduled("dflash", ((1, 8, 5), (9, 64, 3))), Choice("none", 0)])
def test_commands_parse_and_carry_a_config_vllm_accepts(choice):
    cmd = serve_command("Qwen/Qwen3.5-397B-A17B", 2, choice, draft_models={"eagle3": "/m/eagle 3's"})
    argv, config = parse(cmd.command)
    assert argv[2] == "Qwen/Qwen3.5-397B-A17B" and argv[argv.index("--tensor-parallel-size") + 1] == "2"
    if choice.method == "none":
        assert config is None
        return
    vllm_would_accept(config)
    assert config == cmd.speculative_config
    if choice.schedule:
        assert config["num_speculative_tokens_per_batch_size"] == [[1, 8, 5], [9, 64, 3]]
    if choice.method == "eagle3":
        assert config["model"] == "/m/eagle 3's" and cmd.note is None  # a quote in a path survives quoting


def _shell(command: str, tmp_path) -> subprocess.CompletedProcess:
    # printf stands in for vllm: one line per argv word the shell would pass to the program (or a refusal)
    return subprocess.run(["bash", "-c", "printf '%s\\n'" + command[len("vllm"):]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)


def test_a_missing_drafter_is_a_gap_in_the_command_the_shell_refuses(tmp_path):
    cmd = serve_command("google/gemma-4-31B-it", 1, Choice("dspark", 4))
    _argv, config = parse(cmd.command)
    assert config["model"] == DRAFTER_PLACEHOLDER and cmd.note and "--draft-model dspark=PATH" in cmd.note
    done = _shell(cmd.command, tmp_path)
    assert done.returncode != 0 and done.stdout == "" and list(tmp_path.iterdir()) == []


def test_a_complete_command_reaches_the_program_intact(tmp_path):
    cmd = serve_command("google/gemma-4-31B-it", 1, Choice("dspark", 4), draft_models={"dspark": "/models/ds park"})
    done = _shell(cmd.command, tmp_path)
    assert done.returncode == 0
    words = done.stdout.splitlines()
    assert words[:4] == ["serve", "google/gemma-4-31B-it", "--tensor-parallel-size", "1"]
    assert json.loads(words[-1]) == cmd.speculative_config


def test_every_winner_in_the_default_store_has_a_full_command(default_db):
    done = cli("analysis", "winners", "--json", "--draft-model", "eagle3=/models/eagle3", db=default_db)
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    import duckdb

    con = duckdb.connect(str(default_db), read_only=True)
    try:
        # per group: a model's simulated cells and its published ones (with a dataset) may differ in TP
        tp = dict(((r[0], r[1], r[2]), r[3]) for r in con.execute(
            "SELECT model, gpu, dataset, max(gpu_count) FROM cells GROUP BY ALL").fetchall())
    finally:
        con.close()
    for c in cells:
        argv, config = parse(c["deploy"]["command"])
        assert argv[argv.index("--tensor-parallel-size") + 1] == str(tp[(c["model"], c["gpu"], c["dataset"])])
        if config is not None:
            vllm_would_accept(config)
            assert config["method"] == c["winner"]["method"]
            assert config["num_speculative_tokens"] == c["winner"]["depth"]
            if config["method"] == "eagle3":
                assert config["model"] == "/models/eagle3"
            assert (config.get("model") == DRAFTER_PLACEHOLDER) == (c["deploy"]["note"] is not None)
