"""A pl.at name_hint equal to its function's own name (the reference's examples do it):
the kernel gets the suffixed name; two regions with one hint stay an error."""
from __future__ import annotations

import torch


def test_region_named_like_its_jit_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from hint_jit import scale_rows
    from pypto.runtime import RunConfig
    a, out = torch.randn(32, 64), torch.zeros(32, 64)
    scale_rows(a, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, a * a)
