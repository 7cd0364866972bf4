"""The deployable answer: a recommendation as the full ``vllm serve`` command a user pastes into a shell.

``vllm serve MODEL --tensor-parallel-size N --speculative-config '{…}'`` with the model and TP size the
cells were benchmarked with, the drafter checkpoint (from the cells' own ``draft_model`` — what the
runner launched, from the matrix — or the user's ``--draft-model METHOD=PATH``), and the depth schedule
when one is chosen. Every word is shell-quoted (shlex). A method that needs a drafter nobody named gets
``"model":"<DRAFTER_PATH>"`` with the placeholder left *outside* the shell quotes: a shell reads
``<DRAFTER_PATH`` as an input redirection from a file that does not exist and refuses to run the command,
while ``shlex.split`` (and so any script) still sees the JSON with the placeholder in it. The ``note``
says what to fill in; the command itself carries the gap, never only a caption.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from analysis.rescore.config import NEEDS_DRAFT_MODEL, Choice, speculative_config

DRAFTER_PLACEHOLDER = "<DRAFTER_PATH>"


@dataclass(frozen=True, slots=True)
class ServeCommand:
    command: str  # the shell line
    speculative_config: dict[str, Any] | None
    tensor_parallel_size: int
    draft_model: str | None  # the drafter the command names (None: none needed, or the placeholder)
    note: str | None  # what the user must still fill in

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command, "speculative_config": self.speculative_config,
                "tensor_parallel_size": self.tensor_parallel_size, "draft_model": self.draft_model,
                "needs_draft_model": self.note is not None, "note": self.note}


def drafter_for(choice: Choice, measured: str | None, given: dict[str, str] | None) -> str | None:
    """The drafter checkpoint for a choice: the user's ``--draft-model`` first, then the benchmarked one."""
    return (given or {}).get(choice.method) or measured or None


def serve_command(model: str, tensor_parallel_size: int | None, choice: Choice, *, draft_model: str | None = None,
                  draft_models: dict[str, str] | None = None,
                  extras: dict[str, dict[str, Any]] | None = None) -> ServeCommand:
    """The full command for ``choice`` on ``model`` at the benchmarked TP size.

    ``draft_model``: the drafter the benchmark ran with (cells.draft_model); ``draft_models``: the user's
    METHOD=PATH overrides; ``extras``: method → the other config keys the cells were measured with."""
    tp = max(int(tensor_parallel_size or 1), 1)
    drafter = drafter_for(choice, draft_model, draft_models)
    config = speculative_config(choice, {choice.method: drafter} if drafter else None, extras)
    argv = ["vllm", "serve", model, "--tensor-parallel-size", str(tp)]
    note = None
    if config is None:
        return ServeCommand(shlex.join(argv), None, tp, None, None)
    placeholder = choice.method in NEEDS_DRAFT_MODEL and not drafter
    if placeholder:
        config["model"] = DRAFTER_PLACEHOLDER
        note = (f"{choice.method} needs its drafter checkpoint: replace {DRAFTER_PLACEHOLDER} (or pass "
                f"--draft-model {choice.method}=PATH); the shell refuses the command until then")
    text = shlex.join([*argv, "--speculative-config", json.dumps(config, separators=(",", ":"))])
    if placeholder:  # leave the placeholder bare: see the module docstring
        text = text.replace(DRAFTER_PLACEHOLDER, f"'{DRAFTER_PLACEHOLDER}'")
    return ServeCommand(text, config, tp, drafter, note)
