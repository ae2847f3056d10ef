"""The gemv family (issue 11.2): pl.tile.gemv / gemv_bias / gemv_acc multiply a [1, K]
row by a [K, N] tile on the cube (pto.tgemv*), into an Acc tile of 16 rows with one
valid; int8 -> int32, fp16 / bf16 / fp32 -> fp32; narrow valid K and N; the
accumulation's phase as the hardware's hint. On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

GEMV = """
import pypto.language as pl

@pl.program
class Gemv:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[1, {K}], pl.{DT}], b: pl.Tensor[[{K}, {VN}], pl.{DT}],
          bias: pl.Tensor[[1, {N}], pl.{OUT}], o: pl.Out[pl.Tensor[[1, {VN}], pl.{OUT}]],
          ob: pl.Out[pl.Tensor[[1, {VN}], pl.{OUT}]], oa: pl.Out[pl.Tensor[[1, {VN}], pl.{OUT}]]):
        ta = pl.load(a, [0, 0], [1, {K}], valid_shape=[1, {VK}], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [{K}, {N}], valid_shape=[{VK}, {VN}], target_memory=pl.Mem.Mat,
                     clamp=True)
        tbias = pl.load(bias, [0, 0], [1, {N}], target_memory=pl.Mem.Mat)
        o = pl.store(pl.tile.gemv(ta, tb), [0, 0], o)
        ob = pl.store(pl.tile.gemv_bias(ta, tb, tbias, acc_phase="final"), [0, 0], ob)
        # K in two halves: the first product starts the accumulation, the second ends it
        a0 = pl.load(a, [0, 0], [1, {H}], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [{H}, {N}], valid_shape=[{H}, {VN}], target_memory=pl.Mem.Mat, clamp=True)
        acc = pl.tile.gemv(a0, b0, acc_phase="partial")
        a1 = pl.load(a, [0, {H}], [1, {H}], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [{H}, 0], [{H}, {N}], valid_shape=[{H}, {VN}], target_memory=pl.Mem.Mat, clamp=True)
        acc = pl.tile.gemv_acc(acc, a1, b1, acc_phase="final")
        oa = pl.store(acc, [0, 0], oa)
        return o, ob, oa

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[1, {K}], pl.{DT}], b: pl.Tensor[[{K}, {VN}], pl.{DT}],
             bias: pl.Tensor[[1, {N}], pl.{OUT}], o: pl.Out[pl.Tensor[[1, {VN}], pl.{OUT}]],
             ob: pl.Out[pl.Tensor[[1, {VN}], pl.{OUT}]], oa: pl.Out[pl.Tensor[[1, {VN}], pl.{OUT}]]):
        o, ob, oa = self.k(a, b, bias, o, ob, oa)
        return o, ob, oa
"""
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT8": torch.int8,
         "INT32": torch.int32}


@pytest.mark.parametrize("dtype", ["FP32", "FP16", "BF16", "INT8"])
@pytest.mark.parametrize("k, vk, n, vn", [(128, 128, 64, 64), (128, 100, 64, 40)])
def test_gemv_family_matches_torch(dtype, k, vk, n, vn, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    out = "INT32" if dtype == "INT8" else "FP32"
    src = GEMV.format(DT=dtype, OUT=out, K=k, VK=vk, N=n, VN=vn, H=k // 2)
    run = ir.compile(pl.parse(src, filename="/u/gemv.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    g = torch.Generator().manual_seed(k + vk + vn)
    if dtype == "INT8":
        a, b = (torch.randint(-8, 8, s, generator=g, dtype=torch.int8) for s in ((1, k), (k, vn)))
        bias = torch.randint(-50, 50, (1, n), generator=g, dtype=torch.int32)
    else:
        a, b = (torch.randn(s, generator=g).to(TORCH[dtype]) for s in ((1, k), (k, vn)))
        bias = torch.randn(1, n, generator=g)
    o, ob, oa = (torch.zeros(1, vn, dtype=TORCH[out]) for _ in range(3))
    run(a, b, bias, o, ob, oa)
    wide = torch.int64 if dtype == "INT8" else torch.float64
    want = (a[:, :vk].to(wide) @ b[:vk].to(wide))
    whole = a.to(wide) @ b.to(wide)
    tol = dict(rtol=1e-4, atol=1e-3)
    assert torch.allclose(o.to(wide), want, **tol)
    assert torch.allclose(ob.to(wide), want + bias[:, :vn].to(wide), **tol)
    assert torch.allclose(oa.to(wide), whole, **tol)
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    assert "pto.tgemv.acc" in pto and "{accPhase = #pto<acc_phase partial>}" in pto


BAD = """
import pypto.language as pl

@pl.program
class Bad:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[64, 32], pl.FP16],
          o: pl.Out[pl.Tensor[[1, 32], pl.FP32]]) -> pl.Tensor[[1, 32], pl.FP32]:
        ta = pl.load(a, [0, 0], {ASHAPE}, target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        o = pl.store({CALL}, [0, 0], o)
        return o
"""


@pytest.mark.parametrize("ashape, call, msg", [
    ("[16, 64]", "pl.tile.gemv(ta, tb)", r"gemv: the left operand is one row \[1, K\]"),
    ("[1, 64]", 'pl.tile.gemv(ta, tb, acc_phase="last")', r"acc_phase is one of 'unspecified', 'partial', 'final'"),
    ("[1, 64]", "pl.tile.gemv(ta, pl.cast(tb, pl.FP32))", r"inputs of one dtype"),
])
def test_misuse_is_a_typed_error_at_the_line(ashape, call, msg):
    with pytest.raises(TypeCheckError, match=msg) as exc:
        pl.parse(BAD.format(ASHAPE=ashape, CALL=call), filename="/u/bad.py")
    assert "bad.py:11" in str(exc.value)
