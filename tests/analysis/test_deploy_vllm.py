"""A schedule or adaptive pick's deploy command is a ``--speculative-config`` vLLM 0.32 accepts (#28, Done when):
the JSON spectune prints is parsed by vLLM's own argument parser (``EngineArgs.add_cli_args``, the `vllm serve`
flags) and turned into its ``SpeculativeConfig`` (``EngineArgs.create_speculative_config``, what the engine does
at start-up) inside the CPU build's venv, against the tiny model of scripts/setup_vllm_cpu.sh.

What is checked: n-gram and draft_model with ``num_speculative_tokens_per_batch_size`` (real configs, the drafter
being the tiny model itself); DSpark with ``enable_adaptive_verification`` as far as the config class goes
without a DSpark drafter (none exists offline: the tiny Llama stands in as the drafter checkpoint, so checks that
read a real DSpark drafter's config, and the GPU worker's attention-backend checks, are not exercised). Each schedule
also goes through the scheduler's own start-up call (``build_dynamic_sd_schedule_lookup``, which validates it;
the config class stores it as given): a schedule vLLM refuses (overlapping ranges) is refused there, so the
check can fail.

Needs ``SPECTUNE_VLLM_ENV=DIR`` (scripts/setup_vllm_cpu.sh DIR); skipped only when it is unset. One vLLM import,
no server.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from analysis.deploy import serve_command
from analysis.rescore.config import Choice, scheduled
from runner.vllm.server import env_from_setup

pytestmark = pytest.mark.vllm

PROBE = r'''
import json, sys
from vllm.config import ParallelConfig
from vllm.engine.arg_utils import EngineArgs
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

out = []
for argv in json.loads(sys.argv[1]):
    try:
        parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
        args = EngineArgs.from_cli_args(parser.parse_args(argv))
        spec = args.create_speculative_config(args.create_model_config(), ParallelConfig())
        # the scheduler's own call at start-up (vllm/v1/core/sched/scheduler.py): the schedule as a dense
        # batch size -> K lookup, validated there (the config class stores it as given)
        lookup = (build_dynamic_sd_schedule_lookup(spec.num_speculative_tokens_per_batch_size, 256,
                                                   spec.num_speculative_tokens)
                  if spec.num_speculative_tokens_per_batch_size else None)
        out.append({"ok": True, "method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens,
                    "schedule": [list(r) for r in spec.num_speculative_tokens_per_batch_size or []] or None,
                    "k_at": {b: lookup[b] for b in (1, 2, 4, 5, 64, 256)} if lookup else None,
                    "adaptive": spec.enable_adaptive_verification})
    except Exception as exc:  # what vLLM refuses, as it says it
        out.append({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]})
print("RESULT " + json.dumps(out))
'''


def _spec_json(command: str) -> str:
    words = shlex.split(command)
    return words[words.index("--speculative-config") + 1]


def test_schedule_and_adaptive_deploy_configs_are_accepted_by_vllms_config_class(tmp_path: Path) -> None:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    env = env_from_setup(env_dir)
    model = env["SPECTUNE_VLLM_MODEL"]
    picks = [
        serve_command(model, 1, scheduled("ngram", ((1, 4, 5), (5, 64, 3))),
                      extras={"ngram": {"prompt_lookup_max": 3, "prompt_lookup_min": 2}}),
        serve_command(model, 1, scheduled("draft_model", ((1, 1, 3), (2, 256, 1))), draft_model=model),
        serve_command(model, 1, Choice("dspark", 8, adaptive=True), draft_model=model),
    ]
    assert "num_speculative_tokens_per_batch_size" in picks[0].command
    assert '"enable_adaptive_verification":true' in picks[2].command
    argvs = [["--model", model, "--dtype", "float32", "--max-model-len", "512",
              "--speculative-config", _spec_json(p.command)] for p in picks]
    bad = json.loads(_spec_json(picks[1].command))
    bad["num_speculative_tokens_per_batch_size"] = [[1, 4, 3], [3, 256, 1]]  # overlapping: vLLM refuses it
    argvs.append([*argvs[1][:-1], json.dumps(bad)])
    python = env.get("SPECTUNE_VLLM_PYTHON") or str(Path(env_dir) / "venv" / "bin" / "python")
    res = subprocess.run([python, "-c", PROBE, json.dumps(argvs)], env={**os.environ, **env}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    line = next((x for x in res.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, res.stderr[-2000:]
    ngram, draft, dspark, refused = json.loads(line.removeprefix("RESULT "))
    assert ngram == {"ok": True, "method": "ngram", "num_speculative_tokens": 5,
                     "schedule": [[1, 4, 5], [5, 64, 3]], "adaptive": False,
                     "k_at": {"1": 5, "2": 5, "4": 5, "5": 3, "64": 3, "256": 3}}  # the last K carries on
    assert draft == {"ok": True, "method": "draft_model", "num_speculative_tokens": 3,
                     "schedule": [[1, 1, 3], [2, 256, 1]], "adaptive": False,
                     "k_at": {"1": 3, "2": 1, "4": 1, "5": 1, "64": 1, "256": 1}}
    assert dspark == {"ok": True, "method": "dspark", "num_speculative_tokens": 8, "schedule": None,
                      "adaptive": True, "k_at": None}
    assert refused["ok"] is False and "non-overlapping" in refused["error"]
