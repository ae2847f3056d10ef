"""Issue 3: `python -m pypto_cache stats|gc` on a store that compiles used, and a @pl.jit
called twice in one process that compiles once and then does not touch the disk."""
import shutil

import pytest
import torch

import pypto.language as pl
from pypto_cache import Store
from pypto.runtime import RunConfig

from graph_helpers import (artifacts, cache_cli, compile_in_subprocess, parse_stats, tasks)


def test_cache_stats_and_gc(seed2, tmp_path):
    store = seed2.store_copy(tmp_path / "store")
    prog = tmp_path / "prog.py"
    shutil.copy(seed2.prog, prog)
    before = parse_stats(cache_cli(store, "stats"))
    compile_in_subprocess(prog, tmp_path / "warm", store)
    stats = parse_stats(cache_cli(store, "stats"))
    for key in ("hits", "misses", "objects", "actions", "bytes"):
        assert key in stats, stats
    assert stats["hits"] > before["hits"], (before, stats)
    assert stats["misses"] > 0 and stats["objects"] > 0 and stats["bytes"] > 1024

    text = cache_cli(store, "gc", "--max-size", "1K", "--grace", "0")
    assert "removed" in text
    after = parse_stats(cache_cli(store, "stats"))
    assert after["bytes"] <= 1024 and after["bytes"] < stats["bytes"], (stats, after)
    assert after["objects"] < stats["objects"]

    compile_in_subprocess(prog, tmp_path / "again", store)
    assert artifacts(tmp_path / "again") == artifacts(seed2.out)
    assert "ran" in {r["status"] for r in tasks(tmp_path / "again")}   # it really rebuilt
    final = parse_stats(cache_cli(store, "stats"))
    assert final["misses"] > after["misses"] and final["objects"] > after["objects"]


@pl.jit
def twice_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64])
        tb = pl.load(b, [0, 0], [64, 64])
        pl.store(pl.add(ta, tb), [0, 0], out)
    return out


def _tree(root):
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def test_jit_called_twice_compiles_once_without_touching_disk(iso, monkeypatch):
    twice_add.cache_clear()
    cfg = RunConfig(platform="a2a3sim")
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)
    out = torch.zeros(64, 64)
    first = twice_add.compile(a, b, out, config=cfg)
    twice_add(a, b, out, config=cfg)
    assert torch.allclose(out, a + b)

    store = Store(iso / "store")
    stats, tree = store.stats(), _tree(iso)

    import pypto_pipeline.driver

    def no_build(*args, **kwargs):
        raise AssertionError("the second call went back to the build graph")
    monkeypatch.setattr(pypto_pipeline.driver, "build", no_build)

    a2, b2 = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)
    assert twice_add.compile(a2, b2, out, config=cfg) is first
    out2 = torch.zeros(64, 64)
    twice_add(a2, b2, out2, config=cfg)
    assert torch.allclose(out2, a2 + b2)
    assert store.stats() == stats
    assert _tree(iso) == tree
