"""high_precision= (issue 11.7): pl.div, pl.log and pl.recip ask for the chip's precise mode
with the pto op's {precisionType = #pto<KIND high_precision>} (after outs, as the reference
writes it); pl.rsqrt's precise form is the one with a scratch tile (made for it at tensor
level). The simulator's results are correctly rounded in both modes; against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError

TENSOR = """
import pypto.language as pl

@pl.program
class HP:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[16, 64], pl.{DT}], b: pl.Tensor[[16, 64], pl.{DT}],
             o: pl.Out[pl.Tensor[[16, 64], pl.{DT}]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="hp"):
            o = pl.assemble(o, {EXPR}, [0, 0])
        return o
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}
CASES = {   # expression, torch reference, the pto op and its attribute (None: the rsqrt form)
    "div": ("pl.div(a, b, high_precision={HP})", lambda a, b: a / b, "tdiv", "div_precision"),
    "log": ("pl.log(pl.abs(a), high_precision={HP})", lambda a, b: a.abs().log(), "tlog", "log_precision"),
    "recip": ("pl.recip(b, high_precision={HP})", lambda a, b: 1 / b, "trecip", "recip_precision"),
    "rsqrt": ("pl.rsqrt(pl.abs(b), high_precision={HP})", lambda a, b: b.abs().rsqrt(), "trsqrt", None),
}


def _compile(src, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename="/u/hp.py"), output_dir=tmp_path / "out", platform="a2a3sim")


@pytest.mark.parametrize("dtype", ["FP32", "FP16", "BF16"])
@pytest.mark.parametrize("op", list(CASES))
@pytest.mark.parametrize("high", [True, False])
def test_both_modes_round_correctly_and_say_which(op, dtype, high, tmp_path, monkeypatch):
    expr, ref, pto_op, kind = CASES[op]
    run = _compile(TENSOR.format(DT=dtype, EXPR=expr.format(HP=high)), tmp_path, monkeypatch)
    torch.manual_seed(3)
    a = torch.randn(16, 64).to(TORCH[dtype])
    b = (torch.rand(16, 64) + 0.25).to(TORCH[dtype]) * torch.where(torch.rand(16, 64) < 0.5, -1, 1).to(TORCH[dtype])
    o = torch.zeros(16, 64, dtype=TORCH[dtype])
    run(a, b, o)
    want = ref(a.double(), b.double()).to(TORCH[dtype])      # correctly rounded to the dtype
    if dtype == "FP32":
        ulp = torch.nextafter(want.abs(), torch.tensor(float("inf"))) - want.abs()
        assert ((o - want).abs() <= ulp).all()
    else:
        assert torch.equal(o, want)
    line = next(l for l in (tmp_path / "out" / "ptoas" / "hp.pto").read_text().splitlines()
                if f"pto.{pto_op} " in l)
    if kind is not None:
        assert (f"{{precisionType = #pto<{kind} high_precision>}}" in line) is high
    else:                        # the precise rsqrt reads a scratch tile of the source's shape
        assert (line.split("ins(")[1].split(":")[0].count("%") == 2) is high


TILE = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="t"):
            x = pl.load(a, [0, 0], [16, 64])
            {BODY}
            o = pl.store(y, [0, 0], o)
        return o
"""


def test_typed_errors(tmp_path, monkeypatch):
    with pytest.raises(TypeCheckError, match=r"high_precision is True or False"):
        pl.parse(TENSOR.format(DT="FP32", EXPR="pl.div(a, b, high_precision=1)"), filename="/u/hp.py")
    with pytest.raises(TypeCheckError, match=r"unexpected keyword argument 'high_precision'"):
        pl.parse(TENSOR.format(DT="FP32", EXPR="pl.exp(a, high_precision=True)"), filename="/u/hp.py")
    with pytest.raises(TypeCheckError, match=r"the precise form is the one with a scratch tile"):
        pl.parse(TILE.format(BODY="y = pl.tile.rsqrt(x, high_precision=True)"), filename="/u/t.py")
    src = TILE.format(BODY="d = pl.tile.row_max(x, pl.create_tile([16, 64], dtype=pl.FP32, "
                           "target_memory=pl.Mem.Vec))\n            y = pl.tile.div(x, d, high_precision=True)")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    with pytest.raises(CodegenError, match=r"high_precision is for tile / tile division of equal shapes"):
        ir.compile(pl.parse(src, filename="/u/t.py"), output_dir=tmp_path / "o", platform="a2a3sim")


def test_ptoas_checks_the_attribute(tmp_path, monkeypatch):
    from pypto.ptoas import PtoasError, compile_pto
    _compile(TENSOR.format(DT="FP32", EXPR="pl.div(a, b, high_precision=True)"), tmp_path, monkeypatch)
    text = (tmp_path / "out" / "ptoas" / "hp.pto").read_text()
    level = "level3" if "addr = " in text else "level2"
    compile_pto(text, arch="a2a3", level=level)
    for old, new, msg in [("div_precision high_precision", "div_precision fast", "is #pto<div_precision"),
                          ("pto.tdiv", "pto.tmul", "pto.tmul has no precisionType")]:
        with pytest.raises(PtoasError, match=msg):
            compile_pto(text.replace(old, new), arch="a2a3", level=level)
