"""pl.matmul(a, b, a_trans=..., b_trans=...) on tensors (issue 11.2): the transposed
operand is read through a DN view of the tensor (pto.make_tensor_view with strides
[1, C]), nothing is copied; on the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError

SRC = """
import pypto.language as pl

@pl.program
class MT:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{AS}], pl.FP32], b: pl.Tensor[[{BS}], pl.FP32],
             c: pl.Out[pl.Tensor[[32, 48], pl.FP32]]) -> pl.Tensor[[32, 48], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="mt"):
            c[:] = pl.matmul(a, b, a_trans={TA}, b_trans={TB}, out_dtype=pl.FP32)
        return c
"""


@pytest.mark.parametrize("ta, tb", [(False, True), (True, False), (True, True)])
def test_transposed_operands_match_torch(ta, tb, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    a_shape = [64, 32] if ta else [32, 64]      # M=32, K=64, N=48
    b_shape = [48, 64] if tb else [64, 48]
    src = (SRC.replace("{AS}", ", ".join(map(str, a_shape))).replace("{BS}", ", ".join(map(str, b_shape)))
           .replace("{TA}", str(ta)).replace("{TB}", str(tb)))
    run = ir.compile(pl.parse(src, filename="/u/mt.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(*a_shape, generator=g), torch.randn(*b_shape, generator=g)
    c = torch.zeros(32, 48)
    run(a, b, c)
    want = (a.T if ta else a) @ (b.T if tb else b)
    assert torch.allclose(c, want, rtol=1e-4, atol=1e-4)
    pto = next((tmp_path / "out" / "ptoas").glob("*.pto")).read_text()
    assert "#pto.layout<dn>" in pto


def test_transpose_of_a_tile_is_not_built_yet():
    src = """
import pypto.language as pl

@pl.program
class MT:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        t = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        l = pl.move(t, target_memory=pl.Mem.Left)
        m = pl.matmul(l, l, b_trans=True)
        return o
"""
    with pytest.raises(NotBuiltError, match=r"b_trans=True on Tile"):
        pl.parse(src, filename="/u/mt.py")


TILE_SRC = """
import pypto.language as pl

@pl.program
class TV:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[48, 64], pl.FP32],
          c: pl.Out[pl.Tensor[[32, 48], pl.FP32]]) -> pl.Tensor[[32, 48], pl.FP32]:
        ta = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [48, 64], target_memory=pl.Mem.Mat)
        tbt = pl.tile.transpose_view(tb)
        acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tbt, target_memory=pl.Mem.Right))
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[48, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[32, 48], pl.FP32]]) -> pl.Tensor[[32, 48], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""


def test_transpose_view_of_a_mat_tile_feeds_the_cube(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(TILE_SRC, filename="/u/tv.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    a, b, c = torch.randn(32, 64), torch.randn(48, 64), torch.zeros(32, 48)
    run(a, b, c)
    assert torch.allclose(c, a @ b.T, rtol=1e-4, atol=1e-4)


SLICED = """
import pypto.language as pl

@pl.program
class KV:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, q: pl.Tensor[[16, 64], pl.FP32], p: pl.Tensor[[16, 48], pl.FP32],
          kv_src: pl.Tensor[[96, 128], pl.FP32], c_qk: pl.Out[pl.Tensor[[16, 48], pl.FP32]],
          c_pv: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> tuple[pl.Tensor[[16, 48], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
        kv = kv_src[{R0}:{R0} + 48, {C0}:{C0} + 64]
        c_qk = pl.assemble(c_qk, pl.matmul(q, kv, b_trans=True, out_dtype=pl.FP32), [0, 0])
        c_pv = pl.assemble(c_pv, pl.matmul(p, kv, out_dtype=pl.FP32), [0, 0])
        return c_qk, c_pv

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, q: pl.Tensor[[16, 64], pl.FP32], p: pl.Tensor[[16, 48], pl.FP32],
             kv_src: pl.Tensor[[96, 128], pl.FP32], c_qk: pl.Out[pl.Tensor[[16, 48], pl.FP32]],
             c_pv: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> tuple[pl.Tensor[[16, 48], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
        c_qk, c_pv = self.k(q, p, kv_src, c_qk, c_pv)
        return c_qk, c_pv
"""


@pytest.mark.parametrize("r0, c0", [(0, 0), (32, 48)])
def test_a_slice_read_transposed_and_as_it_is(r0, c0, tmp_path, monkeypatch):
    """One slice of a tensor feeds q @ kv^T and p @ kv: the transposed read is the window
    of the tensor's DN view at the swapped offsets."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SLICED.format(R0=r0, C0=c0), filename="/u/kv.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(9)
    q, p, src = torch.randn(16, 64, generator=g), torch.randn(16, 48, generator=g), torch.randn(96, 128, generator=g)
    c_qk, c_pv = torch.zeros(16, 48), torch.zeros(16, 64)
    run(q, p, src, c_qk, c_pv)
    kv = src[r0:r0 + 48, c0:c0 + 64]
    assert torch.allclose(c_qk, q @ kv.T, rtol=1e-4, atol=1e-4)
    assert torch.allclose(c_pv, p @ kv, rtol=1e-4, atol=1e-4)
