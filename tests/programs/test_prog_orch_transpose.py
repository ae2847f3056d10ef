"""pl.transpose in an orchestration: a strided view of the tensor with two dims swapped
(no data moved); kernels read it through its strides, and a kernel reading the view waits
for the kernel that wrote the tensor."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

R = {R}
C = {C}
M = pl.dynamic("M")
N = pl.dynamic("N")

@pl.program
class T:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
              ) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(a, [0, 0], [R, C])
        return pl.store(pl.muls(t, 2.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
            c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        x = pl.load(a, [0, 0], [C, R])
        y = pl.load(b, [0, 0], [C, R])
        return pl.store(pl.add(x, y), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        s = pl.create_tensor([R, C], dtype=pl.FP32)
        s = self.scale(a, s)
        s_t: pl.Tensor[[C, R], pl.FP32] = pl.transpose(s, axis1=0, axis2=1)
        b_t = pl.transpose(b, axis1=1, axis2=0)
        c = self.add(s_t, b_t, c)
        return c
"""


@pytest.mark.parametrize("r, c", [(16, 32), (32, 64)])
def test_kernels_read_the_transposed_view(r, c, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(R=r, C=c), filename="/u/t.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    torch.manual_seed(r)
    a, b = torch.randn(r, c), torch.randn(r, c)
    out = torch.zeros(c, r)
    run(a, b, out)
    # the scaled tensor is written by the first kernel, read transposed by the second
    assert torch.allclose(out, (2 * a).T + b.T)
    pto = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.cpp") if "orchestration" in str(p))
    assert "api->transpose(api->ctx" in pto


def test_a_transposed_annotation_must_match_a_static_shape():
    src = """
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[32, 16], pl.FP32]:
        t: pl.Tensor[[16, 32], pl.FP32] = pl.transpose(a, axis1=0, axis2=1)
        return t
"""
    with pytest.raises(TypeCheckError, match=r"annotation of 't' says .*\[16, 32\].* shape \[32, 16\]"):
        pl.parse(src, filename="/u/s.py")


def test_a_column_window_is_read_through_its_strides(tmp_path, monkeypatch):
    """An orchestration slice of columns is a strided window: the kernel reads the window's
    elements, not the next ones in memory."""
    src = """
import pypto.language as pl

@pl.program
class W:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
              ) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        return pl.store(pl.muls(t, 3.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
             ) -> pl.Tensor[[16, 64], pl.FP32]:
        w = pl.slice(a, [16, 32], [0, 32])
        o = pl.slice(out, [16, 32], [0, 16])
        o = self.scale(w, o)
        return out
"""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/w.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    run(a, out)
    want = torch.zeros(16, 64)
    want[:, 16:48] = 3 * a[:, 32:]
    assert torch.equal(out, want)
