"""pl.batch_matmul on tiles (issue 11.2): [B, M, K] x [B, K, N] Mat tiles -> [B, M, N],
one cube matmul per batch into windows of one Acc tile (FlattenTileNdTo2D); B^T through
a 3-D pl.tile.transpose_view; a 2-D operand shared by every batch. Against torch.bmm."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class Bmm:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[{A}, pl.{D}], b: pl.Tensor[[{B}, {K}, {N}], pl.{D}],
          bt: pl.Tensor[[{B}, {N}, {K}], pl.{D}], c: pl.Out[pl.Tensor[[{B}, {M}, {N}], pl.FP32]],
          ct: pl.Out[pl.Tensor[[{B}, {M}, {N}], pl.FP32]]):
        ta = pl.load(a, offsets={AOFF}, shapes={A}, target_memory=pl.MemorySpace.Mat)
        tb = pl.load(b, offsets=[0, 0, 0], shapes=[{B}, {K}, {N}], target_memory=pl.MemorySpace.Mat)
        tbt = pl.load(bt, offsets=[0, 0, 0], shapes=[{B}, {N}, {K}], target_memory=pl.MemorySpace.Mat)
        c = pl.store(pl.batch_matmul(ta, tb), offsets=[0, 0, 0], output_tensor=c)
        ct = pl.store(pl.batch_matmul(ta, pl.tile.transpose_view(tbt)), offsets=[0, 0, 0], output_tensor=ct)
        return c, ct

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[{A}, pl.{D}], b: pl.Tensor[[{B}, {K}, {N}], pl.{D}],
             bt: pl.Tensor[[{B}, {N}, {K}], pl.{D}], c: pl.Out[pl.Tensor[[{B}, {M}, {N}], pl.FP32]],
             ct: pl.Out[pl.Tensor[[{B}, {M}, {N}], pl.FP32]]):
        c, ct = self.k(a, b, bt, c, ct)
        return c, ct
"""


def _src(b, m, k, n, dtype="FP32", shared=False):
    a = f"[{m}, {k}]" if shared else f"[{b}, {m}, {k}]"
    return SRC.format(A=a, AOFF="[0, 0]" if shared else "[0, 0, 0]", B=b, M=m, K=k, N=n, D=dtype)


@pytest.mark.parametrize("b, m, k, n, dtype, shared", [
    (2, 64, 64, 64, "FP32", False),
    (3, 32, 48, 32, "FP16", False),
    (4, 16, 32, 48, "BF16", False),
    (2, 32, 64, 32, "FP32", True),
])
def test_batch_matmul_matches_torch(b, m, k, n, dtype, shared, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(_src(b, m, k, n, dtype, shared), filename="/u/bmm.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    tdt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[dtype]
    g = torch.Generator().manual_seed(b * m + k)
    a = torch.randn((m, k) if shared else (b, m, k), generator=g).to(tdt)
    rb, rbt = torch.randn(b, k, n, generator=g).to(tdt), torch.randn(b, n, k, generator=g).to(tdt)
    c, ct = torch.zeros(b, m, n), torch.zeros(b, m, n)
    run(a, rb, rbt, c, ct)
    a3 = a.float().expand(b, m, k)
    assert torch.allclose(c, torch.bmm(a3, rb.float()), rtol=1e-4, atol=1e-3)
    assert torch.allclose(ct, torch.bmm(a3, rbt.float().transpose(1, 2)), rtol=1e-4, atol=1e-3)
    assert (tmp_path / "out" / "ptoas" / "k.pto").read_text().count("pto.tmatmul ins") == 2 * b


def test_batches_that_differ_are_a_typed_error():
    src = _src(2, 32, 32, 32).replace("pl.batch_matmul(ta, tb)", "pl.batch_matmul(ta, tb2)").replace(
        "        c = pl.store", "        tb2 = pl.load(b, [0, 0, 0], [1, 32, 32], target_memory=pl.Mem.Mat)\n"
                             "        c = pl.store", 1)
    with pytest.raises(TypeCheckError, match=r"batch_matmul: batches differ, 2 and 1") as exc:
        pl.parse(src, filename="/u/bmm.py")
    assert "bmm.py:14" in str(exc.value)


def test_a_transposed_3d_tile_feeds_only_batch_matmul(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = _src(2, 32, 32, 32).replace(
        "pl.batch_matmul(ta, pl.tile.transpose_view(tbt))", "pl.batch_matmul(ta, pl.add(tv, tv))").replace(
        "        ct = pl.store", "        tv = pl.tile.transpose_view(tbt)\n        ct = pl.store", 1)
    with pytest.raises((CodegenError, TypeCheckError)) as exc:
        ir.compile(pl.parse(src, filename="/u/bmm.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    assert "bmm.py:" in str(exc.value)


TENSOR = """
import pypto.language as pl

@pl.program
class TBmm:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[{A}, pl.FP32], w: pl.Tensor[[{G}, {N}, {K}], pl.FP32],
          c: pl.Out[pl.Tensor[[{B}, {M}, {N}], pl.FP32]]) -> pl.Tensor[[{B}, {M}, {N}], pl.FP32]:
        wb = pl.slice(w, [{B}, {N}, {K}], [{G0}, 0, 0])
        {BODY}
        c = pl.assemble(c, cm, offset=[0, 0, 0])
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[{A}, pl.FP32], w: pl.Tensor[[{G}, {N}, {K}], pl.FP32],
             c: pl.Out[pl.Tensor[[{B}, {M}, {N}], pl.FP32]]) -> pl.Tensor[[{B}, {M}, {N}], pl.FP32]:
        c = self.k(a, w, c)
        return c
"""
ONE = "cm = pl.matmul(a, wb, b_trans=True, out_dtype=pl.FP32)"
# K in two halves: pl.matmul starts the accumulation, pl.matmul_acc adds the second half
SPLIT = ("a0 = pl.slice(a, {AH}, {A0})\n        a1 = pl.slice(a, {AH}, {A1})\n"
         "        w0 = pl.slice(wb, [{B}, {N}, {H}], [0, 0, 0])\n"
         "        w1 = pl.slice(wb, [{B}, {N}, {H}], [0, 0, {H}])\n"
         "        acc = pl.matmul(a0, w0, b_trans=True, out_dtype=pl.FP32)\n"
         "        cm = pl.matmul_acc(acc, a1, w1, b_trans=True)")


@pytest.mark.parametrize("b, g, g0, m, k, n, shared, body", [
    (1, 1, 0, 64, 64, 64, True, ONE),         # [M, K] x [1, N, K]^T
    (2, 2, 0, 48, 80, 32, False, ONE),        # [B, M, K] x [B, N, K]^T
    (2, 4, 1, 48, 80, 32, False, ONE),        # weights sliced from a group
    (1, 1, 0, 64, 64, 32, True, SPLIT),       # split K: matmul then matmul_acc
    (2, 3, 1, 32, 64, 48, False, SPLIT),
])
def test_tensor_matmul_with_a_3d_operand(b, g, g0, m, k, n, shared, body, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    h = k // 2
    ah, a0, a1 = ((f"[{m}, {h}]", "[0, 0]", f"[0, {h}]") if shared else
                  (f"[{b}, {m}, {h}]", "[0, 0, 0]", f"[0, 0, {h}]"))
    body = body.format(AH=ah, A0=a0, A1=a1, B=b, N=n, H=h)
    src = TENSOR.format(A=f"[{m}, {k}]" if shared else f"[{b}, {m}, {k}]", G=g, G0=g0, B=b, M=m, K=k,
                        N=n, BODY=body)
    run = ir.compile(pl.parse(src, filename="/u/tbmm.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    gen = torch.Generator().manual_seed(m + k + n)
    a = torch.randn((m, k) if shared else (b, m, k), generator=gen)
    w = torch.randn(g, n, k, generator=gen)
    c = torch.zeros(b, m, n)
    run(a, w, c)
    want = torch.bmm(a.expand(b, m, k), w[g0:g0 + b].transpose(1, 2))
    assert torch.allclose(c, want, rtol=1e-4, atol=1e-3)


PIPELINED = """
import pypto.language as pl
T = 32
K = 1024
N = 64
KC = 256

@pl.program
class KLoop:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[{B}, T, K], pl.INT8], w: pl.Tensor[[{B}, N, K], pl.INT8],
             out: pl.Out[pl.Tensor[[{B}, T, N], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="kloop"):
            acc = pl.create_tensor([{B}, T, N], dtype=pl.INT32)
            for kb in pl.pipeline(0, K // KC, stage=2):
                k0 = kb * KC
                x_k = x[:, :, k0 : k0 + KC]
                w_k = w[:, :, k0 : k0 + KC]
                if kb == 0:
                    acc = pl.matmul(x_k, w_k, b_trans=True, out_dtype=pl.INT32)
                else:
                    acc = pl.matmul_acc(acc, x_k, w_k, b_trans=True)
        out[:, :, :] = acc
        return out
"""


@pytest.mark.parametrize("b", [1, 2])
def test_a_3d_matmul_started_in_one_branch_and_accumulated_in_the_other(b, tmp_path, monkeypatch):
    """The if's result is one Acc buffer: the first K step writes a fresh product, the
    others add into the carried accumulator's batch windows in place."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(PIPELINED.format(B=b), filename="/u/kloop.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim", verification_level="roundtrip")
    g = torch.Generator().manual_seed(b)
    x = torch.randint(-8, 8, (b, 32, 1024), generator=g, dtype=torch.int8)
    w = torch.randint(-8, 8, (b, 64, 1024), generator=g, dtype=torch.int8)
    out = torch.zeros(b, 32, 64, dtype=torch.int32)
    run(x, w, out)
    assert torch.equal(out, torch.bmm(x.int(), w.int().transpose(1, 2)))
