"""pl.sin / pl.cos (issue 11.4): float element-wise, on tiles and on tensors in a kernel
(pto.tsin / pto.tcos), against torch; integer tiles are a typed error."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.{DT}], o: pl.Out[pl.Tensor[[16, 64], pl.{DT}]],
             o2: pl.Out[pl.Tensor[[16, 64], pl.{DT}]]) -> pl.Tensor[[16, 64], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tile_form"):
            o = pl.store(pl.{OP}(pl.load(x, [0, 0], [16, 64])), [0, 0], o)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="tensor_form"):
            o2[:] = pl.{OP}(x)
        return o
"""


@pytest.mark.parametrize("op", ["sin", "cos"])
@pytest.mark.parametrize("dtype, tol", [("FP32", 1e-6), ("FP16", 2e-3)])
def test_trig_matches_torch(op, dtype, tol, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(DT=dtype, OP=op), filename="/u/t.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    tdt = torch.float32 if dtype == "FP32" else torch.float16
    x = (torch.randn(16, 64) * 4).to(tdt)
    o, o2 = torch.zeros(16, 64, dtype=tdt), torch.zeros(16, 64, dtype=tdt)
    run(x, o, o2)
    want = getattr(torch, op)(x.float())
    assert torch.allclose(o.float(), want, atol=tol, rtol=tol) and torch.equal(o, o2)


def test_an_integer_tile_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"sin needs a floating-point operand, got int32"):
        pl.parse(SRC.format(DT="INT32", OP="sin"), filename="/u/t.py")
