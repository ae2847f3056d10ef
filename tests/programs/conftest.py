import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for p in (str(REPO), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)


@pytest.fixture(scope="session", autouse=True)
def _private_store(tmp_path_factory):
    """One content-addressed store and build base per test process: compiles are shared
    by the tests of a module (and by repeated programs), never with the user's cache."""
    base = tmp_path_factory.mktemp("programs")
    saved = {k: os.environ.get(k) for k in ("PYPTO_CACHE_DIR", "PYPTO_PROG_BUILD_DIR", "PYPTO_CACHE_DISABLE")}
    os.environ["PYPTO_CACHE_DIR"] = str(base / "store")
    os.environ["PYPTO_PROG_BUILD_DIR"] = str(base / "builds")
    os.environ.pop("PYPTO_CACHE_DISABLE", None)
    yield base
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
