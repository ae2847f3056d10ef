"""N-D element-wise programs (issue 11.3): 3-D and 4-D tensors with leading dims > 1,
whole-tensor ops inside pl.at; FlattenTileNdTo2D makes 2-D tiles and the store writes
the N-D window back. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class ND:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{S}], pl.FP32], b: pl.Tensor[[{S}], pl.FP32],
             o: pl.Out[pl.Tensor[[{S}], pl.FP32]]) -> pl.Tensor[[{S}], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="nd"):
            o[:] = pl.mul(pl.add(a, b), pl.exp(a))
        return o
"""


@pytest.mark.parametrize("shape", [(4, 16, 64), (2, 3, 8, 64)])
def test_nd_elementwise_matches_torch(shape, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = SRC.replace("{S}", ", ".join(map(str, shape)))
    run = ir.compile(pl.parse(src, filename="/u/nd.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(3)
    a, b, o = torch.randn(*shape, generator=g), torch.randn(*shape, generator=g), torch.zeros(*shape)
    run(a, b, o)
    assert torch.allclose(o, (a + b) * a.exp(), rtol=1e-6)


EXPAND = """
import pypto.language as pl

@pl.program
class E:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[{S}, pl.FP32], y: pl.Out[pl.Tensor[[2, 4, 32], pl.FP32]]) -> pl.Tensor[[2, 4, 32], pl.FP32]:
        out: pl.Tensor[[2, 4, 32], pl.FP32] = pl.expand_clone(x, y)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[{S}, pl.FP32], y: pl.Out[pl.Tensor[[2, 4, 32], pl.FP32]]) -> pl.Tensor[[2, 4, 32], pl.FP32]:
        y = self.k(x, y)
        return y
"""


@pytest.mark.parametrize("shape", [[1, 4, 32], [2, 1, 32], [1, 1, 32], [2, 4, 32]])
def test_expand_clone_repeats_the_source_along_its_unit_dims(shape, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(EXPAND.format(S=shape), filename="/u/e.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x, y = torch.randn(*shape), torch.zeros(2, 4, 32)
    run(x, y)
    assert torch.equal(y, x.expand(2, 4, 32))


def test_expand_clone_to_a_shape_it_does_not_broadcast_to_is_a_typed_error():
    from pypto.errors import TypeCheckError
    with pytest.raises(TypeCheckError, match=r"\[3, 4, 32\] does not broadcast to \[2, 4, 32\]"):
        pl.parse(EXPAND.format(S=[3, 4, 32]), filename="/u/e.py")
