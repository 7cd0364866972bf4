"""What to deploy: a (method, depth) choice, parsed from ``METHOD:DEPTH`` and turned into vLLM's flag.

Owns the exact ``--speculative-config`` JSON a recommendation prints. It follows vLLM's own keys
(``method``, ``num_speculative_tokens``; n-gram's ``prompt_lookup_max``/``prompt_lookup_min``; a
separate drafter's ``model``). The n-gram defaults are vLLM's example values, the same the runner
launches with (runner/vllm/server.py), for cells that do not say what they ran with. The keys the
benchmark cells were measured with (``cells.speculative_extra``, e.g. a ``prompt_lookup_max`` of 3) replace
those defaults: the command recommends the config that was measured. ``none`` means no flag at all. Methods
with a separately trained drafter (EAGLE-3, DFlash, DSpark, draft_model, medusa) need its path: it comes
from ``--draft-model METHOD=PATH`` or stays a marked gap.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from ingest.errors import UsageError
from ingest.records import KNOWN_METHODS

NGRAM_DEFAULTS: dict[str, int] = {"prompt_lookup_max": 4, "prompt_lookup_min": 2}
# Methods whose drafter is a separate checkpoint (vLLM's speculative_config needs "model" for them).
NEEDS_DRAFT_MODEL: frozenset[str] = frozenset({"eagle3", "eagle", "dflash", "dspark", "draft_model", "medusa"})
MAX_DEPTH = 16


Schedule = tuple[tuple[int, int, int], ...]  # inclusive (first batch size, last batch size, depth) ranges


@dataclass(frozen=True, slots=True, order=True)
class Choice:
    """One candidate configuration: a method and its depth (``num_speculative_tokens``; 0 for none).

    With a ``schedule`` the depth follows the batch size (vLLM's ``num_speculative_tokens_per_batch_size``)
    and ``depth`` is its largest depth, the cap vLLM applies to every range. With ``adaptive`` the verifier trims
    each step's drafts (vLLM's ``enable_adaptive_verification``, DSpark) and ``depth`` is the most it drafts.
    """

    method: str
    depth: int
    schedule: Schedule = ()
    adaptive: bool = False

    @property
    def mode(self) -> str:
        return "schedule" if self.schedule else "adaptive" if self.adaptive else "fixed"

    @property
    def label(self) -> str:
        if self.method == "none":
            return "none"
        if self.schedule:
            return f"{self.method}·" + ",".join(f"{a}-{b}→{k}" for a, b, k in self.schedule)
        if self.adaptive:
            return f"{self.method}·≤{self.depth} adaptive"
        return f"{self.method}·{self.depth}"


def scheduled(method: str, schedule: Schedule) -> Choice:
    """The choice that runs ``method`` at each batch range's depth."""
    return Choice(method, max(k for _a, _b, k in schedule), tuple(tuple(int(x) for x in r) for r in schedule))


def parse_choice(text: str) -> Choice:
    """``mtp:3`` or ``mtp·3`` → Choice('mtp', 3); ``none`` (or ``none:0``) → the baseline. Raises UsageError."""
    raw = (text or "").strip().lower().replace("·", ":")
    method, _, depth = raw.partition(":")
    if method not in KNOWN_METHODS:
        raise UsageError(f"--default {text!r}: unknown method {method!r} (expected one of {', '.join(KNOWN_METHODS)})")
    if method == "none":
        if depth not in ("", "0"):
            raise UsageError(f"--default {text!r}: the none baseline has no depth")
        return Choice("none", 0)
    if not depth.isdigit() or not 1 <= int(depth) <= MAX_DEPTH:
        raise UsageError(f"--default {text!r}: expected METHOD:DEPTH with a depth of 1–{MAX_DEPTH}, e.g. mtp:3")
    return Choice(method, int(depth))


def parse_draft_models(items: list[str]) -> dict[str, str]:
    """``["eagle3=/models/eagle3-qwen"]`` → {"eagle3": "/models/eagle3-qwen"}."""
    out: dict[str, str] = {}
    for item in items:
        method, sep, path = item.partition("=")
        if not sep or method.strip() not in KNOWN_METHODS or not path.strip():
            raise UsageError(f"--draft-model {item!r}: expected METHOD=PATH, e.g. eagle3=/models/eagle3")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):  # a newline would split the printed command
            raise UsageError(f"--draft-model {item!r}: the drafter path has a control character")
        out[method.strip()] = path.strip()
    return out


def speculative_config(choice: Choice, draft_models: dict[str, str] | None = None,
                       extras: dict[str, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The ``--speculative-config`` dict for a choice; ``None`` for the ``none`` baseline.

    ``extras``: method → the other keys its benchmark cells were measured with (``cells.speculative_extra``):
    they win over the n-gram defaults, so the recommended config is the one that was measured."""
    if choice.method == "none":
        return None
    config: dict[str, Any] = {"method": choice.method, "num_speculative_tokens": choice.depth}
    if choice.schedule:
        config["num_speculative_tokens_per_batch_size"] = [list(r) for r in choice.schedule]
    if choice.adaptive:
        config["enable_adaptive_verification"] = True
    measured = (extras or {}).get(choice.method) or {}
    if choice.method == "ngram" and not measured:
        config.update(NGRAM_DEFAULTS)
    config.update({k: v for k, v in measured.items() if k not in config and k != "model"})
    model = (draft_models or {}).get(choice.method)
    if model:
        config["model"] = model
    return config


def needs_draft_model(choice: Choice, draft_models: dict[str, str] | None = None) -> bool:
    """True when the config still lacks the drafter checkpoint vLLM needs for this method."""
    return choice.method in NEEDS_DRAFT_MODEL and not (draft_models or {}).get(choice.method)


def vllm_args(config: dict[str, Any] | None) -> str:
    """The command-line fragment for ``vllm serve``: empty for the baseline, else the quoted JSON flag."""
    if config is None:
        return ""
    return "--speculative-config " + shlex.quote(json.dumps(config, separators=(",", ":")))
