"""pl.transpose of a 2-D Vec tile (issue 11.3), whole and partial, against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class Tr:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tr"):
            t = pl.load(x, [0, 0], [32, 64])
            y = pl.store(pl.transpose(t, axis1=0, axis2=1), [0, 0], y)
            p = pl.load(x, [0, 0], [32, 64], valid_shape=[24, 40])
            z = pl.store(pl.tile.transpose(p, axis1=1, axis2=0), [0, 0], z)
        return y
"""


def test_transpose_matches_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/tr.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randn(32, 64)
    y, z = torch.zeros(64, 32), torch.full((64, 32), 5.0)
    run(x, y, z)
    assert torch.equal(y, x.T)
    assert torch.equal(z[:40, :24], x[:24, :40].T) and (z[40:] == 5.0).all() and (z[:, 24:] == 5.0).all()


def test_bad_axes_and_3d():
    with pytest.raises(TypeCheckError, match=r"two different dims \(for a 2-D tile, 0 and 1\)"):
        pl.parse(SRC.replace("axis1=0, axis2=1", "axis1=0, axis2=0"), filename="/u/tr.py")


BATCHED = """
import pypto.language as pl

@pl.program
class Batched:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[{B}, {R}, {C}], pl.{D}], out: pl.Out[pl.Tensor[[{B}, {C}, {R}], pl.{D}]]):
        t = pl.load(x, [0, 0, 0], [{B}, {R}, {C}])
        out = pl.store(pl.transpose(t, axis1={A1}, axis2={A2}), [0, 0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{B}, {R}, {C}], pl.{D}], out: pl.Out[pl.Tensor[[{B}, {C}, {R}], pl.{D}]]):
        out = self.k(x, out)
        return out
"""


@pytest.mark.parametrize("b, r, c, d, axes", [(4, 24, 8, "FP32", (1, 2)), (3, 16, 32, "FP16", (-1, -2)),
                                              (2, 8, 16, "INT32", (2, 1))])
def test_the_last_two_dims_of_a_3d_tile_swap_batch_by_batch(b, r, c, d, axes, tmp_path, monkeypatch):
    """FlattenTileNdTo2D transposes each [R, C] page (a 2-D ttrans) into its window."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = BATCHED.format(B=b, R=r, C=c, D=d, A1=axes[0], A2=axes[1])
    run = ir.compile(pl.parse(src, filename="/u/b.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    tdt = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32}[d]
    x = (torch.randn(b, r, c) * 50).to(tdt)
    out = torch.zeros(b, c, r, dtype=tdt)
    run(x, out)
    assert torch.equal(out, x.transpose(1, 2))
    assert (tmp_path / "out" / "ptoas" / "k.pto").read_text().count("pto.ttrans") == b


def test_swapping_a_batch_dim_is_refused_as_not_built():
    from pypto.errors import NotBuiltError
    with pytest.raises(NotBuiltError, match=r"swapping dims \[0, 2\] of a rank-3 tile"):
        pl.parse(BATCHED.format(B=2, R=8, C=8, D="FP32", A1=0, A2=2), filename="/u/b.py")


TENSOR = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[{S}, pl.FP32], y: pl.Out[pl.Tensor[{T}, pl.FP32]]) -> pl.Tensor[{T}, pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.exp(pl.transpose(x, {A}))
        return y
"""


@pytest.mark.parametrize("s, t, axes", [([16, 64], [64, 16], "0, 1"), ([2, 8, 16], [2, 16, 8], "1, 2")])
def test_transpose_of_a_tensor_in_a_kernel(s, t, axes, tmp_path, monkeypatch):
    """pl.transpose on a tensor inside pl.at: its tile transposed."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(TENSOR.format(S=s, T=t, A=axes), filename="/u/t.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    x, y = torch.randn(*s), torch.zeros(*t)
    run(x, y)
    assert torch.allclose(y, x.transpose(-1, -2).exp())
