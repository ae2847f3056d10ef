"""A HOST-level compile is one build graph (issue 13.2): the distinct device programs
build side by side -- ranks with identical programs share one -- and the host plan is a
task of the same graph (the `host` stage, reading each program's compiled_meta.json);
everything is cached like any other compile."""
from __future__ import annotations

import json

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.jit.host import HostProgramError
from pypto.runtime import RunConfig

R, C = 4, 16


@pl.jit.incore
def offset_kernel(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]], k):
    y = pl.store(pl.adds(pl.load(x, [0, 0], [R, C]), k), [0, 0], y)
    return y


@pl.jit
def shifted(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]], k):
    return offset_kernel(x, y, k)              # k specializes it: a program per distinct k


@pl.jit.host
def shift_all(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for r in pl.range(pld.world_size()):
        shifted(x[r], y[r], r % 2, device=r)   # ranks 0, 2 alike; 1, 3 alike


def _cfg(tmp_path, name):
    return RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / name),
                     distributed_config=DistributedConfig(device_ids=[0, 1, 2, 3]))


def _tasks(out):
    return json.loads((out / "report" / "tasks.json").read_text())


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


def test_the_rank_programs_and_the_host_plan_are_one_build(tmp_path):
    x, y = torch.randn(4, R, C), torch.zeros(4, R, C)
    compiled = shift_all.compile(x, y, config=_cfg(tmp_path, "out"))
    compiled(x, y)
    torch.testing.assert_close(y, x + torch.tensor([0.0, 1.0, 0.0, 1.0]).view(4, 1, 1))
    out = tmp_path / "out"
    tasks = _tasks(out)
    # two distinct programs for four ranks, both in the one report, and the host plan
    kernels = sorted(t["name"].split(":")[1] for t in tasks if t["stage"] == "kernel")
    assert kernels == ["shifted", "shifted_1"]
    host = [t for t in tasks if t["stage"] == "host"]
    assert [(t["name"], t["status"]) for t in host] == [("host:shift_all", "ran")]
    # what the two programs share (the same keys: the kernel before k is known) is built
    # once, by one program, and taken from the store by the other in the same build
    status = {t["name"]: t["status"] for t in tasks}
    shared = [n for n, st in status.items() if st == "cached"]
    assert shared and all(st in ("ran", "cached") for st in status.values())
    def twin(n):
        stage, label, *rest = n.split(":")
        return ":".join([stage, "shifted" if label == "shifted_1" else "shifted_1", *rest])
    assert all(status.get(twin(n)) == "ran" for n in shared), shared
    # each program keeps its own directory and report, as if compiled alone
    for d in ("shifted", "shifted_1"):
        own = _tasks(out / "next_levels" / d)
        assert own and all(t["name"].split(":")[1] == d for t in own if t["stage"] != "frontend")
    plan = json.loads((out / "distributed_meta.json").read_text())
    assert [ln["program"] for ln in plan["launches"]] == [0, 1, 0, 1]
    assert plan["programs"][0]["params"] == ["x", "y", "k"] and plan["params"][1]["direction"] == "Out"


def test_a_second_compile_is_served_from_the_store(tmp_path):
    x, y = torch.randn(4, R, C), torch.zeros(4, R, C)
    first = shift_all.compile(x, y, config=_cfg(tmp_path, "a"))
    again = shift_all.compile(x, y, config=_cfg(tmp_path, "b"))
    tasks = _tasks(tmp_path / "b")
    assert [(t["stage"], t["status"]) for t in tasks] == [("host", "cached")]   # the programs: served whole
    assert (tmp_path / "a" / "distributed_meta.json").read_bytes() == \
        (tmp_path / "b" / "distributed_meta.json").read_bytes()
    again(x, y)
    torch.testing.assert_close(y, x + torch.tensor([0.0, 1.0, 0.0, 1.0]).view(4, 1, 1))
    assert first.plan == again.plan


N = 32


@pl.program
class Short:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, a: pl.Tensor[[1, N], pl.FP32],
              out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        t = pl.load(a, [0, 0], [1, N])
        return pl.store(pl.add(t, t), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.twice(a, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, 1, N], pl.FP32], out: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            self.chip(a[r], device=r)            # the output is not passed: the plan refuses it


def test_the_host_plan_task_refuses_a_launch_missing_arguments(tmp_path):
    with pytest.raises(HostProgramError, match=r"test_host_graph.py:\d+: chip is launched with 1 arguments"):
        ir.compile(Short, output_dir=tmp_path / "out", platform="a2a3sim",
                   distributed_config=DistributedConfig(device_ids=[0, 1]))
    assert not (tmp_path / "out" / "distributed_meta.json").exists()


NR = pl.dynamic("NR")


@pl.program
class AnyRanks:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, a: pl.Tensor[[1, N], pl.FP32],
              out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        t = pl.load(a, [0, 0], [1, N])
        return pl.store(pl.add(t, t), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.twice(a, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[NR, 1, N], pl.FP32], out: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            self.chip(a[r], out[r], device=r)


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_dynamic_leading_dim_of_the_class_form_is_the_rank_count(tmp_path, ranks):
    compiled = ir.compile(AnyRanks, output_dir=tmp_path / "out", platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=list(range(ranks))))
    assert compiled.params[0]["shape"] == [ranks, 1, N]
    a, out = torch.randn(ranks, 1, N), torch.zeros(ranks, 1, N)
    compiled(a, out)
    torch.testing.assert_close(out, 2 * a)
    with pytest.raises(TypeError, match=r"expects shape \[%d, 1, %d\]" % (ranks, N)):
        compiled(torch.randn(ranks + 1, 1, N), torch.zeros(ranks + 1, 1, N))
