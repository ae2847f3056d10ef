import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

import pytest  # noqa: E402


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A fresh store and call log for the toy stages of pipeline_toys."""
    import pipeline_toys
    from pypto_cache import Store
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PIPELINE_TOY_LOG", str(log))
    return pipeline_toys.Toy(Store(tmp_path / "store"), log, tmp_path)
