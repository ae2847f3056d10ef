"""Partial element-wise ops and prelu (issue 11.4): pl.part_add / part_mul / part_max /
part_min work over the first source's valid region, applying the op where the second is
valid too and copying the first elsewhere (pto.tpart*); pl.tile.prelu(x, slope, tmp) keeps
x > 0 and scales the rest by a per-element slope (pto.tprelu). Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError

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
            tmp = pl.create_tile({TMP})
            o = pl.store(pl.tile.prelu(pl.load(x, [0, 0], [16, 64]), pl.load(s, [0, 0], [16, 64]), tmp),
                         [0, 0], o)
        return o
"""


# the scratch is the hardware's: a bit mask on a2/a3 (UINT8, a row more than x's valid
# rows, a bit per valid column), a placeholder on a5 (as in the reference)
MASK = "[17, 32], dtype=pl.UINT8"


@pytest.mark.parametrize("platform, tmp", [("a2a3sim", MASK), ("a5sim", "[1, 8], dtype=pl.INT32")])
@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_prelu(dtype, platform, tmp, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(PRELU.format(DT=dtype, TMP=tmp), filename="/u/r.py"),
                     output_dir=tmp_path / "out", platform=platform)
    tdt = torch.float32 if dtype == "FP32" else torch.float16
    x, s = torch.randn(16, 64).to(tdt), torch.rand(16, 64).to(tdt)
    o = torch.zeros(16, 64, dtype=tdt)
    run(x, s, o)
    assert torch.allclose(o.float(), torch.where(x > 0, x, x * s).float(), atol=1e-3)


def test_prelu_of_integers_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"prelu needs a floating-point operand, got int32"):
        pl.parse(PRELU.format(DT="INT32", TMP=MASK), filename="/u/r.py")


@pytest.mark.parametrize("tmp, msg", [
    ("[16, 64], dtype=pl.FP32", r"prelu on a2a3 needs a UINT8 scratch tile \(its bit mask\), got fp32"),
    ("[16, 32], dtype=pl.UINT8", r"the scratch tile has 16 rows, it needs x's valid rows \+ 1 = 17"),
])
def test_prelu_scratch_on_a2a3_is_checked_at_the_line(tmp, msg, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    with pytest.raises(CodegenError, match=msg) as exc:
        ir.compile(pl.parse(PRELU.format(DT="FP32", TMP=tmp), filename="/u/r.py"),
                   output_dir=tmp_path / "out", platform="a2a3sim")
    assert "r.py:11" in str(exc.value)


def test_ptoas_checks_the_scratch_for_the_chip(tmp_path, monkeypatch):
    """Our ptoas holds .pto written by hand to the same rule: the a5 kernel's placeholder
    scratch is refused when assembled for a2a3."""
    from pypto.ptoas import PtoasError, compile_pto
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    ir.compile(pl.parse(PRELU.format(DT="FP32", TMP="[1, 8], dtype=pl.INT32"), filename="/u/r.py"),
               output_dir=tmp_path / "out", platform="a5sim", skip_ptoas=True)
    text = (tmp_path / "out" / "ptoas" / "r.pto").read_text()
    compile_pto(text, arch="a5")
    with pytest.raises(PtoasError, match=r"tprelu on a2a3 takes a ui8 scratch \(its bit mask\), not i32"):
        compile_pto(text.replace('"a5"', '"a2a3"'), arch="a2a3")
