"""Collectives built from the cross-rank primitives, on 2, 3 and 4 ranks, against torch."""
from __future__ import annotations

import pytest
import torch

from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

import collectives as C

N = C.N


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


def _run(host, x, y, ranks, tmp_path):
    cfg = RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / "out"),
                    distributed_config=DistributedConfig(device_ids=list(range(ranks))))
    host(x, y, config=cfg)


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_allreduce(tmp_path, ranks):
    x, y = torch.randn(ranks, 1, N), torch.zeros(ranks, 1, N)
    _run(C.allreduce, x, y, ranks, tmp_path)
    torch.testing.assert_close(y, x.sum(0, keepdim=True).expand(ranks, 1, N), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_allreduce_by_atomic_adds(tmp_path, ranks):
    x, y = torch.randn(ranks, 1, N), torch.zeros(ranks, 1, N)
    _run(C.allreduce_atomic, x, y, ranks, tmp_path)
    torch.testing.assert_close(y, x.sum(0, keepdim=True).expand(ranks, 1, N), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_allgather(tmp_path, ranks):
    x, y = torch.randn(ranks, 1, N), torch.zeros(ranks, ranks, N)
    _run(C.allgather, x, y, ranks, tmp_path)
    torch.testing.assert_close(y, x.reshape(1, ranks, N).expand(ranks, ranks, N))


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_reduce_scatter(tmp_path, ranks):
    x, y = torch.randn(ranks, ranks, N), torch.zeros(ranks, 1, N)
    _run(C.reduce_scatter, x, y, ranks, tmp_path)
    torch.testing.assert_close(y, x.sum(0).reshape(ranks, 1, N), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_broadcast(tmp_path, ranks):
    x, y = torch.randn(ranks, 1, N), torch.zeros(ranks, 1, N)
    _run(C.broadcast, x, y, ranks, tmp_path)
    torch.testing.assert_close(y, x[:1].expand(ranks, 1, N))
