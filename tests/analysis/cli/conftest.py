"""Fixtures of the answer-cache tests: a copy of the default store to write to, and the cache on in a temp folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def store_copy(default_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    shutil.copy(default_db, path)
    return path


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    return {"SPECTUNE_CACHE": "on", "SPECTUNE_CACHE_DIR": str(tmp_path / "answers")}
