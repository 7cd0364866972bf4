"""Tuning a matrix: racing its candidates in rounds, spending requests only where a group's winner is still open.

A **group** is what the winner rule decides (GPU × model × workload × load, analysis.winners.GROUP); its
**candidates** are the matrix's server configs for that GPU and model — (method, depth, mode), mode ``fixed``
or ``schedule`` today (whatever the matrix expands into cells, so new modes plug in as new cells).

1. **Probes first** (where the simulator's model describes the group's candidates; ``screen_at = 0`` races every
   candidate from round 1): round 1 measures the baseline and one **probe** depth per method — per family the
   depth most often its method's best under the model's R parameter draws (analysis.model_draws), so one server
   start serves all the family's groups. Every other candidate waits, **screened**: after each round it is
   predicted from its method's measured probe (the probe's replicate j × the model's candidate/probe ratio under
   draw j — the method's level as measured, the depth profile's uncertainty as the model states it) and is
   **admitted** (measured from the next round on) when its predicted chance of being best reaches ``screen_at``
   (default 0.1).
2. **Rounds**: round r gives every open candidate of every open group a batch of ``first_share · growth^(r−1)``
   of the matrix's requests per cell (at least ``min_batch``; each server config needed by any open group starts
   once per round, shared by its groups). After the round each group is decided on its measured cells
   (analysis.winners.decide, sampling replicates only): a candidate whose chance of being best or within the
   margin (analysis.equivalence.p_near_best) is below ``drop_at`` (0.05) is dropped; the group stops when a
   measured candidate is best or within the margin in ≥ clear-at (0.95) of the replicates and nobody was admitted
   — verdict ``clear`` when the winner's own p_best reaches clear-at, else ``equivalent`` — or when one candidate
   is left, or when its cells reached ``max_share`` × the matrix's requests (``cap``: the winner rule's verdict).
   The pick is the winner rule's pick among the confidently good candidates (shallowest first); a group stopped
   unsettled picks its best point estimate.
3. **Budget**: each round's GPU-hours are estimated as ``runner plan`` estimates the full grid (a server start per
   server config, cell time per request from earlier runs or the cost model); a round that would pass
   ``--budget-gpu-hours`` is not started, and the output says so.

4. **Schedules** (:func:`propose_schedules`, off with ``schedules=False``): once every load's group of a (gpu,
   family, model, workload) has settled, a depth schedule predicted from its measured fixed cells
   (analysis.schedule.derive) and recommended over the best static depth joins as its own server config, measured
   in every load's group from the next round on in the fixed cells' batch sizes; ``schedules`` in the result
   reports it predicted against measured (:func:`schedule_reports`, analysis.schedule.measured_gain).

**How a cell grows in the store.** Round r is its own run ``<tune id>-r<r>``. A cell measured again in round r
lands there holding every request it has had so far: round r−1's cell (read back from the store) plus the new
batch (request indices and start times continued after it, counters summed, windows added) — so each round's
run is a complete, honest cell of n_r requests, the earlier rounds' cells stay in the store as they were, and
analysis' "latest cell per id" reads the one with most requests. A killed tune resumes (``--resume``) by replaying
its rounds' decisions from the store (they are deterministic) and finishing the interrupted round's missing cells.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from analysis import frames
from analysis import schedule as schedule_rule
from analysis.equivalence import DEFAULT_MARGIN_PCT, gap_pct, judge, p_near_best, pick_among
from analysis.metrics import get_metric
from analysis.model_draws import cell_factors, model_speed
from analysis.winners import CLEAR_AT, TIE_AT, decide, deploy_for, p_best
from ingest import ddl, open_store, sql
from ingest.records import CellKey, SpecCounters
from runner import cluster
from runner.backends import get_backend
from runner.backends.base import Backend, CellOutcome, Progress, Sink
from runner.execute import RunOptions, run_matrix
from runner.matrix import Matrix, ServerConfig, with_schedule
from runner.plan import plan_matrix

GROUP_KEYS = ("gpu", "family", "model", "workload", "concurrency")
SCREEN_AT = 0.1  # predicted chance of being best a screened candidate needs to be measured (admitted)


@dataclass(frozen=True, slots=True)
class TuneOptions:
    backend: str = "sim"
    world: int | None = None
    db: Path | None = None
    budget_gpu_hours: float | None = None
    resume: bool = False
    metric: str = "output_throughput"
    first_share: float = 0.1  # round 1's batch, as a share of the matrix's requests per cell
    min_batch: int = 20  # requests a cell gets at least per round (a bootstrap of a handful says little)
    growth: float = 4.0  # each round's batch is this many times the previous one (fewer rounds, fewer restarts)
    max_share: float = 1.0  # a cell stops growing at the matrix's requests per cell (never more than the full grid)
    max_rounds: int = 12
    margin_pct: float = DEFAULT_MARGIN_PCT
    clear_at: float = CLEAR_AT
    tie_at: float = TIE_AT
    drop_at: float = 0.05  # chance of being best or within the margin below which a candidate is dropped
    screen_at: float = SCREEN_AT
    pick: str = "shallowest"  # among the confidently good: the winner rule's pick (shallowest …) | best
    unsettled_pick: str = "best"  # a group stopped unsettled (cap, budget): the best point estimate | rule
    ray: str | None = None  # run each round's server configs as Ray tasks on this cluster (runner.cluster)
    schedules: bool = True  # race a depth schedule predicted to beat the best fixed depth (propose_schedules)


def mode_of(key: CellKey) -> str:
    """A candidate's mode: fixed, schedule or adaptive (ingest.records.MODES)."""
    return key.mode


def candidate_of(key: CellKey) -> tuple:
    """What a candidate is inside its group: the cell's server config without GPU and model."""
    return (key.method, key.depth, key.schedule, key.synthetic_rates, mode_of(key))


def group_of(key: CellKey) -> tuple:
    return tuple(getattr(key, k) for k in GROUP_KEYS)


@dataclass(slots=True)
class Group:
    key: tuple
    cells: dict[tuple, CellKey]  # candidate → its cell
    open: list[tuple] = field(default_factory=list)
    screened: list[tuple] = field(default_factory=list)
    dropped: list[tuple] = field(default_factory=list)
    failed: list[tuple] = field(default_factory=list)
    done: bool = False
    stop: str = ""  # why the group stopped: clear | equivalent | one left | cap | budget | rounds
    result: dict[str, Any] | None = None
    model: dict[tuple, np.ndarray] = field(default_factory=dict)  # candidate → its speed under each model draw
    probes: dict[str, tuple] = field(default_factory=dict)  # method → the candidate that measures its level

    def as_labels(self) -> dict[str, Any]:
        return dict(zip(GROUP_KEYS, self.key, strict=True))


@dataclass(slots=True)
class Proposal:
    """A depth schedule predicted from a (gpu, family, model, workload)'s measured fixed cells (analysis.schedule.
    derive) that is recommended over the method's best static depth, and what tune did with it."""

    where: tuple  # (gpu, family, model, workload)
    doc: dict[str, Any]  # the analysis.schedule.derive document (prediction, static depth, per-load best depths)
    round: int  # the round after which it was predicted (0: after the race)
    arms: dict[tuple, CellKey] = field(default_factory=dict)  # group key → the schedule cell raced in that group
    note: str = ""  # why it was not raced, when it was not


@dataclass(slots=True)
class Prior:
    """A cell as the store holds it after an earlier round: what the next batch is added to."""

    run_id: str
    requests: pl.DataFrame
    window_s: float
    counters: SpecCounters | None
    itl_ms: np.ndarray | None


@dataclass(slots=True)
class TuneResult:
    tune_id: str
    rounds: int
    gpu_hours: float
    gpu_hours_full_grid: float
    groups: list[Group]
    budget_stop: str | None = None
    round_log: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0
    metric: str = "output_throughput"
    world: int | None = None
    latest: dict[str, str] = field(default_factory=dict)  # cell id → the round run holding its newest cell
    requests_so_far: dict[str, int] = field(default_factory=dict)
    proposals: list[Proposal] = field(default_factory=list)
    schedules: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        full = self.gpu_hours_full_grid
        return {
            "tune_id": self.tune_id, "metric": self.metric, "world": self.world,
            "gpu_hours": round(self.gpu_hours, 4), "gpu_hours_full_grid": round(full, 4),
            "share_of_full_grid": round(self.gpu_hours / full, 4) if full else None,
            "gpu_hours_basis": "runner plan's estimate (server starts + cell time per request), as the full grid's",
            "rounds": self.rounds, "requests": self.requests, "round_log": self.round_log,
            "budget_stop": self.budget_stop,
            "groups": [g.result for g in self.groups if g.result is not None],
            "schedules": self.schedules,
        }


def _key_text(c: tuple) -> str:
    method, depth = c[0], c[1]
    return method if method == "none" else f"{method}:{depth}"


def build_groups(matrix: Matrix, cells: list[CellKey] | None = None) -> list[Group]:
    groups: dict[tuple, Group] = {}
    for key in (matrix.cells() if cells is None else cells):
        g = groups.setdefault(group_of(key), Group(group_of(key), {}))
        g.cells[candidate_of(key)] = key
    for g in groups.values():
        g.open = list(g.cells)
    return list(groups.values())


def screen(groups: list[Group], opts: TuneOptions, source: Callable[[str], str] = lambda w: w) -> None:
    """Round 1's candidates (module docstring, step 1): where the model describes every candidate of a group, the
    baseline and one **probe** depth per method — per family the depth most often its method's best under the
    model's draws, shared by the family's groups so one server start serves them all; the other candidates wait
    (``screened``) until the probes' measurements make them contenders (:func:`admit`). Groups the model cannot
    describe race every candidate. ``source``: the simulator's workload a matrix workload is."""
    if opts.screen_at <= 0 or get_metric(opts.metric).name != "output_throughput":
        return  # the model's draws scale throughput; other metrics race every candidate
    votes: dict[tuple, dict[tuple, float]] = {}  # (family, method) → candidate → summed within-method p_best
    modelled = []
    for g in groups:
        gpu, family, _model, workload, conc = g.key
        try:
            for c, key in g.cells.items():
                if key.schedule or key.synthetic_rates or mode_of(key) != "fixed":
                    raise ValueError("the model describes fixed depths only")
                args = (key.method, key.depth, family, source(workload), gpu, int(conc or 1))
                f = cell_factors(*args)
                g.model[c] = model_speed(*args) * (f["output_throughput"] if f is not None else np.ones(1))
        except (KeyError, ValueError):
            g.model = {}
            continue
        modelled.append(g)
        for method in {c[0] for c in g.cells if c[0] != "none"}:
            cands = [c for c in g.cells if c[0] == method]
            width = max(np.size(g.model[c]) for c in cands)
            chance = p_best(np.vstack([np.broadcast_to(g.model[c], (width,)) for c in cands]), True)
            tally = votes.setdefault((family, method), {})
            for c, p in zip(cands, chance, strict=True):
                tally[c] = tally.get(c, 0.0) + float(p)
    for g in modelled:
        family = g.key[1]
        g.probes = {method: max(tally, key=lambda c: (tally[c], -c[1])) for (fam, method), tally in votes.items()
                    if fam == family and any(c in g.cells for c in tally)}
        keep = [c for c in g.open if c[0] == "none" or c in g.probes.values()]
        g.screened = [c for c in g.open if c not in keep]
        g.open = keep


def predictions(g: Group, measured: dict[tuple, np.ndarray]) -> dict[tuple, np.ndarray]:
    """Replicates of every screened candidate from its method's measured probe: the probe's replicate j times the
    model's ratio candidate/probe under draw j (the depth profile's own uncertainty: decay, draft cost), so the
    method's level is the measured one. A screened candidate whose probe has no replicates is not predicted."""
    out = {}
    for c in g.screened:
        probe = g.probes.get(c[0])
        if probe is None or probe not in measured or c not in g.model or probe not in g.model:
            continue
        reps = measured[probe]
        ratio = np.broadcast_to(g.model[c] / g.model[probe], (reps.shape[0],)) if reps.size else reps
        out[c] = reps * ratio
    return out


def scaled(matrix: Matrix, share: float, min_batch: int = 1) -> Matrix:
    """The matrix with ``share`` of its requests per cell (at least ``min_batch``)."""
    return dataclasses.replace(matrix, requests_per_cell=max(min_batch, round(matrix.requests_per_cell * share)),
                               requests_per_slot=max(0, round(matrix.requests_per_slot * share)),
                               adaptive=None)


def tune_base(matrix: Matrix, extra: str = "") -> str:
    """The matrix hash a tune's round runs carry (the file's, marked as a tune, and the trace's): a plain
    ``run --resume`` never continues a tune round, and a tune never continues a plain run."""
    return ":".join(x for x in (matrix.digest, "tune", extra) if x)


def tune_hash(matrix: Matrix, opts: TuneOptions, extra: str = "") -> str:
    """What the round runs record (runner.execute.run_matrix_hash: the world is added there)."""
    base = tune_base(matrix, extra)
    return base if opts.world is None else f"{base}:world{opts.world}"


def resolve_tune_id(matrix: Matrix, opts: TuneOptions, digest: str,
                    notify: Callable[[str], None] | None = None) -> str:
    if opts.resume:
        with open_store.session(opts.db) as con:
            row = sql.one(con, "SELECT run_id FROM runs WHERE matrix_hash = ? AND backend = ? "
                               "ORDER BY started_at DESC LIMIT 1", [digest, opts.backend])
        if row:
            return re.sub(r"-r\d+$", "", row[0])
        if notify is not None:
            notify(f"note: --resume: no earlier tune of {matrix.path} with these inputs; starting a new one")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    world = "" if opts.world is None else f"-w{opts.world}"
    return f"{matrix.name}-tune{world}-{stamp}-{secrets.token_hex(3)}"


def read_prior(con, run_id: str, key: CellKey) -> Prior | None:
    """The cell ``key`` as round ``run_id`` landed it (None when it is not there or failed)."""
    row = sql.one(con, "SELECT window_s, counter_drafts, counter_draft_tokens, counter_accepted_tokens, status "
                       "FROM cells WHERE run_id = ? AND cell_id = ?", [run_id, key.cell_id])
    if row is None or row[4] != "ok":
        return None
    reqs = frames.requests(con, run_id, key.cell_id).drop("run_id", "cell_id")
    counters = None
    if row[1] is not None:
        pos = [r[0] for r in con.execute("SELECT acceptance FROM positions WHERE run_id = ? AND cell_id = ? "
                                         "ORDER BY position", [run_id, key.cell_id]).fetchall()]
        counters = SpecCounters(drafts=int(row[1]), draft_tokens=int(row[2] or 0), accepted_tokens=int(row[3] or 0),
                                accepted_per_pos=[round(float(a or 0) * row[1]) for a in pos])
    return Prior(run_id, reqs, float(row[0] or 0.0), counters, None)


def merge(prior: Prior | None, new: CellOutcome) -> CellOutcome:
    """``new`` (one batch) added to the cell as it stood (module docstring: how a cell grows)."""
    if prior is None or new.status != "ok" or prior.requests.height == 0:
        return new
    n0 = prior.requests.height
    batch = new.requests.with_columns(pl.col("request_index") + n0, pl.col("start_s") + prior.window_s)
    requests = pl.concat([prior.requests, batch], how="diagonal_relaxed")
    counters = new.counters
    if prior.counters is not None and new.counters is not None:
        a, b = prior.counters, new.counters
        per = [x + y for x, y in zip(a.accepted_per_pos, b.accepted_per_pos, strict=False)]
        counters = SpecCounters(a.drafts + b.drafts, a.draft_tokens + b.draft_tokens,
                                a.accepted_tokens + b.accepted_tokens, per)
    itl = new.itl_ms if prior.itl_ms is None or new.itl_ms is None else np.concatenate([prior.itl_ms, new.itl_ms])
    return dataclasses.replace(new, requests=requests, counters=counters, itl_ms=itl,
                               window_s=(new.window_s or 0.0) + prior.window_s)


def accumulating_backend(kind: str, world: int | None, priors: dict[str, Prior], batch_index: int,
                         offsets: dict[str, int]) -> Accumulating:
    """A round's backend, built where it runs (a Ray task calls this; its arguments travel with the task)."""
    inner = get_backend(kind, world=world)
    if hasattr(inner, "offsets"):  # the simulator: this batch's seed and the prompt set's next requests
        inner.batch_index = batch_index  # type: ignore[attr-defined]
        inner.offsets = offsets  # type: ignore[attr-defined]
    return Accumulating(inner, priors)


class Accumulating:
    """A backend that adds each new batch to the cell as the store holds it (:func:`merge`); every other
    attribute (``prepare``, ``fast_cells`` …) is the wrapped backend's."""

    def __init__(self, inner: Backend, priors: dict[str, Prior]) -> None:
        self.inner = inner
        self.priors = priors
        self.kind = inner.kind

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def host_facts(self, matrix: Matrix):
        return self.inner.host_facts(matrix)

    def run_server_config(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        def merged(outcome: CellOutcome) -> None:
            sink(merge(self.priors.get(outcome.key.cell_id), outcome))

        self.inner.run_server_config(matrix, config, cells, merged)


def _read_decision_inputs(con, m, latest: dict[str, str], keys: list[CellKey]) -> tuple[np.ndarray, np.ndarray]:
    """Point values and sampling replicates of ``keys`` at their latest round."""
    frame = pl.DataFrame({"run_id": [latest[k.cell_id] for k in keys], "cell_id": [k.cell_id for k in keys]})
    col = m.value_column
    if col not in ddl.COLUMNS["cells"]:  # a column name is interpolated below: only the store's own cell columns
        raise ValueError(f"metric column {col!r} is not a cells column")
    vals = dict(con.execute(f"SELECT cell_id, {col} FROM cells WHERE status = 'ok' AND list_contains(?, run_id || "
                            f"'/' || cell_id)", [[f"{r}/{c}" for r, c in frame.iter_rows()]]).fetchall())
    values = np.array([np.nan if vals.get(k.cell_id) is None else float(vals[k.cell_id]) for k in keys])
    reps = frames.replicates(con, frame, col)
    return values, reps


def decide_group(con, g: Group, latest: dict[str, str], opts: TuneOptions, final: bool,
                 matrix: Matrix | None = None) -> None:
    """The winner rule on the group's measured cells: drops, stop, and (``final``) its result entry."""
    m = get_metric(opts.metric)
    cands = [c for c in g.cells if g.cells[c].cell_id in latest and c not in g.failed]
    if not cands:
        if final:
            g.result = _result(g, None, [], None, None, matrix)
        return
    keys = [g.cells[c] for c in cands]
    values, reps = _read_decision_inputs(con, m, latest, keys)
    for c, v in zip(cands, values, strict=True):  # a cell that failed in a round leaves the race
        if not np.isfinite(v) and c in g.open:
            g.open.remove(c)
            g.failed.append(c)
    d = decide(values, reps, m, clear_at=opts.clear_at, tie_at=opts.tie_at)
    j = judge([k.method for k in keys], [k.depth for k in keys], values, d.order, d.tied, m, opts.margin_pct,
              None, clear=d.clear)
    # The screened candidates as their probes predict them, in the same replicate columns as the measured ones.
    preds = predictions(g, {c: reps[i] for i, c in enumerate(cands)} if reps.size else {})
    pred_keys = list(preds)
    rows = np.vstack([reps, *[preds[c][None, :] for c in pred_keys]]) if reps.size else reps
    chance = p_best(rows, m.higher_is_better) if rows.size else np.zeros(len(cands))
    # near-best among the measured: a screened candidate below the admission chance has no real chance, and one
    # above it is admitted (and measured) before the group may stop
    near = p_near_best(reps, opts.margin_pct, m.higher_is_better) if reps.size else np.zeros(len(cands))
    admit = [c for i, c in enumerate(pred_keys) if chance[len(cands) + i] >= opts.screen_at - 1e-12]
    # Confidently good: best or within the margin of the best (measured and predicted alike) in ≥ clear-at of the
    # replicates. The pick is chosen among them by the winner rule's pick rule.
    confident = [i for i in d.order if near[i] >= opts.clear_at - 1e-12]
    if confident:
        k, reason = pick_among([(keys[i].method, keys[i].depth) for i in confident], None)
        if opts.pick == "best":  # the best point estimate among them: the safest when the margin is tight
            k, reason = 0, "best point estimate among the confidently equivalent"
        verdict = "clear" if d.clear else "equivalent"
        j = dataclasses.replace(j, pick=confident[k], pick_reason=reason, verdict=verdict)
    elif opts.unsettled_pick == "best":  # not settled within the margin: the best point estimate is the least risk
        j = dataclasses.replace(j, pick=d.order[0], pick_reason="best point estimate (not settled within the margin)")
    if not g.done:
        best = cands[d.order[0]]
        for i, c in enumerate(cands):
            if c in g.open and c != best and near[i] < opts.drop_at:
                g.open.remove(c)
                g.dropped.append(c)
        for c in admit:  # a contender by its probe's measurement: measured from the next round on
            g.screened.remove(c)
            g.open.append(c)
        if confident and not admit:
            g.done, g.stop = True, j.verdict
        elif len(g.open) <= 1 and not admit:
            g.done, g.stop = True, "one left"
    if final:
        g.result = _result(g, (d, j), cands, values, keys, matrix)


def _result(g: Group, dj, cands: list[tuple], values, keys: list[CellKey] | None, matrix: Matrix | None
            ) -> dict[str, Any]:
    out: dict[str, Any] = {**g.as_labels(), "candidates": len(g.cells), "candidates_left": len(g.open),
                           "screened": len(g.screened), "dropped": len(g.dropped), "failed": len(g.failed),
                           "stopped": g.stop or "open"}
    if dj is None or keys is None:
        return {**out, "winner": None, "pick": None, "p_best": None, "verdict": "no measured cell"}
    d, j = dj
    w, p = d.order[0], j.pick

    def cand(i: int) -> dict[str, Any]:
        k = keys[i]
        return {"method": k.method, "depth": k.depth, "mode": mode_of(k),
                "schedule": [list(r) for r in k.schedule] or None, "value": _num(values[i]),
                "p_best": _num(d.p_best[i])}

    pick_key = keys[p]
    row = {"method": pick_key.method, "depth": pick_key.depth, "model": pick_key.model, "gpu_count": None,
           "draft_model": None, "mode": mode_of(pick_key), "schedule": [list(r) for r in pick_key.schedule]}
    if matrix is not None:  # the TP size and drafter the candidate was measured with
        fam = matrix.family(pick_key.family)
        spec = next((ms for ms in matrix.methods if ms.name == pick_key.method), None)
        row["gpu_count"] = fam.tensor_parallel_size
        row["draft_model"] = fam.draft_models.get(pick_key.method) or (spec.draft_model if spec else None) or None
    return {**out, "winner": cand(w), "p_best": _num(d.p_best[w]), "verdict": j.verdict,
            "pick": {**cand(p), "reason": j.pick_reason, "gap_pct": _num(j.gaps.get(p, 0.0)),
                     "deploy": deploy_for(row)},
            "equivalent": [cand(i) for i in j.equivalent],
            "tied": [cand(i) for i in d.tied] if not d.clear else [],
            "requests_per_cell_max": None}


def _num(x) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def tune(matrix: Matrix, opts: TuneOptions, progress: Progress | None = None,
         notify: Callable[[str], None] | None = None, backend: Backend | None = None,
         cells: list[CellKey] | None = None, source: Callable[[str], str] | None = None,
         digest_extra: str = "") -> TuneResult:
    """Race ``matrix``'s candidates (module docstring). ``cells``: the cells to race (default every cell of the
    matrix); ``backend``: a backend object (default: ``opts.backend``, the world's simulator with ``world``)."""
    backend = backend or get_backend(opts.backend, world=opts.world)
    digest = tune_hash(matrix, opts, digest_extra)
    tune_id = resolve_tune_id(matrix, opts, digest, notify)
    groups = build_groups(matrix, cells)
    workload_source = source or (lambda w: next((x.source or w for x in matrix.workloads if x.name == w), w))
    screen(groups, opts, workload_source)
    full = plan_matrix(matrix, opts.db, cells=cells).estimated_gpu_hours
    result = TuneResult(tune_id, 0, 0.0, full, groups, metric=opts.metric, world=opts.world)
    with contextlib.ExitStack() as stack:
        if opts.ray:
            stack.enter_context(cluster.session(opts.ray))
        _rounds(matrix, opts, backend, groups, result, tune_id, digest_extra, progress)
    with open_store.session(opts.db, read_only=True) as con:
        for g in groups:
            decide_group(con, g, result.latest, opts, final=True, matrix=matrix)
            if g.result is not None:
                g.result["requests_per_cell_max"] = max((result.requests_so_far.get(k.cell_id, 0)
                                                         for k in g.cells.values()), default=0)
        if opts.schedules:  # what the race could not measure any more is still predicted (and said so)
            propose_schedules(con, matrix, groups, result, opts, result.rounds, end=True, add=False)
            result.schedules = schedule_reports(con, result, opts)
    return result


def _rounds(matrix: Matrix, opts: TuneOptions, backend: Backend, groups: list[Group], result: TuneResult,
            tune_id: str, digest_extra: str, progress: Progress | None) -> None:
    latest, requests_so_far = result.latest, result.requests_so_far
    share, spent_share = opts.first_share, 0.0
    arm_spent: dict[str, float] = {}  # a schedule arm added mid-race: its own share so far (its own cap)
    arm_rounds: dict[str, int] = {}  # … and the rounds it had
    for r in range(1, opts.max_rounds + 1):
        todo = [g.cells[c] for g in groups if not g.done for c in g.open]
        if not todo:  # the race is over: a schedule predicted now is raced in the next rounds
            matrix = _schedule_step(matrix, opts, groups, result, arm_spent, r - 1, end=True)
            todo = [g.cells[c] for g in groups if not g.done for c in g.open]
            if not todo:
                break
        capped = {k.cell_id for k in todo if opts.max_share - arm_spent.get(k.cell_id, spent_share) <= 1e-9}
        for g in groups:
            if not g.done and all(g.cells[c].cell_id in capped for c in g.open):
                g.done, g.stop = True, "cap"
        todo = [k for k in todo if k.cell_id not in capped]
        if not todo:
            break
        # a round of schedule arms only (the race around them settled) grows their batches as round 1, 2 … grew
        # the fixed cells' (first_share · growth^(rounds it had)): the arm and the cells it is compared with are
        # measured in the same batch sizes (a batch below the load under-fills the server: docs/tune.md)
        arms_only = all(k.cell_id in arm_spent for k in todo)
        base = (opts.first_share * opts.growth ** min(arm_rounds.get(k.cell_id, 0) for k in todo) if arms_only
                else share)
        spent_here = max(arm_spent.get(k.cell_id, spent_share) for k in todo)
        share_r = min(base, opts.max_share - spent_here)
        # min_batch is a floor below the cap only: a matrix of fewer requests per cell is never grown past it
        left = max(1, round(matrix.requests_per_cell * (opts.max_share - spent_here)))
        rmatrix = dataclasses.replace(scaled(matrix, share_r, min(opts.min_batch, left)),
                                      digest=tune_base(matrix, digest_extra))
        cost = plan_matrix(rmatrix, opts.db, cells=todo).estimated_gpu_hours
        run_id = f"{tune_id}-r{r}"
        with open_store.session(opts.db) as con:
            started = sql.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run_id]) is not None
            priors = {}
            for key in todo:
                if key.cell_id in latest:
                    prior = read_prior(con, latest[key.cell_id], key)
                    if prior is not None:
                        priors[key.cell_id] = prior
        if (opts.budget_gpu_hours is not None and not started
                and result.gpu_hours + cost > opts.budget_gpu_hours + 1e-12):
            result.budget_stop = (f"budget of {opts.budget_gpu_hours:g} GPU-hours reached: round {r} would cost "
                                  f"~{cost:.3g} more on top of {result.gpu_hours:.3g} spent")
            for g in groups:
                if not g.done:
                    g.stop = "budget"
            break
        offsets = {k.cell_id: requests_so_far.get(k.cell_id, 0) for k in todo}
        if hasattr(backend, "offsets"):  # the simulator: this batch's seed and the prompt set's next requests
            backend.batch_index = r  # type: ignore[attr-defined]
            backend.offsets = offsets  # type: ignore[attr-defined]
        ropts = RunOptions(backend=opts.backend, db=opts.db, resume=True, run_id=run_id,
                           only=frozenset(k.cell_id for k in todo), world=opts.world)
        def rprogress(label: str, done: int | None, total: int | None, r: int = r) -> None:
            if progress:
                progress(f"round {r} · {label}", done, total)

        if opts.ray:  # the same round as Ray tasks: each builds its backend from these arguments
            factory = functools.partial(accumulating_backend, opts.backend, opts.world, priors, r, offsets)
            summary = cluster.run_matrix_ray(rmatrix, ropts, opts.ray, rprogress if progress else None, factory)
        else:
            summary = run_matrix(rmatrix, ropts, progress=rprogress if progress else None,
                                 backend=Accumulating(backend, priors))
        result.rounds = r
        result.gpu_hours += cost
        batch_n = {k.cell_id: rmatrix.requests_for(int(k.concurrency or 1)) for k in todo}
        result.requests += sum(batch_n.values())
        for k in todo:
            latest[k.cell_id] = run_id
            requests_so_far[k.cell_id] = requests_so_far.get(k.cell_id, 0) + batch_n[k.cell_id]
        ran = max(share_r, rmatrix.requests_per_cell / matrix.requests_per_cell)  # the batch as run
        for k in todo:
            if k.cell_id in arm_spent:
                arm_spent[k.cell_id] += ran
                arm_rounds[k.cell_id] = arm_rounds.get(k.cell_id, 0) + 1
        if not arms_only:  # the race's own cells had this round
            spent_share += ran
            share *= opts.growth
        with open_store.session(opts.db, read_only=True) as con:
            for g in groups:
                if not g.done:
                    decide_group(con, g, latest, opts, final=False)
        matrix = _schedule_step(matrix, opts, groups, result, arm_spent, r)
        result.round_log.append({"round": r, "run_id": run_id, "cells": len(todo), "share": round(share_r, 4),
                                 "gpu_hours": round(cost, 4), "cells_failed": summary.cells_failed,
                                 "groups_open": sum(not g.done for g in groups)})
    else:
        for g in groups:
            if not g.done:
                g.stop = "rounds"


def _where(g: Group) -> tuple:
    return g.key[:4]  # (gpu, family, model, workload): the loads of one server config's traffic


def propose_schedules(con, matrix: Matrix, groups: list[Group], result: TuneResult, opts: TuneOptions, r: int,
                      end: bool = False, add: bool = True) -> Matrix:
    """Step 4 of the race (docs/tune.md): once every load's group of a (gpu, family, model, workload) has settled
    (≥ 2 loads; ``end``: the race is over, settled or not), predict each method's depth schedule from the measured
    fixed cells (analysis.schedule.derive, the ``winners --schedule`` rule). A recommended schedule that the
    matrix does not race yet becomes a candidate — its own server config (runner.matrix.with_schedule), one cell
    per load — and the load groups reopen with it open: it is measured from the next round on and races like any
    candidate. Returns the matrix the next rounds run (with the new arms). Each place is predicted once."""
    if not opts.schedules or not result.latest:
        return matrix
    done_where = {p.where for p in result.proposals}
    places: dict[tuple, list[Group]] = {}
    for g in groups:
        places.setdefault(_where(g), []).append(g)
    m = get_metric(opts.metric)
    runs = tuple(sorted(set(result.latest.values())))
    for where, gs in places.items():
        if where in done_where or len(gs) < 2 or not (end or all(g.done for g in gs)):
            continue
        gpu, family, model, workload = where
        cells = frames.cells(con, frames.Filters(gpus=(gpu,), families=(family,), models=(model,),
                                                 workloads=(workload,), runs=runs, modes=("fixed",)))
        cells = cells.filter(pl.col("cell_id").is_in([k.cell_id for g in gs for k in g.cells.values()]))
        if cells.height == 0:
            continue
        values = cells[m.value_column].fill_null(np.nan).to_numpy().astype(float)
        reps = frames.replicates(con, cells, m.value_column)
        docs = [d for d in schedule_rule.derive(cells, values, reps, m) if d["recommended"]]
        for doc in docs:
            prop = Proposal(where, doc, 0 if end and not add else r)
            result.proposals.append(prop)
            matrix = _add_arm(matrix, gs, prop, result) if add else matrix
            if not add:
                prop.note = "predicted after the race ended; not measured"
        if not docs:  # nothing recommended here: predict it no more
            result.proposals.append(Proposal(where, {}, r, note="no schedule recommended"))
    return matrix


def _add_arm(matrix: Matrix, gs: list[Group], prop: Proposal, result: TuneResult) -> Matrix:
    method = prop.doc["method"]
    sched = tuple(tuple(int(x) for x in row) for row in prop.doc["schedule"])
    spec = next((x for x in matrix.methods if x.name == method), None)
    if spec is None:
        prop.note = f"{method} is not a method of the matrix"
        return matrix
    if spec.schedule and spec.schedule != sched:
        prop.note = (f"not raced: the matrix already races another schedule for {method} "
                     f"(one schedule per method)")
        return matrix
    arms = {}
    for g in gs:
        fixed = next((k for c, k in g.cells.items() if c[0] == method and mode_of(k) == "fixed"), None)
        if fixed is not None:
            arms[g.key] = dataclasses.replace(fixed, depth=max(k for _a, _b, k in sched), schedule=sched,
                                              synthetic_rates=(), adaptive=False)
    new = with_schedule(matrix, method, sched)
    expanded = {k.cell_id for k in new.cells()}
    if not arms or any(k.cell_id not in expanded for k in arms.values()):
        prop.note = "not raced: the matrix does not expand this schedule's cells (e.g. trace shards)"
        return matrix
    prop.arms = arms
    for g in gs:
        arm = arms.get(g.key)
        if arm is None:
            continue
        c = candidate_of(arm)
        if c in g.cells:  # the matrix races this schedule already: its cells are measured as any candidate
            continue
        g.cells[c] = arm
        g.open = [c]  # the settled candidates' cells stand; the arm is measured against them
        g.done, g.stop, g.result = False, "", None
    return new


def schedule_reports(con, result: TuneResult, opts: TuneOptions) -> list[dict[str, Any]]:
    """The JSON ``schedules`` entries: per recommended schedule its prediction and, per load, the measured arm
    against the predicted static depth and the best measured fixed depth of the method (analysis.schedule.
    measured_gain: the recommending rule applied to the measured arm)."""
    m = get_metric(opts.metric)
    out = []
    for p in result.proposals:
        if not p.doc:
            continue
        gpu, family, model, workload = p.where
        doc, static_depth = p.doc, p.doc["static"]["depth"]
        groups = [g for g in result.groups if _where(g) == p.where]
        loads, arm_v, static_v, arm_r, static_r = [], [], [], [], []
        for g in sorted(groups, key=lambda g: g.key[4] or 0):
            fixed = {k.depth: k for k in g.cells.values() if k.method == doc["method"] and mode_of(k) == "fixed"
                     and k.cell_id in result.latest}
            arm = p.arms.get(g.key)
            keys = [k for k in (arm, *fixed.values()) if k is not None and k.cell_id in result.latest]
            values, reps = (_read_decision_inputs(con, m, result.latest, keys) if keys
                            else (np.zeros(0), np.zeros((0, 0))))
            by_id = {k.cell_id: i for i, k in enumerate(keys)}
            depths = sorted(fixed, key=lambda d: -values[by_id[fixed[d].cell_id]] if m.higher_is_better
                            else values[by_id[fixed[d].cell_id]])
            best = depths[0] if depths else None
            a = by_id.get(arm.cell_id) if arm is not None else None
            s = by_id.get(fixed[static_depth].cell_id) if static_depth in fixed else None
            loads.append({"concurrency": g.key[4], "value": _num(values[a]) if a is not None else None,
                          "requests": result.requests_so_far.get(arm.cell_id, 0) if arm is not None else 0,
                          "static": {"depth": static_depth, "value": _num(values[s]) if s is not None else None},
                          "best_fixed": {"depth": best,
                                         "value": _num(values[by_id[fixed[best].cell_id]]) if best else None},
                          "picked": bool(g.result and g.result.get("pick") and arm is not None
                                         and g.result["pick"]["mode"] == "schedule"
                                         and g.result["pick"]["method"] == arm.method
                                         and g.result["pick"]["schedule"] == [list(x) for x in arm.schedule])})
            if a is not None and s is not None:
                arm_v.append(values[a])
                static_v.append(values[s])
                if reps.size:
                    arm_r.append(reps[a])
                    static_r.append(reps[s])
        complete = len(arm_v) == len(groups) and len(groups) > 0
        gain = schedule_rule.measured_gain(
            np.array(arm_v if complete else []), np.array(static_v), np.array(arm_r), np.array(static_r), m)
        out.append({"gpu": gpu, "family": family, "model": model, "workload": workload, "method": doc["method"],
                    "schedule": doc["schedule"], "predicted_after_round": p.round, "raced": bool(p.arms),
                    "note": p.note or None,
                    "predicted": {"gain_pct": doc["gain_vs_static_pct"], "ci": doc["gain_ci_pct"],
                                  "static_depth": static_depth, "from": "measured fixed cells (analysis.schedule)"},
                    "measured": {"gain_pct": gain["gain_pct"], "ci": gain["ci"], "loads": loads},
                    "verdict": gain["verdict"]})
    return out


def _schedule_step(matrix: Matrix, opts: TuneOptions, groups: list[Group], result: TuneResult,
                   arm_spent: dict[str, float], r: int, end: bool = False) -> Matrix:
    """The round loop's hook for :func:`propose_schedules`: a new arm starts its own share count (its cap)."""
    if not opts.schedules:
        return matrix
    done = result.requests_so_far
    for p in result.proposals:  # an arm still in the race grows until it has had its settled rivals' requests
        for gkey, arm in p.arms.items():
            g = next(x for x in groups if x.key == gkey)
            rivals = max((done.get(k.cell_id, 0) for k in g.cells.values() if k != arm), default=0)
            if g.done and candidate_of(arm) in g.open and done.get(arm.cell_id, 0) < rivals and g.stop != "cap":
                g.done, g.stop = False, ""
    with open_store.session(opts.db, read_only=True) as con:
        matrix = propose_schedules(con, matrix, groups, result, opts, r, end=end)
    for p in result.proposals:
        for k in p.arms.values():
            if k.cell_id not in result.latest:
                arm_spent.setdefault(k.cell_id, 0.0)
    return matrix


def truth_gap(best_value: float, value: float, higher_is_better: bool = True) -> float:
    """How far (%) a pick's true value is behind the world's best (analysis.equivalence.gap_pct)."""
    return gap_pct(best_value, value, higher_is_better)




