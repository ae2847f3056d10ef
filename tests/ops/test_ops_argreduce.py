"""Row/column argmax and argmin (issue 11.5): the int32 index of the first max/min,
fp32 and fp16, whole and partial (valid_shape) tiles, against torch.argmax/argmin."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class A:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.{D}], rmax: pl.Out[pl.Tensor[[32, 1], pl.INT32]],
             rmin: pl.Out[pl.Tensor[[32, 1], pl.INT32]], cmax: pl.Out[pl.Tensor[[1, 64], pl.INT32]],
             cmin: pl.Out[pl.Tensor[[1, 64], pl.INT32]]) -> pl.Tensor[[32, 1], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="arg"):
            t = pl.load(x, [0, 0], [32, 64]{V})
            tmp = pl.tile.create([32, 64], dtype=pl.{D}, target_memory=pl.Mem.Vec)
            rmax = pl.store(pl.tile.row_argmax(t, tmp), [0, 0], rmax)
            rmin = pl.store(pl.tile.row_argmin(t, tmp), [0, 0], rmin)
            cmax = pl.store(pl.tile.col_argmax(t, tmp), [0, 0], cmax)
            cmin = pl.store(pl.tile.col_argmin(t, tmp), [0, 0], cmin)
        return rmax
"""


@pytest.mark.parametrize("d, tdt", [("FP32", torch.float32), ("FP16", torch.float16)])
@pytest.mark.parametrize("valid", [None, (20, 40)])
def test_arg_reductions_match_torch(d, tdt, valid, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    v = f", valid_shape=[{valid[0]}, {valid[1]}]" if valid else ""
    run = ir.compile(pl.parse(SRC.replace("{D}", d).replace("{V}", v), filename="/u/arg.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(1)).to(tdt)
    outs = [torch.full((32, 1), -7, dtype=torch.int32), torch.full((32, 1), -7, dtype=torch.int32),
            torch.full((1, 64), -7, dtype=torch.int32), torch.full((1, 64), -7, dtype=torch.int32)]
    run(x, *outs)
    r, c = valid or (32, 64)
    xv = x[:r, :c].float()
    assert torch.equal(outs[0][:r], xv.argmax(dim=1, keepdim=True).int())
    assert torch.equal(outs[1][:r], xv.argmin(dim=1, keepdim=True).int())
    assert torch.equal(outs[2][:, :c], xv.argmax(dim=0, keepdim=True).int())
    assert torch.equal(outs[3][:, :c], xv.argmin(dim=0, keepdim=True).int())
    assert (outs[0][r:] == -7).all() and (outs[2][:, c:] == -7).all()   # only the valid part


def test_integer_source_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"reduces float elements"):
        pl.parse(SRC.replace("{D}", "INT32").replace("{V}", ""), filename="/u/arg.py")


TENSOR = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.{D}], rmax: pl.InOut[pl.Tensor[[32, 1], pl.INT32]],
          cmin: pl.InOut[pl.Tensor[[1, 64], pl.INT32]]):
        r: pl.Tensor[[32, 1], pl.INT32] = pl.row_argmax(a)
        c: pl.Tensor[[1, 64], pl.INT32] = pl.col_argmin(a)
        rmax = pl.assemble(rmax, r, [0, 0])
        cmin = pl.assemble(cmin, c, [0, 0])
        return rmax, cmin

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.{D}], rmax: pl.InOut[pl.Tensor[[32, 1], pl.INT32]],
             cmin: pl.InOut[pl.Tensor[[1, 64], pl.INT32]]):
        rmax, cmin = self.k(a, rmax, cmin)
        return rmax, cmin
"""


@pytest.mark.parametrize("d, tdt", [("FP32", torch.float32), ("FP16", torch.float16)])
def test_tensor_level_arg_reductions(d, tdt, tmp_path, monkeypatch):
    """pl.row_argmax / pl.col_argmin on tensors in a kernel: lowered to the tile forms."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(TENSOR.format(D=d), filename="/u/t.py")
    assert [s.value.op for s in prog.functions[0].body[:2]] == ["tensor.row_argmax", "tensor.col_argmin"]
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    a = torch.randn(32, 64, generator=torch.Generator().manual_seed(4)).to(tdt)
    rmax, cmin = torch.zeros(32, 1, dtype=torch.int32), torch.zeros(1, 64, dtype=torch.int32)
    run(a, rmax, cmin)
    assert torch.equal(rmax[:, 0], a.float().argmax(1).int())
    assert torch.equal(cmin[0], a.float().argmin(0).int())
