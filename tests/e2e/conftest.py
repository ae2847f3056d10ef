import pytest


@pytest.fixture
def iso(tmp_path, monkeypatch):
    """A private store and build base for one test."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.delenv("PYPTO_CACHE_DISABLE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path
