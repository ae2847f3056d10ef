"""Operators the tile library had and the language now exposes (issue 11): bitwise
tile ops and their scalar forms, row/column products, row/column expand max/min.
Each is compiled through the real passes, ptoas and g++, run on the simulator and
compared with torch; wrong dtypes are typed errors at the user's line."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

I32 = "pl.Tensor[[16, 64], pl.INT32]"
F32 = "pl.Tensor[[16, 64], pl.FP32]"
ROW = "pl.Tensor[[16, 1], pl.FP32]"
COL = "pl.Tensor[[1, 64], pl.FP32]"

BITWISE = f"""
import pypto.language as pl

@pl.program
class Bitwise:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: {I32}, b: {I32}, o_and: pl.Out[{I32}], o_or: pl.Out[{I32}],
             o_xor: pl.Out[{I32}], o_shl: pl.Out[{I32}], o_shr: pl.Out[{I32}],
             o_not: pl.Out[{I32}], o_ands: pl.Out[{I32}], o_shls: pl.Out[{I32}]) -> {I32}:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="bits"):
            ta = pl.load(a, [0, 0], [16, 64])
            tb = pl.load(b, [0, 0], [16, 64])
            o_and = pl.store(pl.and_(ta, tb), [0, 0], o_and)
            o_or = pl.store(pl.or_(ta, tb), [0, 0], o_or)
            o_xor = pl.store(pl.xor(ta, tb), [0, 0], o_xor)
            sh = pl.ands(tb, 7)
            o_shl = pl.store(pl.shl(ta, sh), [0, 0], o_shl)
            o_shr = pl.store(pl.tile.shr(ta, sh), [0, 0], o_shr)
            o_not = pl.store(pl.tile.not_(ta), [0, 0], o_not)
            o_ands = pl.store(pl.ands(ta, 255), [0, 0], o_ands)
            o_shls = pl.store(pl.shls(ta, 3), [0, 0], o_shls)
        return o_and
"""

PROD_EXPAND = f"""
import pypto.language as pl

@pl.program
class ProdExpand:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: {F32}, r: {ROW}, c: {COL}, rp: pl.Out[{ROW}], cp: pl.Out[{COL}],
             rmax: pl.Out[{F32}], rmin: pl.Out[{F32}], cmax: pl.Out[{F32}],
             cmin: pl.Out[{F32}]) -> {F32}:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="prodexp"):
            t = pl.load(x, [0, 0], [16, 64])
            tr = pl.load(r, [0, 0], [16, 1])
            tc = pl.load(c, [0, 0], [1, 64])
            tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            rp = pl.store(pl.row_prod(t, tmp), [0, 0], rp)
            cp = pl.store(pl.tile.col_prod(t), [0, 0], cp)
            rmax = pl.store(pl.row_expand_max(t, tr), [0, 0], rmax)
            rmin = pl.store(pl.tile.row_expand_min(t, tr), [0, 0], rmin)
            cmax = pl.store(pl.col_expand_max(t, tc), [0, 0], cmax)
            cmin = pl.store(pl.col_expand_min(t, tc), [0, 0], cmin)
        return rmax
"""


def test_bitwise_ops_match_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(BITWISE, filename="/u/bits.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-2**20, 2**20, (16, 64), dtype=torch.int32, generator=g)
    b = torch.randint(-2**20, 2**20, (16, 64), dtype=torch.int32, generator=g)
    outs = [torch.zeros(16, 64, dtype=torch.int32) for _ in range(8)]
    run(a, b, *outs)
    sh = b & 7
    want = [a & b, a | b, a ^ b, a << sh, a >> sh, ~a, a & 255, a << 3]
    for i, (got, exp) in enumerate(zip(outs, want)):
        assert torch.equal(got, exp), i
    pto = next((tmp_path / "out" / "ptoas").glob("*.pto")).read_text()
    for op in ("tand", "tor", "txor", "tshl", "tshr", "tnot", "tands", "tshls"):
        assert f"pto.{op} ins(" in pto, op


def test_products_and_expand_max_min_match_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(PROD_EXPAND, filename="/u/prod.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    g = torch.Generator().manual_seed(5)
    x = 1 + 0.05 * torch.randn(16, 64, generator=g)        # products stay finite
    r, c = torch.randn(16, 1, generator=g), torch.randn(1, 64, generator=g)
    rp, cp = torch.zeros(16, 1), torch.zeros(1, 64)
    rest = [torch.zeros(16, 64) for _ in range(4)]
    run(x, r, c, rp, cp, *rest)
    # the simulator multiplies left to right in fp32, as torch.prod on CPU does
    assert torch.allclose(rp, x.prod(dim=1, keepdim=True), rtol=1e-5)
    assert torch.allclose(cp, x.prod(dim=0, keepdim=True), rtol=1e-5)
    for got, exp in zip(rest, [torch.maximum(x, r), torch.minimum(x, r), torch.maximum(x, c),
                               torch.minimum(x, c)]):
        assert torch.equal(got, exp)


@pytest.mark.parametrize("body, msg", [
    ("y = pl.and_(t, t)", r"tile\.and_ works on integer elements, got fp32"),
    ("y = pl.shls(t, 2)", r"tile\.shls works on integer elements"),
    ("y = pl.tile.not_(t)", r"tile\.not_ works on integer elements"),
])
def test_bitwise_on_floats_is_a_typed_error(body, msg):
    src = (
        "import pypto.language as pl\n"
        "@pl.program\n"
        "class P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        "    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):\n"
        "        t = pl.load(a, [0, 0], [16, 64])\n"
        f"        {body}\n"
        "        return o\n")
    with pytest.raises(TypeCheckError, match=msg) as exc:
        pl.parse(src, filename="/u/bits.py")
    assert exc.value.span.line == 7 and "hint:" in str(exc.value)
