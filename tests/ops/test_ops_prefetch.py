"""pl.prefetch (issue 11.1): a kernel starts an async GM -> L2 prefetch, takes the
session of its context and waits for the event. The handles are opaque values of the
language; the ops lower to the PTO prefetch family, the kernel gets a hidden SDMA
workspace argument and the runtime gives each vector core one. The prefetch changes no
value: every program here is checked against torch on the simulator."""
from __future__ import annotations

import json

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import MisplacedTensorOpError, TypeCheckError
from pypto.ptoas import PtoasError, compile_pto

SRC = """
import pypto.language as pl

@pl.program
class Pf:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, w: pl.Tensor[[1, 4096], pl.FP32], x: pl.Tensor[[16, 64], pl.FP32],
          o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(w, ctx)
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.exp(t)
        session = pl.prefetch.session(ctx)
        done = pl.prefetch.wait(evt, session)
        if done:
            o = pl.store(pl.add(y, t), [0, 0], o)
        else:
            o = pl.store(t, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[1, 4096], pl.FP32], x: pl.Tensor[[16, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = self.k(w, x, o)
        return o
"""


def _compile(src, tmp_path, monkeypatch, platform="a2a3sim"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename="/u/pf.py"), output_dir=tmp_path / "out", platform=platform)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_prefetch_then_compute_matches_torch(platform, tmp_path, monkeypatch):
    run = _compile(SRC, tmp_path, monkeypatch, platform)
    w, x, o = torch.randn(1, 4096), torch.randn(16, 64), torch.zeros(16, 64)
    w0 = w.clone()
    run(w, x, o)
    assert torch.allclose(o, torch.exp(x) + x, rtol=1e-5, atol=1e-5)   # (done was true)
    assert torch.equal(w, w0)                                            # a hint: no value changes
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    sig = next(line for line in pto.splitlines() if "func.func @k(" in line)
    assert sig.rstrip().endswith("%__pypto_sdma_workspace: !pto.ptr<i8>) attributes "
                                 "{pto.kernel_kind = #pto.kernel_kind<vector>} {")
    for form in ("= pto.make_prefetch_async_context(%__pypto_sdma_workspace : !pto.ptr<i8>) -> "
                 "!pto.prefetch_async_context",
                 ": !pto.partition_tensor_view<1x4096xf32>, !pto.prefetch_async_context) -> !pto.async_event",
                 "= pto.get_prefetch_async_session %ctx : !pto.prefetch_async_context -> !pto.async_session",
                 ": !pto.async_event, !pto.async_session) -> i1"):
        assert form in pto


def test_the_dump_parses_back_with_the_handle_types(tmp_path, monkeypatch):
    prog = pl.parse(SRC, filename="/u/pf.py")
    text = prog.as_python()
    assert "ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()" in text
    assert "evt: pl.AsyncEvent = pl.prefetch.async_prefetch(w, ctx)" in text
    assert "session: pl.AsyncSession = pl.prefetch.session(ctx)" in text
    again = pl.parse(text, filename="/u/pf_dump.py")
    ir.assert_structural_equal(prog, again)


def test_each_block_of_an_spmd_launch_prefetches_on_its_own_workspace(tmp_path, monkeypatch):
    src = """
import pypto.language as pl

@pl.program
class PfSpmd:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, w: pl.Tensor[[2048], pl.FP16], x: pl.Tensor[[64, 64], pl.FP32],
          o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        ctx = pl.prefetch.make_context()
        first = pl.prefetch.async_prefetch(w, ctx)
        second = pl.prefetch.async_prefetch(w, ctx)
        session = pl.prefetch.session(ctx)
        pl.prefetch.wait(second, session)
        pl.prefetch.wait(first, session)
        b = pl.tile.get_block_idx()
        t = pl.load(x, [b * 16, 0], [16, 64])
        o = pl.store(pl.muls(t, 2.0), [b * 16, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[2048], pl.FP16], x: pl.Tensor[[64, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.spmd(4):
            o = self.k(w, x, o)
        return o
"""
    run = _compile(src, tmp_path, monkeypatch)
    x, o = torch.randn(64, 64), torch.zeros(64, 64)
    run(torch.randn(2048).half(), x, o)
    assert torch.equal(o, x * 2)
    info = (tmp_path / "out").rglob("*.cpp")
    text = "".join(p.read_text() for p in info if p.name.startswith("k"))
    assert '\\"sdma\\":true' in text


def test_in_a_mixed_kernel_the_prefetch_runs_on_the_vector_core(tmp_path, monkeypatch):
    src = """
import pypto.language as pl

@pl.program
class PfMixed:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, w: pl.Tensor[[1, 1024], pl.FP32], a: pl.Tensor[[32, 32], pl.FP16],
          b: pl.Tensor[[32, 32], pl.FP16], o: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(w, ctx)
        la = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c = pl.matmul(la, rb)
        pl.prefetch.wait(evt, pl.prefetch.session(ctx))
        v = pl.move(c, target_memory=pl.Mem.Vec)
        o = pl.store(pl.relu(v), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[1, 1024], pl.FP32], a: pl.Tensor[[32, 32], pl.FP16],
             b: pl.Tensor[[32, 32], pl.FP16], o: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        o = self.k(w, a, b, o)
        return o
"""
    run = _compile(src, tmp_path, monkeypatch)
    a, b, o = torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(32, 32)
    run(torch.randn(1, 1024), a, b, o)
    assert torch.allclose(o, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    aic = pto[pto.index("func.func @k_aic("):pto.index("func.func @k_aiv(")]
    aiv = pto[pto.index("func.func @k_aiv("):]
    assert "prefetch" not in aic and "sdma" not in aic
    assert "pto.tprefetch_async" in aiv and "%__pypto_sdma_workspace: !pto.ptr<i8>" in aiv


@pytest.mark.parametrize("old, new, match, line", [
    ("async_prefetch(w, ctx)", "async_prefetch(x, ctx)",
     r"flat contiguous region: every dim but the last must be 1, got Tensor\[16, 64\]", 10),
    ("async_prefetch(w, ctx)", "async_prefetch(w, w)", r"takes a pl.PrefetchAsyncContext", 10),
    ("wait(evt, session)", "wait(session, session)", r"prefetch.wait takes a pl.AsyncEvent", 14),
])
def test_wrong_operands_are_typed_errors_at_the_line(old, new, match, line):
    with pytest.raises(TypeCheckError, match=match) as e:
        pl.parse(SRC.replace(old, new, 1), filename="/u/pf.py")
    assert e.value.span.line == line


def test_a_dynamic_source_is_refused():
    src = SRC.replace("w: pl.Tensor[[1, 4096], pl.FP32], x", "w: pl.Tensor[[1, pl.dynamic(\"N\")], pl.FP32], x", 1)
    with pytest.raises(TypeCheckError, match=r"needs a static shape"):
        pl.parse(src, filename="/u/pf.py")


def test_prefetch_in_an_orchestration_body_is_misplaced():
    src = SRC.replace("        o = self.k(w, x, o)\n", "        ctx = pl.prefetch.make_context()\n        o = self.k(w, x, o)\n")
    with pytest.raises(MisplacedTensorOpError, match=r"pl.prefetch.make_context"):
        pl.parse(src, filename="/u/pf.py")


def test_ptoas_checks_the_prefetch_forms(tmp_path):
    good = """module attributes {pto.target_arch = "a2a3"} {
  func.func @k(%arg0: !pto.ptr<f32>, %__pypto_sdma_workspace: !pto.ptr<i8>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %v = pto.make_tensor_view %arg0, shape = [%c4, %c256], strides = [%c256, %c1] {layout = #pto.layout<nd>} : !pto.tensor_view<?x?xf32>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [SIZES] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<PARTxf32>
    %ctx = pto.make_prefetch_async_context(%__pypto_sdma_workspace : !pto.ptr<i8>) -> !pto.prefetch_async_context
    %e = pto.tprefetch_async(%p, %ctx : !pto.partition_tensor_view<PARTxf32>, !pto.prefetch_async_context) -> !pto.async_event
    %s = pto.get_prefetch_async_session %ctx : !pto.prefetch_async_context -> !pto.async_session
    %d = pto.comm.wait_async_event(%e, %s : !pto.async_event, !pto.async_session) -> i1
    return
  }
}
"""
    ok = compile_pto(good.replace("SIZES", "%c1, %c256").replace("PART", "1x256"), arch="a2a3")
    assert "pto::tprefetch_async(" in ok.cpp and '\\"sdma\\":true' in ok.cpp
    with pytest.raises(PtoasError, match=r"static flat region"):
        compile_pto(good.replace("SIZES", "%c4, %c256").replace("PART", "4x256"), arch="a2a3")
    with pytest.raises(PtoasError, match=r"comm.wait_async_event takes"):
        compile_pto(good.replace("SIZES", "%c1, %c256").replace("PART", "1x256")
                    .replace("(%e, %s : !pto.async_event, !pto.async_session)",
                             "(%s, %e : !pto.async_session, !pto.async_event)"), arch="a2a3")


@pl.jit
def _prefetch_then_exp(w: pl.Tensor[[1, 2048], pl.FP32], x: pl.Tensor[[32, 64], pl.FP32],
                       y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(w, ctx)
        for i in pl.range(2):                    # a handle used inside a loop, a wait after it
            y[i * 16:(i + 1) * 16, :] = pl.exp(x[i * 16:(i + 1) * 16, :])
        pl.prefetch.wait(evt, pl.prefetch.session(ctx))
    return y


def test_a_prefetch_in_a_jit_region(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    _prefetch_then_exp(torch.randn(1, 2048), x, y)
    assert torch.allclose(y, torch.exp(x))
