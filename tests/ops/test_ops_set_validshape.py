"""pl.set_validshape on tensors and tiles, pl.fillpad on tensors (issue 11.1): the same
data of which only the leading rows x cols hold values; reads read that part (loads with a
valid shape), element-wise results keep it, stores and assembles write it, pl.fillpad pads
the rest. A tensor type carries it as pl.TensorView(valid_shape=...). On the simulator
against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, TypeCheckError

PAD = """
import pypto.language as pl

@pl.program
class Pad:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.{DT}],
             o: pl.Out[pl.Tensor[[64, 64], pl.{DT}]]) -> pl.Tensor[[64, 64], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="pad"):
            narrowed = pl.set_validshape(x, {R}, {C})
            o = pl.assemble(o, pl.fillpad(narrowed, pad_value=pl.PadValue.{PAD}), [0, 0])
        return o
"""


@pytest.mark.parametrize("pad, fill", [("zero", 0.0), ("max", float("inf")), ("min", float("-inf"))])
@pytest.mark.parametrize("rows, cols", [(48, 56), (64, 8), (1, 64)])
def test_a_narrowed_tensor_padded(pad, fill, rows, cols, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = PAD.format(DT="FP32", R=rows, C=cols, PAD=pad)
    run = ir.compile(pl.parse(src, filename="/u/pad.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x, o = torch.randn(64, 64), torch.zeros(64, 64)
    run(x, o)
    want = torch.full((64, 64), fill)
    want[:rows, :cols] = x[:rows, :cols]
    assert torch.equal(o, want)


NARROW = """
import pypto.language as pl

@pl.program
class Narrow:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[16, 8], pl.FP32], other: pl.Tensor[[16, 8], pl.FP32],
             out: pl.InOut[pl.Tensor[[64, 32], pl.FP32]],
             small: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="narrow"):
            a = pl.set_validshape(src, 16, 4)
            b = pl.set_validshape(other, 16, 4)
            out[8:24, 0:4] = a
            small = pl.assemble(small, pl.add(pl.muls(a, 2.0), b), [0, 0])
        return out
"""


def test_only_the_valid_part_is_written_and_results_keep_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(NARROW, filename="/u/narrow.py")
    assert "pl.TensorView(valid_shape=[16, 4])" in prog.as_python()
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    src, other = torch.randn(16, 8), torch.randn(16, 8)
    out, small = torch.full((64, 32), 5.0), torch.zeros(16, 4)
    run(src, other, out, small)
    want = torch.full((64, 32), 5.0)
    want[8:24, 0:4] = src[:, :4]
    assert torch.equal(out, want)
    assert torch.allclose(small, src[:, :4] * 2 + other[:, :4])


TILE = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="t"):
            t = pl.load(x, [0, 0], [32, 64])
            n = pl.tile.set_validshape(t, 20, 24)
            o = pl.store(pl.fillpad(pl.exp(n), pad_value=pl.PadValue.zero), [0, 0], o)
        return o
"""


def test_a_narrowed_tile(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(TILE, filename="/u/t.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x, o = torch.randn(32, 64), torch.ones(32, 64)
    run(x, o)
    want = torch.zeros(32, 64)
    want[:20, :24] = x[:20, :24].exp()
    assert torch.allclose(o, want)


def test_valid_extents_outside_the_shape_are_typed_errors():
    with pytest.raises(TypeCheckError, match=r"a valid extent of 80 does not lie inside \[64, 64\]"):
        pl.parse(PAD.format(DT="FP32", R=80, C=8, PAD="zero"), filename="/u/pad.py")


def test_a_reshape_of_a_narrowed_tensor_says_it_is_not_built():
    src = NARROW.replace("small = pl.assemble(small, pl.add(pl.muls(a, 2.0), b), [0, 0])",
                         "r = pl.reshape(a, [8, 16])")
    with pytest.raises(NotBuiltError, match=r"a tensor with a valid shape smaller than the tensor"):
        pl.parse(src, filename="/u/narrow.py")


def test_tensor_view_strides_are_not_built_yet():
    src = PAD.format(DT="FP32", R=8, C=8, PAD="zero").replace(
        "x: pl.Tensor[[64, 64], pl.FP32]", "x: pl.Tensor[[64, 64], pl.FP32, pl.TensorView(stride=[1, 64])]")
    with pytest.raises(NotBuiltError, match=r"pl.TensorView\(stride=...\) is not supported"):
        pl.parse(src, filename="/u/pad.py")


EXPAND = """
import pypto.language as pl

@pl.program
class E:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[48, 64], pl.FP32],
          o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        r: pl.Tensor[[64, 64], pl.FP32] = pl.fillpad_expand(a, [64, 64], pad_value=pl.PadValue.{PAD})
        return pl.assemble(o, r, [0, 0])

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[48, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        return self.k(a, o)
"""


@pytest.mark.parametrize("pad, fill", [("zero", 0.0), ("min", float("-inf"))])
def test_a_tensor_padded_to_a_larger_shape(pad, fill, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(EXPAND.format(PAD=pad), filename="/u/e.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    a, o = torch.randn(48, 64), torch.zeros(64, 64)
    run(a, o)
    want = torch.full((64, 64), fill)
    want[:48] = a
    assert torch.equal(o, want)
