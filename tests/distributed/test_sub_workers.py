"""SubWorker calls run on the host's sub-workers (issue 13.4): DistributedConfig's
num_sub_workers threads (at least one per declared SubWorker). Calls at one point of the
plan whose tensors do not overlap run side by side; a call waits for earlier ones that
touch its bytes."""
from __future__ import annotations

import threading
import time

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig

N = 32


@pl.program
class Halves:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, a: pl.Tensor[[1, N], pl.FP32],
            out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return pl.store(pl.adds(pl.load(a, [0, 0], [1, N]), 1.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.inc(a, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def visit(t: pl.Tensor[[1, N], pl.FP32]):
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, 1, N], pl.FP32], out: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            self.chip(a[r], out[r], device=r)
        self.visit(out[0])                   # the two halves: disjoint bytes
        self.visit(out[1])
        self.visit(out[1])                   # the same half again: after the one before


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


class Visits:
    """Each visit adds 10 to its half; the first two wait (briefly) to meet each other."""

    def __init__(self):
        self.lock, self.now, self.most, self.threads = threading.Lock(), 0, 0, set()
        self.met = threading.Barrier(2)
        self.n = 0

    def __call__(self, args):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.threads.add(threading.current_thread().name)
            self.n += 1
            first_two = self.n <= 2
        if first_two:
            try:
                self.met.wait(timeout=2)
            except threading.BrokenBarrierError:
                pass
        time.sleep(0.05)
        args[0].add_(10.0)
        with self.lock:
            self.now -= 1


@pytest.mark.parametrize("subs, most", [(2, 2), (0, 1)])
def test_independent_calls_share_the_sub_workers(tmp_path, subs, most):
    compiled = ir.compile(Halves, output_dir=tmp_path / "out", platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1], num_sub_workers=subs))
    a, out = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    visits = Visits()
    with compiled.prepare(callbacks={"visit": visits}) as rt:
        rt(a, out)
    # every call ran once, on the sub-workers, in order where they overlap
    torch.testing.assert_close(out, a + 1 + torch.tensor([10.0, 20.0]).view(2, 1, 1))
    assert visits.most == most
    assert all(t.startswith("pypto-subworker") for t in visits.threads)
