"""Tiles with a valid region smaller than the tile (issue 11): pl.load(..., valid_shape=)
reads only that region, element-wise ops and reductions work on it, pl.store writes
it, and pl.fillpad fills the rest with zero / +max / -max. Run on the simulator and
compared with torch; misuse is a typed error at the user's line."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, TypeCheckError
from pypto.ir.printer import print_program


def program(body: str, params: str, ret: str, name: str = "P") -> str:
    return f"""
import pypto.language as pl

@pl.program
class {name}:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, {params}) -> {ret}:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
{chr(10).join("            " + ln for ln in body.strip().splitlines())}
        return out
"""


def compile_run(src, tmp_path, monkeypatch, *args, **kw):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(src, filename="/u/valid.py")
    compiled = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim", **kw)
    compiled(*args)
    return prog


T48 = "pl.Tensor[[48, 64], pl.FP32]"
T64 = "pl.Tensor[[64, 64], pl.FP32]"


@pytest.mark.parametrize("pad, fill", [("zero", 0.0), ("max", float("inf")), ("min", float("-inf"))])
def test_fillpad_fills_outside_the_valid_rows(pad, fill, tmp_path, monkeypatch):
    src = program(f"""
t = pl.load(inp, offsets=[0, 0], shapes=[64, 64], valid_shape=[48, 64])
p = pl.fillpad(t, pad_value=pl.PadValue.{pad})
out = pl.store(p, offsets=[0, 0], output_tensor=out)
""", f"inp: {T48}, out: pl.Out[{T64}]", T64)
    x, out = torch.randn(48, 64), torch.zeros(64, 64)
    compile_run(src, tmp_path, monkeypatch, x, out)
    want = torch.full((64, 64), fill)
    want[:48] = x
    assert torch.equal(out, want)


def test_fp16_odd_tail_columns(tmp_path, monkeypatch):
    src = program("""
t = pl.load(inp, [0, 0], [1, 32], valid_shape=[1, 17])
out = pl.store(pl.tile.fillpad(t), [0, 0], out)
""", "inp: pl.Tensor[[1, 17], pl.FP16], out: pl.Out[pl.Tensor[[1, 32], pl.FP16]]",
        "pl.Tensor[[1, 32], pl.FP16]")
    x, out = torch.randn(1, 17).half(), torch.full((1, 32), 7.0).half()
    compile_run(src, tmp_path, monkeypatch, x, out)
    assert torch.equal(out[:, :17], x) and torch.equal(out[:, 17:], torch.zeros(1, 15).half())


def test_ops_and_reductions_on_the_valid_region_and_a_store_of_it(tmp_path, monkeypatch):
    src = program("""
ta = pl.load(a, [0, 0], [64, 64], valid_shape=[40, 24])
tb = pl.load(b, [0, 0], [64, 64], valid_shape=[40, 24])
s = pl.mul(pl.add(ta, tb), ta)
tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
rows = pl.row_sum(s, tmp)
out = pl.store(s, [0, 0], out)
r = pl.store(rows, [0, 0], r)
""", f"a: {T64}, b: {T64}, out: pl.Out[{T64}], r: pl.Out[pl.Tensor[[64, 1], pl.FP32]]", T64)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    out, r = torch.full((64, 64), -5.0), torch.full((64, 1), -5.0)
    prog = compile_run(src, tmp_path, monkeypatch, a, b, out, r, verification_level="roundtrip")
    want = (a + b) * a
    assert torch.allclose(out[:40, :24], want[:40, :24])
    assert torch.equal(out[40:], torch.full((24, 64), -5.0))          # only the valid region
    assert torch.equal(out[:, 24:], torch.full((64, 40), -5.0))
    assert torch.allclose(r[:40], want[:40, :24].sum(dim=1, keepdim=True), rtol=1e-5)
    assert torch.equal(r[40:], torch.full((24, 1), -5.0))
    assert "pl.TileView(valid_shape=[40, 24])" in print_program(prog)   # the types say it
    dump = (tmp_path / "out" / "passes_dump").glob("*_after_*.py")
    last = sorted(dump)[-1].read_text()
    assert "pl.TileView(valid_shape=[40, 24])" in last        # the type says it, and parses back


def test_a_jit_scalar_gives_the_valid_extent(tmp_path, monkeypatch):
    """The reference's idiom: a @pl.jit scalar parameter is specialised to its value."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    from jit_valid import scaled_prefix
    from pypto.runtime import RunConfig
    x, o = torch.randn(64, 64), torch.zeros(64, 64)
    scaled_prefix(x, 2.0, 40, o, config=RunConfig(platform="a2a3sim"))
    want = torch.full((64, 64), float("-inf"))
    want[:, :40] = x[:, :40] * 2
    assert torch.equal(o, want)


def test_the_annotation_may_state_the_valid_shape():
    src = program("""
t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[48, 64])] = pl.load(inp, [0, 0], [64, 64], valid_shape=[48, 64])
out = pl.store(pl.fillpad(t), [0, 0], out)
""", f"inp: {T48}, out: pl.Out[{T64}]", T64)
    pl.parse(src, filename="/u/valid.py")
    with pytest.raises(TypeCheckError, match=r"valid shape is \[48, 64\]"):
        pl.parse(src.replace("valid_shape=[48, 64])]", "valid_shape=[32, 64])]"), filename="/u/valid.py")


@pytest.mark.parametrize("body, err, msg", [
    ("ta = pl.load(a, [0, 0], [64, 64], valid_shape=[40, 64])\ntb = pl.load(a, [0, 0], [64, 64])\nx = pl.add(ta, tb)",
     TypeCheckError, r"valid shapes differ: \[40, 64\] vs \[64, 64\]"),
    ("ta = pl.load(a, [0, 0], [64, 64], valid_shape=[65, 64])", TypeCheckError, r"does not lie inside"),
    ("ta = pl.load(a, [0, 0], [64, 64], valid_shape=[40, 64], target_memory=pl.Mem.Mat)\n"
     "l = pl.move(ta, target_memory=pl.Mem.Left)\nm = pl.matmul(l, l)", TypeCheckError,
     r"matmul: the valid parts do not chain: 40x64 x 40x64"),
    ("ta = pl.load(a, [0, 0], [64, 64], valid_shape=[40, 64])\nx = pl.reshape(ta, [32, 128])",
     NotBuiltError, r"reshape: a tile with a valid shape"),
])
def test_misuse_is_a_typed_error(body, err, msg):
    src = program(body + "\nout = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)",
                  f"a: {T64}, out: pl.Out[{T64}]", T64)
    with pytest.raises(err, match=msg) as exc:
        pl.parse(src, filename="/u/valid.py")
    assert exc.value.span is not None and exc.value.span.file == "valid.py" and exc.value.hint


def test_matmul_contracts_over_the_lefts_valid_k(tmp_path, monkeypatch):
    """K is the left's valid columns; the right's rows past them (valid or not) are not read."""
    src = program("""
ta = pl.load(a, [0, 0], [64, 64], valid_shape=[64, 40], target_memory=pl.Mem.Mat)
tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
m = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
out = pl.store(m, [0, 0], out)
""", f"a: {T64}, b: {T64}, out: pl.Out[{T64}]", T64)
    a, b, out = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    compile_run(src, tmp_path, monkeypatch, a, b, out)
    torch.testing.assert_close(out, a[:, :40] @ b[:40], rtol=1e-4, atol=1e-4)
