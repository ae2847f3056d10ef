"""A matmul result assembled into a narrower tensor (issue 11.5): the fp32 accumulator is
converted to fp16 / bf16 on its way to GM (the fix-pipe), plainly or atomically added
(split-K); any other fp32 value must be cast first. Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError

SPLIT_K = """
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 256], pl.{DT}], b: pl.Tensor[[256, 64], pl.{DT}],
             c: pl.Out[pl.Tensor[[64, 64], pl.{DT}]]) -> pl.Tensor[[64, 64], pl.{DT}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero"):
            c = pl.assemble(c, pl.full([64, 64], dtype=pl.{DT}, value=0.0), [0, 0])
        for ks in pl.parallel(0, 4):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="part"):
                k0 = ks * 64
                p = pl.matmul(a[:, k0:k0 + 64], b[k0:k0 + 64, :], out_dtype=pl.FP32)
                c = pl.assemble(c, p, [0, 0]{ATOMIC})
        return c
"""
TORCH = {"BF16": torch.bfloat16, "FP16": torch.float16}


@pytest.mark.parametrize("dtype", ["BF16", "FP16"])
def test_split_k_partials_added_into_a_16_bit_output(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SPLIT_K.format(DT=dtype, ATOMIC=", atomic=pl.AtomicType.Add"), filename="/u/s.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    torch.manual_seed(7)
    a = (torch.randn(64, 256) * 0.05).to(TORCH[dtype])
    b = (torch.randn(256, 64) * 0.05).to(TORCH[dtype])
    c = torch.full((64, 64), 9.0, dtype=TORCH[dtype])
    run(a, b, c)
    assert torch.allclose(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)


def test_a_plain_store_converts_too(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = SPLIT_K.format(DT="FP16", ATOMIC="").replace("pl.parallel(0, 4)", "pl.range(0, 1)")
    run = ir.compile(pl.parse(src, filename="/u/s.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    a, b = torch.randn(64, 256).half(), torch.randn(256, 64).half()
    c = torch.zeros(64, 64).half()
    run(a, b, c)
    assert torch.equal(c, (a[:, :64].float() @ b[:64].float()).half())


def test_a_vector_value_is_not_converted(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = """
import pypto.language as pl

@pl.program
class V:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.BF16]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="v"):
            o = pl.assemble(o, pl.exp(x), [0, 0])
        return o
"""
    with pytest.raises(CodegenError, match=r"only a matmul result is converted on its way to GM") as e:
        ir.compile(pl.parse(src, filename="/u/v.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    assert e.value.span.line == 9
