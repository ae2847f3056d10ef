"""pl.matmul_mx and its acc / bias forms (issue 11.2), a5: FP8E4M3FN data in Left / Right
with E8M0 scales, one per 32 elements of K, in LeftScale / RightScale; the scale tensors in
the cube's blocked layouts (pl.MX_A_ZZ, pl.MX_B_NN); FP4 data (torch.float4_e2m1fn_x2)
loaded into Vec and cast to FP8E4M3FN first. Checked exactly against a float64 torch
golden: FP8 products and power-of-two scales are exact, so only the final f32 rounds."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, NotBuiltError, ParserError, TypeCheckError

FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                           -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=torch.float64)

HEAD = """
import pypto.language as pl
M = {M}
K = {K}
N = {N}
KS = {KS}

@pl.program
class Mx:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, K], pl.{A}], sa: pl.Tensor[[M, K // 32], pl.{S}, pl.MX_A_ZZ],
          b: pl.Tensor[[K, N], pl.FP8E4M3FN], sb: pl.Tensor[[K // 32, N], pl.{S}, pl.MX_B_NN],
          {EXTRA}o: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
{BODY}
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.{A}], sa: pl.Tensor[[M, K // 32], pl.{S}, pl.MX_A_ZZ],
             b: pl.Tensor[[K, N], pl.FP8E4M3FN], sb: pl.Tensor[[K // 32, N], pl.{S}, pl.MX_B_NN],
             {EXTRA}o: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        o = self.k(a, sa, b, sb, {EXTRA_ARG}o)
        return o
"""

# the operands of one K step [k0, k0 + KS) moved into place
STEP = """
        la = pl.move(pl.load(a, [0, {k0}], [M, KS], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(sa, [0, {k0} // 32], [M, KS // 32], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.LeftScale)
        rb = pl.move(pl.load(b, [{k0}, 0], [KS, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(sb, [{k0} // 32, 0], [KS // 32, N], target_memory=pl.Mem.Mat),
                     target_memory=pl.Mem.RightScale)"""


def _src(body, M=64, K=128, N=128, KS=None, A="FP8E4M3FN", S="FP8E8M0", extra="", extra_arg=""):
    return HEAD.format(M=M, K=K, N=N, KS=KS or K, A=A, S=S, BODY=body, EXTRA=extra, EXTRA_ARG=extra_arg)


def _pack_a(codes):          # logical [M, G] -> the MX_A_ZZ order
    m, g = codes.shape
    return codes.reshape(m // 16, 16, g // 2, 2).permute(0, 2, 1, 3).contiguous().reshape(m, g)


def _pack_b(codes):          # logical [G, N] -> the MX_B_NN order
    g, n = codes.shape
    return codes.reshape(g // 2, 2, n // 16, 16).permute(2, 0, 3, 1).contiguous().reshape(g, n)


def _inputs(M, K, N, fp4=False, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if fp4:
        codes = torch.randint(0, 16, (M, K), generator=gen).to(torch.uint8)
        a = (((codes[:, 1::2] & 0x0F) << 4) | (codes[:, 0::2] & 0x0F)).contiguous().view(torch.float4_e2m1fn_x2)
        a64 = FP4_VALUES[codes.long()]
    else:
        a = (torch.randint(-4, 5, (M, K), generator=gen) * 0.5).to(torch.float8_e4m3fn)
        a64 = a.double()
    b = (torch.randint(-4, 5, (K, N), generator=gen) * 0.25).to(torch.float8_e4m3fn)
    sa = torch.randint(124, 131, (M, K // 32), generator=gen).to(torch.uint8)
    sb = torch.randint(124, 131, (K // 32, N), generator=gen).to(torch.uint8)
    kg = torch.arange(K) // 32
    golden = (a64 * torch.pow(2.0, sa.double() - 127)[:, kg]) @ \
        (b.double() * torch.pow(2.0, sb.double() - 127)[kg, :])
    return a, _pack_a(sa), b, _pack_b(sb), golden


def _run(src, tmp_path, monkeypatch, args, platform="a5sim"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/mx.py"), output_dir=tmp_path / "out", platform=platform)
    run(*args)
    return (tmp_path / "out" / "ptoas" / "k.pto").read_text()


def _e8m0(x):
    return x.view(torch.float8_e8m0fnu)


@pytest.mark.parametrize("M, K, N", [(64, 128, 128), (16, 64, 32), (128, 256, 64)])
def test_matmul_mx_then_acc_is_exact(M, K, N, tmp_path, monkeypatch):
    body = STEP.format(k0=0) + """
        c = pl.matmul_mx(la, ls, rb, rs)
        c2 = pl.matmul_mx_acc(c, la, ls, rb, rs)
        o = pl.store(c2, [0, 0], o)"""
    a, sa, b, sb, golden = _inputs(M, K, N, seed=M + K)
    o = torch.zeros(M, N)
    pto = _run(_src(body, M, K, N), tmp_path, monkeypatch, (a, _e8m0(sa), b, _e8m0(sb), o))
    assert torch.equal(o, (2 * golden).float())
    assert "pto.tmatmul.mx ins(" in pto and "pto.tmatmul.mx.acc ins(" in pto
    assert "loc=scaling, dtype=!pto.f8E8M0" in pto and "blayout=row_major, slayout=row_major, fractal=32" in pto
    assert "#pto.layout<mx_a_zz>" in pto and "#pto.layout<mx_b_nn>" in pto


def test_fp4_data_cast_to_fp8_first(tmp_path, monkeypatch):
    body = """
        wide = pl.cast(pl.load(a, [0, 0], [M, K]), pl.FP8E4M3FN)
        la = pl.move(pl.move(wide, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(sa, [0, 0], [M, K // 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rb = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(sb, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.RightScale)
        o = pl.store(pl.matmul_mx(la, ls, rb, rs), [0, 0], o)"""
    a, sa, b, sb, golden = _inputs(64, 128, 64, fp4=True, seed=7)
    assert a.shape == (64, 64)                      # (pairs)
    o = torch.zeros(64, 64)
    pto = _run(_src(body, 64, 128, 64, A="FP4"), tmp_path, monkeypatch, (a, _e8m0(sa), b, _e8m0(sb), o))
    assert torch.equal(o, golden.float())
    assert "dtype=!pto.f4E2M1x2, rows=64, cols=64" in pto


def test_k_split_over_scale_windows(tmp_path, monkeypatch):
    """Two K steps read windows of the blocked scale tensors (offsets into MX_A_ZZ's columns
    and MX_B_NN's rows) and accumulate."""
    body = STEP.format(k0=0) + """
        c = pl.matmul_mx(la, ls, rb, rs)""" + STEP.format(k0=128) + """
        c = pl.matmul_mx_acc(c, la, ls, rb, rs)
        o = pl.store(c, [0, 0], o)"""
    a, sa, b, sb, golden = _inputs(32, 256, 64, seed=11)
    o = torch.zeros(32, 64)
    _run(_src(body, 32, 256, 64, KS=128), tmp_path, monkeypatch, (a, _e8m0(sa), b, _e8m0(sb), o))
    assert torch.equal(o, golden.float())


def test_uint8_scales_and_a_bias(tmp_path, monkeypatch):
    body = STEP.format(k0=0) + """
        bias = pl.load(bv, [0, 0], [1, N], target_memory=pl.Mem.Mat)
        o = pl.store(pl.matmul_mx_bias(la, ls, rb, rs, bias), [0, 0], o)"""
    a, sa, b, sb, golden = _inputs(32, 64, 32, seed=3)
    bias = torch.randn(1, 32)
    o = torch.zeros(32, 32)
    src = _src(body, 32, 64, 32, S="UINT8", extra="bv: pl.Tensor[[1, N], pl.FP32], ", extra_arg="bv, ")
    _run(src, tmp_path, monkeypatch, (a, sa, b, sb, bias, o))
    assert torch.allclose(o, (golden + bias.double()).float(), rtol=1e-6, atol=1e-6)


def test_the_dump_of_an_mx_program_parses_back():
    prog = pl.parse(_src(STEP.format(k0=0) + """
        o = pl.store(pl.matmul_mx(la, ls, rb, rs), [0, 0], o)"""), filename="/u/mx.py")
    text = prog.as_python()
    assert "pl.Tensor[[64, 4], pl.FP8E8M0, pl.MX_A_ZZ]" in text and "pl.Mem.LeftScale" in text
    ir.assert_structural_equal(prog, pl.parse(text, filename="/u/mx_dump.py"))


def test_on_a2a3_there_are_no_scale_buffers(tmp_path, monkeypatch):
    src = _src(STEP.format(k0=0) + """
        o = pl.store(pl.matmul_mx(la, ls, rb, rs), [0, 0], o)""")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    with pytest.raises(CodegenError, match=r"a5") as e:
        ir.compile(pl.parse(src, filename="/u/mx.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    assert e.value.span.line == 16 and "a5sim" in e.value.hint


@pytest.mark.parametrize("old, new, match", [
    ("c = pl.matmul_mx(la, ls, rb, rs)", "c = pl.matmul_mx(la, rs, rb, ls)", r"lhs_scale is a \[64, 4\] FP8E8M0"),
    ("c = pl.matmul_mx(la, ls, rb, rs)", "c = pl.matmul_mx(ls, ls, rb, rs)", r"lhs is a 2-D FP8E4M3FN tile"),
    ("c2 = pl.matmul_mx_acc(c, la, ls, rb, rs)", "c2 = pl.matmul_mx_acc(la, la, ls, rb, rs)",
     r"accumulator is an FP32"),
])
def test_operand_errors_are_typed(old, new, match):
    body = STEP.format(k0=0) + """
        c = pl.matmul_mx(la, ls, rb, rs)
        c2 = pl.matmul_mx_acc(c, la, ls, rb, rs)
        o = pl.store(c2, [0, 0], o)"""
    with pytest.raises(TypeCheckError, match=match):
        pl.parse(_src(body.replace(old, new)), filename="/u/mx.py")


def test_k_must_be_whole_cube_steps():
    with pytest.raises(TypeCheckError, match=r"K a multiple of 64, got K=32"):
        pl.parse(_src(STEP.format(k0=0) + """
        o = pl.store(pl.matmul_mx(la, ls, rb, rs), [0, 0], o)""", K=128, KS=32), filename="/u/mx.py")


def test_fp4_straight_into_the_matmul_says_cast_first():
    body = """
        la = pl.load(a, [0, 0], [M, K])
        ls = pl.move(pl.load(sa, [0, 0], [M, K // 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rb = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(sb, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.RightScale)
        o = pl.store(pl.matmul_mx(la, ls, rb, rs), [0, 0], o)"""
    with pytest.raises(TypeCheckError, match=r"(?s)matmul_mx does not work on FP4.*pl.cast it to pl.FP8E4M3FN"):
        pl.parse(_src(body, A="FP4"), filename="/u/mx.py")


QUANT = """
import pypto.language as pl

@pl.program
class Q:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.{SRC}], q: pl.Out[pl.Tensor[[16, 64], pl.FP4]],
          back: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        f4 = pl.cast(pl.load(x, [0, 0], [16, 64]), pl.FP4)
        q = pl.store(f4, [0, 0], q)
        back = pl.store(pl.cast(f4, pl.FP32), [0, 0], back)
        return q, back

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.{SRC}], q: pl.Out[pl.Tensor[[16, 64], pl.FP4]],
             back: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        q, back = self.k(x, q, back)
        return q, back
"""


def _fp4_codes(x):
    """e2m1 codes of x: the nearest value, ties to the even code, beyond 6 (and NaN) +-6."""
    mag = FP4_VALUES[:8]
    a = x.double().abs().nan_to_num(6.0).clamp(max=6.0)
    mids = (mag[:-1] + mag[1:]) / 2
    code = torch.zeros_like(a, dtype=torch.long)
    for c in range(7):                       # past midpoint c (or on it with an odd c): above c
        code += ((a > mids[c]) | ((a == mids[c]) & (c % 2 == 1))).long()
    return code + 8 * torch.signbit(x).long()


@pytest.mark.parametrize("src", ["FP32", "BF16", "FP16"])
def test_quantizing_to_fp4_rounds_to_nearest_even_and_saturates(src, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(QUANT.format(SRC=src), filename="/u/q.py"), output_dir=tmp_path / "out",
                     platform="a5sim")
    dtype = {"FP32": torch.float32, "BF16": torch.bfloat16, "FP16": torch.float16}[src]
    x = (torch.randn(16, 64, generator=torch.Generator().manual_seed(1)) * 3).to(dtype)
    edges = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 100.0, -0.25, -5.0, 0.3, -0.0, float("nan")]
    x[0, :len(edges)] = torch.tensor(edges).to(dtype)
    q = torch.zeros(16, 32, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    back = torch.zeros(16, 64)
    run(x, q, back)
    codes = _fp4_codes(x.float())
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).to(torch.uint8)
    assert torch.equal(q.view(torch.uint8), packed)
    assert torch.equal(back, FP4_VALUES[codes].float())


@pytest.mark.parametrize("body, err, match", [
    ("        t = pl.load(a, [0, 0], [M, K])\n        u = pl.add(t, t)", TypeCheckError, r"does not work on FP4"),
    ("        t = pl.cast(pl.load(sa, [0, 0], [M, K // 32]), pl.FP4)", TypeCheckError,
     r"FP4 is made from fp32, fp16 or bf16"),
    ("        t = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)", TypeCheckError, r"loaded into Vec"),
    ("        t = pl.load(a, [0, 1], [M, 64])", TypeCheckError, r"whole pairs"),
])
def test_what_fp4_refuses(body, err, match):
    with pytest.raises(err, match=match):
        pl.parse(_src(body + "\n        o = o", A="FP4"), filename="/u/mx.py")


def test_mx_layouts_need_whole_blocks_and_dn_is_not_built():
    bad = _src("        o = o").replace("sa: pl.Tensor[[M, K // 32], pl.FP8E8M0, pl.MX_A_ZZ]",
                                        "sa: pl.Tensor[[8, K // 32], pl.FP8E8M0, pl.MX_A_ZZ]", 1)
    with pytest.raises(ParserError, match=r"whole 16x2 blocks"):
        pl.parse(bad, filename="/u/mx.py")
    dn = _src("        o = o").replace("b: pl.Tensor[[K, N], pl.FP8E4M3FN]", "b: pl.Tensor[[K, N], pl.FP8E4M3FN, pl.DN]", 1)
    with pytest.raises(NotBuiltError, match=r"DN layout"):
        pl.parse(dn, filename="/u/mx.py")
