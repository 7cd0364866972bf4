"""``spectune winners`` and ``spectune curve`` — the winner per group, and acceptance/throughput by depth.

Each prints one JSON document with ``--json`` and a short table otherwise (DESIGN's CLI contract). ``winners`` with
every option at its default answers from the store's derived data when it is current (analysis/derived_read.py,
DuckDB only); the live computation (spectune/commands/winners_live.py) is loaded only when an answer is computed,
so a kept answer does not pay for polars, numpy or the winner rule.
"""

from __future__ import annotations

import argparse

from analysis.metrics import METRICS
from ingest.paths import announce_first_start

INPUT_ERRORS = (ValueError,)  # the analysis code says bad input as ValueError too (spectune/cli.py run_parsed)


def _load_arg(text: str) -> int | None:
    """``--concurrency 8``, or ``not-stated`` for the cells whose source gives no load (stored NULL)."""
    if text.strip().lower().replace(" ", "-") in ("not-stated", "none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number or 'not-stated'") from None


def _winners_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metric", default="output_throughput", choices=list(METRICS))
    p.add_argument("--gpu", action="append", default=[], help="repeatable")
    p.add_argument("--family", action="append", default=[], help="repeatable")
    p.add_argument("--model", action="append", default=[], help="repeatable (a model id, e.g. Qwen/Qwen3-8B)")
    p.add_argument("--workload", action="append", default=[], help="repeatable")
    p.add_argument("--dataset", action="append", default=[], help="repeatable (GSM8K, HumanEval …)")
    p.add_argument("--method", action="append", default=[], help="repeatable")
    p.add_argument("--concurrency", action="append", type=_load_arg, default=[],
                   help="repeatable; 'not-stated' selects figures whose source gives no load")
    p.add_argument("--depth-min", type=int, default=0)
    p.add_argument("--depth-max", type=int, default=64)
    p.add_argument("--backend", action="append", default=[], choices=["sim", "vllm", "import"])
    p.add_argument("--run", action="append", default=[], help="restrict to these run ids")
    p.add_argument("--slo-ttft-ms", type=float, default=2000.0, help="goodput SLO: TTFT ≤ this")
    p.add_argument("--slo-tpot-ms", type=float, default=50.0, help="goodput SLO: TPOT ≤ this")
    p.add_argument("--best-depth", action="store_true", help="compare each method at its best depth")
    p.add_argument("--schedule", action="store_true",
                   help="per GPU × family × workload × method: the depth schedule per batch size "
                        "(num_speculative_tokens_per_batch_size) against the best static depth")
    p.add_argument("--draft-model", action="append", default=[], metavar="METHOD=PATH",
                   help="drafter checkpoint for the deploy commands (eagle3, dflash, dspark …)")
    p.add_argument("--margin", type=float, default=2.0, metavar="PCT",
                   help="practical equivalence: candidates within PCT %% of the best count as equivalent (default 2)")
    p.add_argument("--default", default="mtp:3", metavar="METHOD:DEPTH",
                   help="what you run today (default mtp:3, also mtp·3): the sensible pick prefers its method on a "
                        "tie, and the summary says what it leaves on the table")
    p.add_argument("--clear-at", type=float, default=0.95, metavar="P",
                   help="a winner is clear when its chance of being best (p_best) is at least P (default 0.95)")
    p.add_argument("--tie-at", type=float, default=0.05, metavar="P",
                   help="a candidate is tied with the winner when its p_best is at least P (default 0.05)")
    p.add_argument("--point-noise", type=float, default=3.0, metavar="PCT",
                   help="run-to-run noise given to point figures without samples (imported, published), "
                        "in %% (default 3; docs/metrics.md)")


def _curve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", required=True)
    p.add_argument("--method", required=True)
    p.add_argument("--workload", required=True)
    p.add_argument("--gpu", default=None)
    p.add_argument("--concurrency", type=int, default=None)
    p.add_argument("--model", default=None, help="one model of the family (default: every model, each its own points)")


def _winners_run(args: argparse.Namespace) -> int:
    """The kept answer (analysis/derived.py) when every option is at its default and the store's derived data is
    current; else the live computation, which then keeps the default store's answer."""
    announce_first_start(args.db, args.settings)
    # lazy: DuckDB loads for winners only (not for --help); derived_read imports nothing heavier
    from analysis import derived_read

    defaults = _is_default(args)
    kept, stamp = derived_read.read_winners(args.db) if defaults else (None, None)
    if kept is not None and args.json:
        print(kept)
        return 0
    return _live().winners_run(args, kept=kept, stamp=stamp, keep=defaults and args.db is None)


def _is_default(args: argparse.Namespace) -> bool:
    """Every option at its default (``--json`` and ``--db`` aside): the answer analysis/derived.py keeps."""
    p = argparse.ArgumentParser()
    _winners_args(p)
    return all(getattr(args, k) == v for k, v in vars(p.parse_args([])).items())


def _curve_run(args: argparse.Namespace) -> int:
    announce_first_start(args.db, args.settings)
    return _live().curve_run(args)


def _live():
    """The live computation. The one sanctioned lazy import of the command line besides the command table's: the
    winners fast path answers without it (a kept answer loads neither polars nor the winner rule)."""
    from spectune.commands import winners_live

    return winners_live


COMMANDS = {"winners": (_winners_args, _winners_run), "curve": (_curve_args, _curve_run)}
