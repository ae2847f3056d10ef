"""Operand forms PyPTO's programs use (issue 11.4): a scalar second operand of
pl.tensor.maximum / minimum / add ... given by namespace; an expand's vector covering only the
valid part of a partial tile; a select's bit mask carried in any integer dtype (its bytes
are the bits). On the simulator against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir

SCALAR = """
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="s"):
            o = pl.assemble(o, pl.tensor.{OP}(x, {V}), [0, 0])
        return o
"""


def _compile(src, tmp_path, monkeypatch, name="/u/f.py"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    return ir.compile(pl.parse(src, filename=name), output_dir=tmp_path / "out", platform="a2a3sim")


@pytest.mark.parametrize("op, ref", [("maximum", lambda x, v: torch.clamp(x, min=v)),
                                     ("minimum", lambda x, v: torch.clamp(x, max=v)),
                                     ("sub", lambda x, v: x - v)])
def test_a_scalar_second_operand_by_namespace(op, ref, tmp_path, monkeypatch):
    run = _compile(SCALAR.format(OP=op, V=0.25), tmp_path, monkeypatch)
    x, o = torch.randn(16, 64), torch.zeros(16, 64)
    run(x, o)
    assert torch.equal(o, ref(x, 0.25))
    assert f"pto.t{op.replace('imum', '')}s " in (tmp_path / "out" / "ptoas" / "s.pto").read_text()


EXPAND = """
import pypto.language as pl

@pl.program
class E:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], v: pl.Tensor[[{VS}], pl.FP32],
          o: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[12, 24])
        w = pl.load(v, [0, 0], [{VS}], valid_shape=[{VV}])
        return pl.store(pl.tile.{OP}(t, w), [0, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], v: pl.Tensor[[{VS}], pl.FP32],
             o: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return self.k(a, v, o)
"""


@pytest.mark.parametrize("op, vs, vv, ref", [
    ("col_expand_add", "1, 32", "1, 24", lambda t, v: t + v),
    ("col_expand_div", "1, 32", "1, 24", lambda t, v: t / v),
    ("row_expand_mul", "16, 1", "12, 1", lambda t, v: t * v),
])
def test_a_vector_covering_the_valid_part(op, vs, vv, ref, tmp_path, monkeypatch):
    run = _compile(EXPAND.format(OP=op, VS=vs, VV=vv), tmp_path, monkeypatch)
    shape = tuple(int(x) for x in vs.split(","))
    a, v, o = torch.randn(16, 32), torch.rand(*shape) + 0.5, torch.zeros(16, 32)
    run(a, v, o)
    want = torch.zeros(16, 32)
    want[:12, :24] = ref(a, v)[:12, :24]
    assert torch.allclose(o, want, rtol=1e-6, atol=1e-6)


SELS = """
import pypto.language as pl

@pl.program
class M:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[2, 16], pl.FP32], m: pl.Tensor[[2, {MC}], pl.{MD}],
          o: pl.InOut[pl.Tensor[[2, 16], pl.FP32]]) -> pl.Tensor[[2, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [2, 16])
        mask = pl.load(m, [0, 0], [2, {MC}])
        tmp = pl.tile.create([1, 8], dtype=pl.FP32)
        return pl.store(pl.tile.sels(mask, t, tmp, -1.0), [0, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[2, 16], pl.FP32], m: pl.Tensor[[2, {MC}], pl.{MD}],
             o: pl.InOut[pl.Tensor[[2, 16], pl.FP32]]) -> pl.Tensor[[2, 16], pl.FP32]:
        return self.k(x, m, o)
"""
CARRIERS = {"UINT8": torch.uint8, "INT16": torch.int16, "UINT16": torch.uint16, "INT32": torch.int32,
            "UINT32": torch.uint32}


@pytest.mark.parametrize("md", list(CARRIERS))
def test_a_select_mask_in_any_integer_carrier(md, tmp_path, monkeypatch):
    nbytes = torch.tensor([], dtype=CARRIERS[md]).element_size()
    mc = 32 // nbytes
    run = _compile(SELS.format(MD=md, MC=mc), tmp_path, monkeypatch, "/u/m.py")
    bits = torch.randint(0, 2, (2, 256), dtype=torch.uint8)           # 32 bytes of bits a row
    packed = torch.zeros(2, 32, dtype=torch.uint8)
    for j in range(256):
        packed[:, j // 8] |= bits[:, j] << (j % 8)
    mask = packed.view(CARRIERS[md])                                   # the same bytes
    x, o = torch.randn(2, 16), torch.zeros(2, 16)
    run(x, mask, o)
    assert torch.equal(o, torch.where(bits[:, :16].bool(), x, torch.tensor(-1.0)))
