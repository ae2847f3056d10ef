import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pypto_cache import MemoryStore, Store  # noqa: E402


@pytest.fixture(autouse=True)
def _no_real_cache(tmp_path, monkeypatch):
    """Whatever a test does, the user's real cache stays out of reach."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "env-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("PYPTO_CACHE_DISABLE", raising=False)


@pytest.fixture(params=["disk", "memory"])
def store(request, tmp_path):
    return Store(tmp_path / "store") if request.param == "disk" else MemoryStore()


@pytest.fixture
def disk(tmp_path):
    return Store(tmp_path / "store")
