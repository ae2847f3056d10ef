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


CHUNKED = """
import pypto.language as pl
S = pl.dynamic("S")
CHUNK = 16

@pl.program
class Chunked:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[2, S, 64], pl.BF16], out: pl.Out[pl.Tensor[[2, S, 64], pl.FP32]]):
        s = pl.tensor.dim(x, 1)
        for b in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="chunks"):
                for c, (o,) in pl.range(0, s, CHUNK, init_values=(out,)):
                    n = pl.min(CHUNK, s - c)
                    t = pl.load(x, [b, c, 0], [1, CHUNK, 64], valid_shape=[1, n, 64])
                    o = pl.store(pl.cast(t, target_type=pl.FP32), [b, c, 0], o)
                    done = pl.yield_(o)
        return out
"""


@pytest.mark.parametrize("s", [40, 7])
def test_a_3d_window_with_a_run_time_tail_reads_and_writes_its_valid_rows(s, tmp_path, monkeypatch):
    """One artifact for every S: the last chunk's [1, n, 64] valid part survives the
    flattening to a [16, 64] tile (n rows valid, known when the kernel runs)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(CHUNKED, filename="/u/chunked.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim", verification_level="roundtrip")
    x = torch.randn(2, s, 64, generator=torch.Generator().manual_seed(s)).to(torch.bfloat16)
    out = torch.full((2, s, 64), 7.0)
    run(x, out)
    assert torch.equal(out, x.float())


STATIC = """
import pypto.language as pl

@pl.program
class Static:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[2, 16, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, 16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="part"):
            t = pl.load(x, [0, 0, 0], [2, 16, 64], valid_shape={V})
            out = pl.store(pl.exp(t), [0, 0, 0], out)
        return out
"""


@pytest.mark.parametrize("valid", [[1, 16, 64], [1, 16, 32]])
def test_a_static_3d_valid_part_of_whole_rows_flattens(valid, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(STATIC.format(V=valid), filename="/u/static.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim", verification_level="roundtrip")
    x, out = torch.randn(2, 16, 64), torch.full((2, 16, 64), 7.0)
    run(x, out)
    want = torch.full((2, 16, 64), 7.0)
    b, r, c = valid
    want[:b, :r, :c] = x[:b, :r, :c].exp()
    assert torch.allclose(out, want, rtol=1e-6)


def test_a_3d_valid_part_that_is_no_block_of_rows_is_refused():
    import pypto.errors as E
    with pytest.raises(E.NotBuiltError, match=r"not a block of whole rows once its leading dims merge") as e:
        pl.parse(STATIC.format(V=[2, 5, 64]), filename="/u/static.py")
    assert e.value.span.line == 9
