"""Fixtures of the build-graph tests: a private store per test, and seed stores built
once per session (shared by the xdist workers through a lock) so only the tests that
need a cold compile pay for one."""
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from graph_helpers import compile_in_subprocess, copy_store, write_program


@pytest.fixture
def iso(tmp_path, monkeypatch):
    """A private, empty store and build base for one test (also for in-process compiles)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.delenv("PYPTO_CACHE_DISABLE", raising=False)
    monkeypatch.delenv("PYPTO_JOBS", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@dataclass(frozen=True)
class Seed:
    n: int
    prog: Path        # the program file
    out: Path         # its cold compile (PYPTO_JOBS=2): the reference artifacts
    store: Path       # the store that compile filled (never written by tests: copy it)

    def store_copy(self, dst: Path) -> Path:
        return copy_store(self.store, dst)


def _shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _seed(tmp_path_factory, n: int) -> Seed:
    d = _shared_root(tmp_path_factory) / f"graph_seed_{n}"
    d.mkdir(parents=True, exist_ok=True)
    seed = Seed(n, d / "prog.py", d / "out", d / "store")
    with open(d / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (d / "done").exists():
            write_program(seed.prog, n)
            compile_in_subprocess(seed.prog, seed.out, seed.store, PYPTO_JOBS=2)
            (d / "done").write_text("ok\n")
    return seed


@pytest.fixture(scope="session")
def seed8(tmp_path_factory) -> Seed:
    """The 8-kernel program compiled cold once."""
    return _seed(tmp_path_factory, 8)


@pytest.fixture(scope="session")
def seed2(tmp_path_factory) -> Seed:
    """A 2-kernel program compiled cold once (for the tests that need many compiles)."""
    return _seed(tmp_path_factory, 2)
