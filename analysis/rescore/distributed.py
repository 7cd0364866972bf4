"""Re-scoring a sharded trace on a Ray cluster: each task reduces some files to partial buckets.

Owns ``--ray ADDRESS|auto|local`` for ``analysis rescore``. The files of a trace (a folder or glob, a day
per file) are split into tasks of ``files_per_task`` files (default: spread evenly over the cluster's
CPUs); each task runs :func:`analysis.rescore.reduce.reduce_file` on its files where it lands and sends
back only the partial buckets (kilobytes per file, whatever the file's size). The driver merges them
exactly as a local run does (:func:`analysis.rescore.reduce.merge`), so the document is the same. Every
node must see the files at the same path (a shared file system or the same copy) and import spectune
from the ``ray_pythonpath`` setting (default: this checkout), as the runner's tasks do (docs/cluster.md); a local
cluster has the ``ray_cpus`` setting's CPUs (docs/settings.md).
A bad file's InputError is raised on the driver as that error (same file, line and message).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from analysis.rescore.reduce import FileMap, FilePartial, Grid, ReadSpec, reduce_file
from ingest.errors import InputError
from ingest.settings import Settings
from ingest.settings import load as load_settings

REPO_ROOT = Path(__file__).resolve().parents[2]


def _reduce_files(files: list[str], spec: ReadSpec, grid: Grid | None) -> list[FilePartial] | tuple[str, int, str]:
    """The body of one Ray task: the files' partials, or a bad file's (path, line, message) — InputError's
    constructor does not survive Ray's pickling of exceptions, so it travels as plain values."""
    try:
        return [reduce_file(f, spec, grid) for f in files]
    except InputError as exc:
        return (exc.path, exc.line, exc.message)


def chunks(files: list[Path], per_task: int) -> list[list[str]]:
    return [[str(f) for f in files[i:i + per_task]] for i in range(0, len(files), per_task)]


def _init(address: str, settings: Settings) -> tuple[bool, str | None]:
    import ray

    if ray.is_initialized():
        return False, None
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False,
                              "runtime_env": {"env_vars": {"PYTHONPATH": settings.ray_pythonpath or str(REPO_ROOT)}}}
    if address == "local":
        temp_dir = tempfile.mkdtemp(prefix="st-ray-")  # short: Ray's socket paths must stay under 108 bytes
        cpus = settings.ray_cpus
        ray.init(_temp_dir=temp_dir, **({"num_cpus": cpus} if cpus else {}), **kwargs)
        return True, temp_dir
    ray.init(address=address, **kwargs)
    return True, None


@contextmanager
def ray_session(address: str, settings: Settings | None = None) -> Iterator[None]:
    """Connected to ``address`` (``local``: a throwaway cluster on this machine) for the block; ``settings``
    (default: this process's) give the workers' PYTHONPATH and a local cluster's CPUs."""
    import ray

    started, temp_dir = _init(address, settings if settings is not None else load_settings())
    try:
        yield
    finally:
        if started:
            ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def ray_map(files_per_task: int = 0) -> FileMap:
    """A FileMap that runs reduce_file over the files as Ray tasks (inside :func:`ray_session`)."""

    def run(fn, files: list[Path], spec: ReadSpec, grid: Grid | None) -> list[FilePartial]:
        import ray

        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        per = files_per_task if files_per_task > 0 else max(1, math.ceil(len(files) / cpus))
        task = ray.remote(num_cpus=1, max_retries=1)(_reduce_files)
        refs = [task.remote(chunk, spec, grid) for chunk in chunks(files, per)]
        out: list[FilePartial] = []
        for ref in refs:  # in file order: the merge is order-free, the document's warnings are not
            got = ray.get(ref)
            if isinstance(got, tuple):  # a bad file: its InputError is the driver's error
                raise InputError(*got)
            out.extend(got)
        return out

    return run
