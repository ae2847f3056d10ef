"""The class form of the HOST level (issue 13.1, 13.4): a @pl.program whose HOST
orchestrator launches its Orchestration on ranks and calls HOST SubWorkers -- concrete
ones run as written, `...` ones are callbacks bound at prepare(callbacks=...) -- compiled
by ir.compile(..., distributed_config=...)."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from pypto.runtime import DistributedWorker

N = 64
SEEN = []                  # what the concrete SubWorker saw (it runs in this process)


@pl.program
class Pipeline:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, a: pl.Tensor[[1, N], pl.FP32],
              out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        t = pl.load(a, [0, 0], [1, N])
        return pl.store(pl.add(t, t), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.twice(a, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def record(out: pl.Tensor[[2, 1, N], pl.FP32]):
        SEEN.append(out.clone())

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def check(out: pl.Tensor[[2, 1, N], pl.FP32]):
        """A callback bound when the program is prepared."""
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, 1, N], pl.FP32], out: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            self.chip(a[r], out[r], device=r)
        self.record(out)                     # after both ranks wrote their rows
        self.check(out)


def _compile(tmp_path, name="out"):
    return ir.compile(Pipeline, output_dir=tmp_path / name, platform="a2a3sim",
                      distributed_config=DistributedConfig(device_ids=[0, 1]))


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    SEEN.clear()


def test_sub_workers_run_on_the_host_after_the_launches_before_them(tmp_path):
    compiled = _compile(tmp_path)
    assert isinstance(compiled, DistributedCompiledProgram)
    assert Pipeline.get_function("check").requires_runtime_binding
    assert not Pipeline.get_function("record").requires_runtime_binding
    plan = compiled.plan
    assert [c["name"] for c in plan["sub_worker_calls"]] == ["record", "check"]
    assert [c["after"] for c in plan["sub_worker_calls"]] == [2, 2]
    assert sorted(p.name for p in (tmp_path / "out" / "next_levels").iterdir()) == ["chip"]
    a, out = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    checked = []
    with compiled.prepare(callbacks={"check": lambda args: checked.append(args[0].sum().item())}) as rt:
        rt(a, out)
    torch.testing.assert_close(out, a * 2)
    torch.testing.assert_close(SEEN[0], a * 2)               # the concrete one saw the results
    assert checked == [pytest.approx((a * 2).sum().item(), rel=1e-5)]


def test_an_unbound_callback_is_refused_before_anything_runs(tmp_path):
    compiled = _compile(tmp_path)
    a, out = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    with pytest.raises(ValueError, match=r"SubWorkers \['check'\] are runtime-bound callbacks"):
        compiled.prepare()
    with pytest.raises(ValueError, match="bind them with compiled.prepare"):
        compiled(a, out)
    with pytest.raises(ValueError, match=r"callbacks names \['nope'\] are not sub-workers"):
        DistributedWorker(compiled, callbacks={"check": lambda args: None, "nope": lambda args: None})
    with pytest.raises(TypeError, match="single positional argument"):
        compiled.prepare(callbacks={"check": lambda: None})
    assert not SEEN


def test_the_host_functions_print_and_parse_back():
    text = Pipeline.as_python()
    assert "def record(out: pl.Tensor[[2, 1, 64], pl.FP32]):" in text and "SEEN.append(out.clone())" in text
    assert pl.parse(text, filename="p.py").as_python() == text


def test_host_program_errors():
    with pytest.raises(E.ParserError, match="takes no `self`"):
        @pl.program
        class SelfSubWorker:
            @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
            def cb(self, x: pl.Tensor[[1, N], pl.FP32]):
                ...
    with pytest.raises(ValueError, match="HOST-level orchestrator"):
        @pl.program
        class NoHost:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[1, N], pl.FP32],
                  out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
                return pl.store(pl.load(a, [0, 0], [1, N]), [0, 0], out)
        ir.compile(NoHost, distributed_config=DistributedConfig(device_ids=[0, 1]))


@pl.program
class AddOnOneSubOnTheOther:
    @pl.function(type=pl.FunctionType.InCore)
    def add_k(self, a: pl.Tensor[[1, N], pl.FP32], b: pl.Tensor[[1, N], pl.FP32],
              out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [1, N]), pl.load(b, [0, 0], [1, N])), [0, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def sub_k(self, a: pl.Tensor[[1, N], pl.FP32], b: pl.Tensor[[1, N], pl.FP32],
              out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return pl.store(pl.sub(pl.load(a, [0, 0], [1, N]), pl.load(b, [0, 0], [1, N])), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def add_orch(self, a: pl.Tensor[[1, N], pl.FP32], b: pl.Tensor[[1, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.add_k(a, b, out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def sub_orch(self, a: pl.Tensor[[1, N], pl.FP32], b: pl.Tensor[[1, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.sub_k(a, b, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, 1, N], pl.FP32], b: pl.Tensor[[2, 1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]]):
        scratch = pld.alloc_window_buffer(256)                  # (bytes: an opaque buffer)
        self.add_orch(a[0], b[0], out[0], device=0)
        self.sub_orch(a[1], b[1], out[1], device=1)


def test_each_orchestration_is_a_program_of_its_own(tmp_path):
    compiled = ir.compile(AddOnOneSubOnTheOther, output_dir=tmp_path / "out", platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1]))
    assert sorted(p.name for p in (tmp_path / "out" / "next_levels").iterdir()) == ["add_orch", "sub_orch"]
    assert compiled.plan["windows"][0]["name"] == "scratch" and compiled.plan["windows"][0]["nbytes"] == 256
    a, b, out = torch.randn(2, 1, N), torch.randn(2, 1, N), torch.zeros(2, 1, N)
    compiled(a, b, out)
    torch.testing.assert_close(out, torch.stack([a[0] + b[0], a[1] - b[1]]))
