"""benchmark() of a HOST-level program (issue 13): rounds on one DistributedWorker, each
rank timing its own launches in its own process; per-rank, per-round and per-launch
figures, and the cross-rank union on the shared monotonic clock."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import benchmark

N = 64


@pl.program
class TwoSteps:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, a: pl.Tensor[[4, N], pl.FP32], out: pl.Out[pl.Tensor[[4, N], pl.FP32]]) -> pl.Tensor[[4, N], pl.FP32]:
        return pl.store(pl.adds(pl.load(a, [0, 0], [4, N]), 1.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[4, N], pl.FP32], out: pl.Out[pl.Tensor[[4, N], pl.FP32]]) -> pl.Tensor[[4, N], pl.FP32]:
        return self.inc(a, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, 4, N], pl.FP32], b: pl.InOut[pl.Tensor[[2, 4, N], pl.FP32]],
             c: pl.Out[pl.Tensor[[2, 4, N], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            self.chip(a[r], b[r], device=r)        # two launches per rank and round
            self.chip(b[r], c[r], device=r)


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


def test_a_distributed_benchmark_times_every_rank(tmp_path):
    compiled = ir.compile(TwoSteps, output_dir=tmp_path / "out", platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1]))
    a, b, c = torch.randn(2, 4, N), torch.zeros(2, 4, N), torch.zeros(2, 4, N)
    stats = benchmark(compiled, [a, b, c], rounds=3, warmup=1)
    torch.testing.assert_close(c, a + 2)
    assert len(stats.samples) == 3 and len(stats.device_wall_us) == 3
    dev, host, eff = (stats.per_rank(m) for m in ("device", "host", "effective"))
    assert sorted(dev) == [0, 1] and all(len(v) == 3 for v in dev.values())
    per_launch = stats.per_dispatch("device")
    assert sorted(per_launch) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for r in (0, 1):              # a rank's round: its two launches, summed
        for k in range(3):
            assert dev[r][k] == pytest.approx(per_launch[(r, 0)][k] + per_launch[(r, 1)][k])
            assert 0 < eff[r][k] <= dev[r][k] <= host[r][k]
    for k, u in enumerate(stats.per_round("union")):
        assert u >= max(host[r][k] for r in (0, 1)) - 1e-6
    assert stats.device_wall_us == [max(dev[r][k] for r in (0, 1)) for k in range(3)]
    assert "pid=1 slot=1" in stats.format_mean_tree(pid=1, slot=1)
    with pytest.raises(ValueError, match=r"no config= or worker="):
        benchmark(compiled, [a, b, c], rounds=1, config=object())
