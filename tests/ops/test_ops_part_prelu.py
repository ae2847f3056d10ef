"""Partial element-wise ops and prelu (issue 11.4): pl.part_add / part_mul / part_max /
part_min work over the first source's valid region, applying the op where the second is
valid too and copying the first elsewhere (pto.tpart*); pl.tile.prelu(x, slope, tmp) keeps
x > 0 and scales the rest by a per-element slope (pto.tprelu). Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

PART = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, s0: pl.Tensor[[16, 16], pl.FP32], s1: pl.Tensor[[16, 16], pl.FP32],
             o: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
             o2: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tile_form"):
            t0 = pl.load(s0, [0, 0], [16, 16])
            t1 = pl.load(s1, [0, 0], [16, 16], valid_shape=[{VR}, {VC}])
            o = pl.store(pl.tile.{OP}(t0, t1), [0, 0], o)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tensor_form"):
            o2[:] = pl.{OP}(s0, s1)
        return o
"""
GOLDEN = {"part_add": torch.add, "part_mul": torch.mul, "part_max": torch.maximum, "part_min": torch.minimum}


@pytest.mark.parametrize("op", sorted(GOLDEN))
@pytest.mark.parametrize("vr, vc", [(16, 16), (16, 8), (8, 16)])
def test_partial_ops(op, vr, vc, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(PART.format(OP=op, VR=vr, VC=vc), filename="/u/p.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    s0, s1 = torch.randn(16, 16), torch.randn(16, 16)
    o, o2 = torch.zeros(16, 16), torch.zeros(16, 16)
    run(s0, s1, o, o2)
    want = s0.clone()
    want[:vr, :vc] = GOLDEN[op](s0[:vr, :vc], s1[:vr, :vc])
    assert torch.allclose(o, want) and torch.allclose(o2, GOLDEN[op](s0, s1))


PRELU = """
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.{DT}], s: pl.Tensor[[16, 64], pl.{DT}],
             o: pl.Out[pl.Tensor[[16, 64], pl.{DT}]]) -> pl.Tensor[[16, 64], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="r"):
            tmp = pl.create_tile([16, 64], dtype=pl.{DT})
            o = pl.store(pl.tile.prelu(pl.load(x, [0, 0], [16, 64]), pl.load(s, [0, 0], [16, 64]), tmp),
                         [0, 0], o)
        return o
"""


@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_prelu(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(PRELU.format(DT=dtype), filename="/u/r.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    tdt = torch.float32 if dtype == "FP32" else torch.float16
    x, s = torch.randn(16, 64).to(tdt), torch.rand(16, 64).to(tdt)
    o = torch.zeros(16, 64, dtype=tdt)
    run(x, s, o)
    assert torch.allclose(o.float(), torch.where(x > 0, x, x * s).float(), atol=1e-3)


def test_prelu_of_integers_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"prelu needs a floating-point operand, got int32"):
        pl.parse(PRELU.format(DT="INT32"), filename="/u/r.py")
