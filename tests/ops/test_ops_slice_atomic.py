"""Tensor slices and atomic-add stores (issue 11.3, 11.5): `t[i:i+m, j:j+n]` (pl.slice) is
a view whose window the ops reading it load, at offsets known when compiling or when the
kernel runs; `atomic=pl.AtomicType.Add` on pl.store / pl.assemble adds into the tensor
(pto.tstore with atomicType = atomic_add), so kernels of a parallel loop accumulate
partial results (split-K). On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, ParserError, TypeCheckError

SPLIT_K = """
import pypto.language as pl

@pl.program
class SplitK:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
             c: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero"):
            c = pl.assemble(c, pl.full([{M}, {N}], dtype=pl.FP32, value=0.0), [0, 0])
        for ks in pl.parallel(0, {SPLIT}):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="part"):
                k0 = ks * {KS}
                partial = pl.matmul(a[:, k0:k0 + {KS}], b[k0:k0 + {KS}, :], out_dtype=pl.FP32)
                c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
        return c
"""


def _compile(src, tmp_path, monkeypatch, name="p.py"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename=f"/u/{name}"), output_dir=tmp_path / "out",
                      platform="a2a3sim")


@pytest.mark.parametrize("shape", [(64, 64, 512, 4), (32, 48, 96, 3)])
@pytest.mark.parametrize("dtype", ["FP32", "FP16"])
def test_split_k_slices_and_atomic_adds(shape, dtype, tmp_path, monkeypatch):
    m, n, k, split = shape
    src = SPLIT_K.format(M=m, N=n, K=k, SPLIT=split, KS=k // split, DT=dtype)
    run = _compile(src, tmp_path, monkeypatch)
    tdt = torch.float32 if dtype == "FP32" else torch.float16
    a, b = torch.randn(m, k).to(tdt), torch.randn(k, n).to(tdt)
    c = torch.full((m, n), 3.0)                # the kernel zeroes it first
    run(a, b, c)
    want = a.float() @ b.float()
    assert torch.allclose(c, want, rtol=1e-3, atol=1e-3), (c - want).abs().max()
    part = (tmp_path / "out" / "ptoas" / "part.pto").read_text()
    assert "atomicType = #pto<atomic_type atomic_add>" in part
    assert "pto::tstore_add" in (tmp_path / "out" / "ptoas" / "part.cpp").read_text()


ELEMENTWISE = """
import pypto.language as pl

@pl.program
class Win:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 128, 64], pl.FP32], y: pl.Tensor[[256, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="win"):
                xs = x[2:3, 16 * i:16 * i + 16, :]
                ys = y[100:132, :]
                inner = ys[8 * i:8 * i + 16, :]
                o[16 * i:16 * i + 16, :] = pl.add(pl.reshape(xs, [16, 64]), inner)
        return o
"""


def test_slices_of_slices_and_elementwise_reads(tmp_path, monkeypatch):
    run = _compile(ELEMENTWISE, tmp_path, monkeypatch)
    x, y = torch.randn(4, 128, 64), torch.randn(256, 64)
    o = torch.zeros(32, 64)
    run(x, y, o)
    want = torch.cat([x[2, 16 * i:16 * i + 16] + y[100 + 8 * i:100 + 8 * i + 16] for i in range(2)])
    assert torch.allclose(o, want)


ATOMIC_STORE = """
import pypto.language as pl

@pl.program
class Acc:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[6, 32, 64], pl.{DT}],
             o: pl.Out[pl.Tensor[[32, 64], pl.{DT}]]) -> pl.Tensor[[32, 64], pl.{DT}]:
        for i in pl.parallel(0, 6):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="acc"):
                t = pl.reshape(pl.load(x, [i, 0, 0], [1, 32, 64]), [32, 64])
                o = pl.store(t, [0, 0], o, atomic=pl.AtomicType.Add)
        return o
"""


@pytest.mark.parametrize("dtype", ["FP32", "INT32", "FP16"])
def test_parallel_kernels_add_into_one_window(dtype, tmp_path, monkeypatch):
    run = _compile(ATOMIC_STORE.format(DT=dtype), tmp_path, monkeypatch)
    tdt = {"FP32": torch.float32, "INT32": torch.int32, "FP16": torch.float16}[dtype]
    x = (torch.randn(6, 32, 64) * 8).to(tdt)
    o = torch.ones(32, 64, dtype=tdt)           # added into, not overwritten
    run(x, o)
    want = x.float().sum(0) + 1
    # fp16 adds round after every add, in the order the kernels happen to run: a few
    # ulps of the partial sums (|x| * 6 <= ~150: ulp 0.125)
    rtol, atol = (1e-2, 0.5) if dtype == "FP16" else (1e-6, 1e-5)
    assert torch.allclose(o.float(), want, rtol=rtol, atol=atol), (o.float() - want).abs().max()


def test_atomic_add_into_an_int64_tensor_is_a_typed_error():
    with pytest.raises(TypeCheckError, match=r"atomic=pl.AtomicType.Add needs a .*got int64"):
        pl.parse(ATOMIC_STORE.format(DT="INT64"), filename="/u/acc.py")


def test_a_slice_with_an_extent_known_only_at_run_time_is_an_error():
    src = SPLIT_K.format(M=64, N=64, K=512, SPLIT=4, KS=128, DT="FP32").replace(
        "a[:, k0:k0 + 128]", "a[:, k0:2 * k0]")
    with pytest.raises(ParserError, match=r"extent of dim 1 is not known when compiling"):
        pl.parse(src, filename="/u/p.py")


def test_a_slice_outside_the_tensor_is_a_typed_error():
    src = ELEMENTWISE.replace("y[100:132, :]", "y[240:272, :]")
    with pytest.raises(TypeCheckError, match=r"outside the tensor's extent 256"):
        pl.parse(src, filename="/u/w.py")


def test_writing_into_a_slice_says_it_is_not_built(tmp_path, monkeypatch):
    src = ELEMENTWISE.replace("o[16 * i:16 * i + 16, :] = pl.add(pl.reshape(xs, [16, 64]), inner)",
                              "ov = o[16 * i:16 * i + 16, :]\n"
                              "                ov[0:16, :] = pl.add(pl.reshape(xs, [16, 64]), inner)")
    with pytest.raises(NotBuiltError, match=r"writing into a slice"):
        _compile(src, tmp_path, monkeypatch)
