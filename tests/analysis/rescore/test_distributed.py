"""Re-scoring a sharded trace as Ray tasks (analysis.rescore.distributed) on a real local Ray: the same buckets
and the same re-score document as a local run; a bad file's error comes back as that file's InputError."""

from __future__ import annotations

import pytest

from analysis.rescore.core import rescore
from analysis.rescore.distributed import ray_map, ray_session
from analysis.rescore.reduce import ReadSpec, read_buckets, trace_files
from ingest import store
from ingest.errors import InputError
from tests.analysis.rescore.test_reduce import _day_files, assert_same_buckets


def test_ray_tasks_reduce_the_files_and_the_driver_merges_them_as_a_local_run(default_db, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    folder, _whole = _day_files(tmp_path, days=2)
    files = trace_files(str(folder)) or []
    local = read_buckets(str(folder), files, ReadSpec())
    monkeypatch.setenv("SPECTUNE_RAY_CPUS", "2")
    with ray_session("local"):
        import ray

        assert ray.cluster_resources().get("CPU") == 2
        remote = read_buckets(str(folder), files, ReadSpec(), file_map=ray_map(files_per_task=1))  # 2 tasks
        bad = folder / "AzureLLMInferenceTrace_code_day1.csv"
        lines = bad.read_text().splitlines()
        lines[5] = lines[5].rsplit(",", 1)[0] + ",x"
        bad.write_text("\n".join(lines) + "\n")
        with pytest.raises(InputError) as err:
            read_buckets(str(folder), files, ReadSpec(), file_map=ray_map(files_per_task=2))
    assert not ray.is_initialized()
    assert err.value.line == 6 and "expected a whole number" in str(err.value)
    assert_same_buckets(remote.buckets, local.buckets)
    assert remote.meta == local.meta and remote.files == 2
    with store.connect(default_db, read_only=True) as con:
        assert rescore(con, remote.buckets, meta=remote.meta) == rescore(con, local.buckets, meta=local.meta)
