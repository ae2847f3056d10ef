"""Each tile-op group, compiled through ptoas + g++ and compared with numpy."""
import struct

import numpy as np
import pytest

from abi_helper import BF16, scalar_bits
from ptogen import Pto

R, C = 16, 32
rng = np.random.default_rng(7)


def _stack(k: int, cols: int = C):
    return np.zeros((k * R, cols), np.float32)


def test_elementwise_binary_and_broadcast(make_kernel):
    plain = ["tadd", "tsub", "tmul", "tdiv", "tmax", "tmin"]
    bcast = ["tadd", "tsub", "tmul", "tdiv"]
    n = len(plain) + 2 * len(bcast)
    p = Pto("binary", [("f32", (R, C)), ("f32", (R, C)), ("f32", (R, 1)), ("f32", (1, C)), ("f32", (n * R, C))])
    a, b = p.tile("a", "vec", "f32", R, C), p.tile("b", "vec", "f32", R, C)
    r, c = p.tile("r", "vec", "f32", R, 1), p.tile("c", "vec", "f32", 1, C)
    d = p.tile("d", "vec", "f32", R, C)
    for t, i in ((a, 0), (b, 1), (r, 2), (c, 3)):
        p.load(t, i)
    k = 0
    for second in (None, r, c):
        for name in (plain if second is None else bcast):
            p.op(name, [a, second or b], d)
            p.store(d, 4, (k * R, 0))
            k += 1
    kern = make_kernel(p.text())
    A = rng.standard_normal((R, C), dtype=np.float32)
    B = rng.uniform(0.5, 2, (R, C)).astype(np.float32)
    Rv = rng.uniform(0.5, 2, (R, 1)).astype(np.float32)
    Cv = rng.uniform(0.5, 2, (1, C)).astype(np.float32)
    out = _stack(n)
    assert kern(A, B, Rv, Cv, out) is None
    fns = {"tadd": np.add, "tsub": np.subtract, "tmul": np.multiply, "tdiv": np.divide,
           "tmax": np.maximum, "tmin": np.minimum}
    want = [fns[f](A, B) for f in plain] + [fns[f](A, Rv) for f in bcast] + [fns[f](A, Cv) for f in bcast]
    np.testing.assert_allclose(out, np.concatenate(want), rtol=1e-6)


def test_tile_scalar_ops_with_argument_and_constant(make_kernel):
    names = ["tadds", "tsubs", "tmuls", "tdivs", "tmaxs", "tmins", "tlrelu"]
    p = Pto("scalar", [("f32", (R, C)), ("f32", (2 * len(names) * R, C))], scalars=("f32",))
    a, d = p.tile("a", "vec", "f32", R, C), p.tile("d", "vec", "f32", R, C)
    p.load(a, 0)
    k2 = p.scalar_const(-0.75, "f32")
    k = 0
    for s in ("%arg2", k2):
        for name in names:
            p.op(name, [a, s], d)
            p.store(d, 1, (k * R, 0))
            k += 1
    kern = make_kernel(p.text())
    A = rng.standard_normal((R, C), dtype=np.float32)
    out = _stack(2 * len(names))
    assert kern(A, out, scalars=[scalar_bits(1.5, "f32")]) is None
    want = []
    for s in (np.float32(1.5), np.float32(-0.75)):
        want += [A + s, A - s, A * s, A / s, np.maximum(A, s), np.minimum(A, s), np.where(A > 0, A, A * s)]
    np.testing.assert_allclose(out, np.concatenate(want), rtol=1e-6)


def test_unary_ops(make_kernel):
    names = ["texp", "tlog", "tsqrt", "trsqrt", "trecip", "tneg", "tabs", "trelu"]
    p = Pto("unary", [("f32", (R, C)), ("f32", (R, C)), ("f32", (len(names) * R, C))])
    pos, mixed, d = (p.tile(n, "vec", "f32", R, C) for n in ("pos", "mixed", "d"))
    p.load(pos, 0)
    p.load(mixed, 1)
    for k, name in enumerate(names):
        p.op(name, [pos if k < 5 else mixed], d)
        p.store(d, 2, (k * R, 0))
    kern = make_kernel(p.text())
    P = rng.uniform(0.1, 4, (R, C)).astype(np.float32)
    M = rng.standard_normal((R, C), dtype=np.float32)
    out = _stack(len(names))
    assert kern(P, M, out) is None
    want = [np.exp(P), np.log(P), np.sqrt(P), 1 / np.sqrt(P), 1 / P, -M, np.abs(M), np.maximum(M, 0)]
    np.testing.assert_allclose(out, np.concatenate(want), rtol=1e-6)


def test_row_and_column_reductions(make_kernel):
    p = Pto("reduce", [("f32", (R, C)), ("f32", (3 * R, 1)), ("f32", (3, C))])
    a, tmp = p.tile("a", "vec", "f32", R, C), p.tile("tmp", "vec", "f32", R, C)
    rv, cv = p.tile("rv", "vec", "f32", R, 1), p.tile("cv", "vec", "f32", 1, C)
    p.load(a, 0)
    for k, name in enumerate(["trowsum", "trowmax", "trowmin"]):
        p.op(name, [a, tmp], rv)
        p.store(rv, 1, (k * R, 0))
    for k, name in enumerate(["tcolsum", "tcolmax", "tcolmin"]):
        p.op(name, [a], cv)
        p.store(cv, 2, (k, 0))
    kern = make_kernel(p.text())
    A = rng.standard_normal((R, C), dtype=np.float32)
    rows, cols = np.zeros((3 * R, 1), np.float32), np.zeros((3, C), np.float32)
    assert kern(A, rows, cols) is None
    np.testing.assert_allclose(rows, np.concatenate([A.sum(1, keepdims=True), A.max(1, keepdims=True),
                                                     A.min(1, keepdims=True)]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cols, np.stack([A.sum(0), A.max(0), A.min(0)]), rtol=1e-5, atol=1e-6)


def test_expands_and_fill(make_kernel):
    ops = ["trowexpandadd", "trowexpandsub", "trowexpandmul", "trowexpanddiv", "trowexpand",
           "tcolexpandadd", "tcolexpandsub", "tcolexpandmul", "tcolexpanddiv", "tcolexpand", "texpands"]
    p = Pto("expand", [("f32", (R, C)), ("f32", (R, 1)), ("f32", (1, C)), ("f32", (len(ops) * R, C))])
    a, rv, cv, d = (p.tile("a", "vec", "f32", R, C), p.tile("rv", "vec", "f32", R, 1),
                    p.tile("cv", "vec", "f32", 1, C), p.tile("d", "vec", "f32", R, C))
    p.load(a, 0)
    p.load(rv, 1)
    p.load(cv, 2)
    for k, name in enumerate(ops):
        if name == "texpands":
            ins = [p.scalar_const(3.25, "f32")]
        elif name in ("trowexpand", "tcolexpand"):
            ins = [rv if name.startswith("trow") else cv]
        else:
            ins = [a, rv if name.startswith("trow") else cv]
        p.op(name, ins, d)
        p.store(d, 3, (k * R, 0))
    kern = make_kernel(p.text())
    A = rng.standard_normal((R, C), dtype=np.float32)
    Rv = rng.uniform(0.5, 2, (R, 1)).astype(np.float32)
    Cv = rng.uniform(0.5, 2, (1, C)).astype(np.float32)
    out = _stack(len(ops))
    assert kern(A, Rv, Cv, out) is None
    ones = np.ones((R, C), np.float32)
    want = [A + Rv, A - Rv, A * Rv, A / Rv, Rv * ones, A + Cv, A - Cv, A * Cv, A / Cv, Cv * ones,
            np.full((R, C), 3.25, np.float32)]
    np.testing.assert_allclose(out, np.concatenate(want), rtol=1e-6)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """Reference round-to-nearest-even f32 -> bf16 (NaN stays NaN)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 65520.0, 1e6, -1e6, np.inf, -np.inf, np.nan,
                     6.1e-5, 5.96e-8, 2.98e-8, 2.99e-8, 1e-9, 1 + 2 ** -11, 1 + 3 * 2 ** -11,
                     2049.0, 2051.0, 0.1, 3.0e38, 1e-40, -2.5, 1.5, 2.5],
                    dtype=np.float32)


def _cvt_inputs():
    x = (rng.standard_normal((R, C)) * np.exp(rng.uniform(-20, 12, (R, C)))).astype(np.float32)
    x.flat[: SPECIALS.size] = SPECIALS
    return x


def test_tcvt_float16_and_bfloat16_round_to_nearest_even(make_kernel):
    p = Pto("cvt16", [("f32", (R, C)), ("f16", (R, C)), ("bf16", (R, C)), ("f32", (2 * R, C))])
    x = p.tile("x", "vec", "f32", R, C)
    h = p.tile("h", "vec", "f16", R, C)
    b = p.tile("b", "vec", "bf16", R, C)
    y = p.tile("y", "vec", "f32", R, C)
    p.load(x, 0)
    p.op("tcvt", [x], h, attrs="{rmode = #pto<round_mode RINT>}")
    p.store(h, 1)
    p.op("tcvt", [x], b, attrs="{rmode = #pto<round_mode RINT>}")
    p.store(b, 2)
    p.op("tcvt", [h], y)
    p.store(y, 3, (0, 0))
    p.op("tcvt", [b], y)
    p.store(y, 3, (R, 0))
    kern = make_kernel(p.text())
    X = _cvt_inputs()
    H = np.zeros((R, C), np.float16)
    B = np.zeros((R, C), np.uint16)
    back = np.zeros((2 * R, C), np.float32)
    assert kern(X, H, (B, BF16), back) is None
    with np.errstate(over="ignore"):
        want_h = X.astype(np.float16)
    np.testing.assert_array_equal(H.view(np.uint16)[~np.isnan(X)], want_h.view(np.uint16)[~np.isnan(X)])
    assert np.isnan(H[np.isnan(X)]).all()
    np.testing.assert_array_equal(B, _bf16_bits(X))
    np.testing.assert_array_equal(back[:R], want_h.astype(np.float32))
    want_b = (_bf16_bits(X).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(back[R:], want_b)


def test_tcvt_every_float16_value_widens_exactly(make_kernel):
    rows = 2048 // C
    p = Pto("widen", [("f16", (rows, C)), ("f32", (rows, C))])
    h, y = p.tile("h", "vec", "f16", rows, C), p.tile("y", "vec", "f32", rows, C)
    p.load(h, 0)
    p.op("tcvt", [h], y)
    p.store(y, 1)
    kern = make_kernel(p.text())
    allbits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    for start in range(0, 65536, 2048):
        chunk = np.ascontiguousarray(allbits[start:start + 2048].view(np.float16).reshape(rows, C))
        out = np.zeros((rows, C), np.float32)
        assert kern(chunk, out) is None
        want = chunk.astype(np.float32)
        same = (out.view(np.uint32) == want.view(np.uint32)) | (np.isnan(want) & np.isnan(out))
        assert same.all(), start


@pytest.mark.parametrize("mode,fn", [("RINT", np.rint), ("ROUND", lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)),
                                     ("FLOOR", np.floor), ("CEIL", np.ceil), ("TRUNC", np.trunc)])
def test_tcvt_float_to_int_round_modes_and_back(make_kernel, mode, fn):
    p = Pto("cvtint", [("f32", (R, C)), ("i32", (R, C)), ("f32", (R, C))])
    x, i, y = p.tile("x", "vec", "f32", R, C), p.tile("i", "vec", "i32", R, C), p.tile("y", "vec", "f32", R, C)
    p.load(x, 0)
    p.op("tcvt", [x], i, attrs=f"{{rmode = #pto<round_mode {mode}>}}")
    p.store(i, 1)
    p.op("tcvt", [i], y)
    p.store(y, 2)
    kern = make_kernel(p.text())
    X = (rng.standard_normal((R, C)) * 10).astype(np.float32)
    X.flat[:6] = [0.5, 1.5, 2.5, -0.5, -2.5, 3e10]
    Iv, Y = np.zeros((R, C), np.int32), np.zeros((R, C), np.float32)
    assert kern(X, Iv, Y) is None
    want = np.clip(fn(X.astype(np.float64)), -2 ** 31, 2 ** 31 - 1).astype(np.int32)
    np.testing.assert_array_equal(Iv, want)
    np.testing.assert_array_equal(Y, want.astype(np.float32))


def _cube(name, a_dt, b_dt, acc_dt, out_dt, M, K, N, *, bias=False):
    tensors = [(a_dt, (M, K)), (b_dt, (K, N)), (out_dt, (M, N))]
    if bias:
        tensors.append(("f32", (1, N)))
    p = Pto(name, tensors, kind="cube")
    ma, mb = p.tile("ma", "mat", a_dt, M, K), p.tile("mb", "mat", b_dt, K, N)
    la, rb = p.tile("la", "left", a_dt, M, K), p.tile("rb", "right", b_dt, K, N)
    acc = p.tile("acc", "acc", acc_dt, M, N)
    p.load(ma, 0)
    p.load(mb, 1)
    p.op("tmov", [ma], la)
    p.op("tmov", [mb], rb)
    if bias:
        mbias = p.tile("mbias", "mat", "f32", 1, N, blayout="row_major", slayout="none_box")
        bt = p.tile("bt", "bias", "f32", 1, N)
        p.load(mbias, 3)
        p.op("tmov", [mbias], bt)
        p.op("tmatmul.bias", [la, rb, bt], acc)
    else:
        p.op("tmatmul", [la, rb], acc)
        p.op("tmatmul.acc", [acc, la, rb], acc)  # acc = 2 * a @ b
    p.store(acc, 2)
    return p.text()


def test_matmul_int8_accumulates_in_int32(make_kernel):
    kern = make_kernel(_cube("mm_i8", "i8", "i8", "i32", "i32", 16, 64, 32), core="aic")
    A = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    B = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    out = np.zeros((16, 32), np.int32)
    assert kern(A, B, out) is None
    np.testing.assert_array_equal(out, 2 * (A.astype(np.int32) @ B.astype(np.int32)))


def test_matmul_f16_stores_acc_as_f16(make_kernel):
    kern = make_kernel(_cube("mm_f16", "f16", "f16", "f32", "f16", 32, 32, 16), core="aic")
    A = rng.standard_normal((32, 32)).astype(np.float16)
    B = rng.standard_normal((32, 16)).astype(np.float16)
    out = np.zeros((32, 16), np.float16)
    assert kern(A, B, out) is None
    want = (2 * (A.astype(np.float32) @ B.astype(np.float32))).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_matmul_bf16_with_bias(make_kernel):
    kern = make_kernel(_cube("mm_bf16", "bf16", "bf16", "f32", "f32", 16, 32, 16, bias=True), core="aic")
    A = rng.standard_normal((16, 32)).astype(np.float32)
    B = rng.standard_normal((32, 16)).astype(np.float32)
    bias = rng.standard_normal((1, 16)).astype(np.float32)
    Ab, Bb = _bf16_bits(A), _bf16_bits(B)
    out = np.zeros((16, 16), np.float32)
    assert kern((Ab, BF16), (Bb, BF16), out, bias) is None
    a32 = (Ab.astype(np.uint32) << 16).view(np.float32)
    b32 = (Bb.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(out, a32 @ b32 + bias, rtol=1e-5, atol=1e-5)


def test_acc_to_vec_tmov_runs_on_a5(make_kernel):
    p = Pto("fused", [("f32", (16, 16)), ("f32", (16, 16)), ("f32", (16, 16))], kind="", arch="a5")
    ma, mb = p.tile("ma", "mat", "f32", 16, 16), p.tile("mb", "mat", "f32", 16, 16)
    la, rb = p.tile("la", "left", "f32", 16, 16), p.tile("rb", "right", "f32", 16, 16)
    acc, v = p.tile("acc", "acc", "f32", 16, 16), p.tile("v", "vec", "f32", 16, 16)
    p.load(ma, 0)
    p.load(mb, 1)
    p.op("tmov", [ma], la)
    p.op("tmov", [mb], rb)
    p.op("tmatmul", [la, rb], acc)
    p.op("tmov", [acc], v)
    p.op("trelu", [v], v)
    p.store(v, 2)
    kern = make_kernel(p.text(), arch="a5", core="aic")
    A, B = rng.standard_normal((2, 16, 16), dtype=np.float32)
    out = np.zeros((16, 16), np.float32)
    assert kern(A, B, out) is None
    np.testing.assert_allclose(out, np.maximum(A @ B, 0), rtol=1e-5, atol=1e-5)


def test_ttrans_and_treshape(make_kernel):
    p = Pto("shape", [("f32", (16, 32)), ("f32", (32, 16)), ("f32", (32, 16))])
    a, t = p.tile("a", "vec", "f32", 16, 32), p.tile("t", "vec", "f32", 32, 16)
    tmp = p.tile("tmp", "vec", "f32", 16, 32)
    p.load(a, 0)
    p.op("ttrans", [a, tmp], t)
    p.store(t, 1)
    ty = "!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=16, v_row=32, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    p.emit(f"%re = pto.treshape {a} : {p.types[a]} -> {ty}")
    p.types["%re"] = ty
    p.store("%re", 2)
    kern = make_kernel(p.text())
    A = rng.standard_normal((16, 32), dtype=np.float32)
    T, Re = np.zeros((32, 16), np.float32), np.zeros((32, 16), np.float32)
    assert kern(A, T, Re) is None
    np.testing.assert_array_equal(T, A.T)
    np.testing.assert_array_equal(Re, A.reshape(32, 16))


LOOP = """\
module attributes {pto.target_arch = "a2a3"} {
  func.func @loop(%arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32>, %arg2: f32, %arg3: i32) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c0_i64 = arith.constant 0 : i64
    %half = arith.constant 0.5 : f32
    %n = arith.index_cast %arg3 : i32 to index loc("loop.py":3:5)
    %rows = arith.muli %n, %c16 : index loc("loop.py":4:5)
    %x = pto.make_tensor_view %arg0, shape = [%rows, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32> loc("loop.py":5:5)
    %y = pto.make_tensor_view %arg1, shape = [%rows, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32> loc("loop.py":6:5)
    %t = pto.alloc_tile addr = %c0_i64 valid_row = %c16 valid_col = %c32 : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0> loc("loop.py":7:5)
    %final = scf.for %i = %c0 to %n step %c1 iter_args(%s = %arg2) -> (f32) {
      %off = arith.muli %i, %c16 : index loc("loop.py":9:9)
      %p = pto.partition_view %x, offsets = [%off, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x32xf32> loc("loop.py":10:9)
      pto.tload ins(%p : !pto.partition_tensor_view<16x32xf32>) outs(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0>) loc("loop.py":11:9)
      %rem = arith.remsi %i, %c2 : index loc("loop.py":12:9)
      %even = arith.cmpi eq, %rem, %c0 : index loc("loop.py":12:9)
      scf.if %even {
        pto.tadds ins(%t, %s : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0>, f32) outs(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0>) loc("loop.py":14:13)
      } else {
        pto.tmuls ins(%t, %s : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0>, f32) outs(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0>) loc("loop.py":16:13)
      }
      %q = pto.partition_view %y, offsets = [%off, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x32xf32> loc("loop.py":17:9)
      pto.tstore ins(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%q : !pto.partition_tensor_view<16x32xf32>) loc("loop.py":18:9)
      %next = arith.addf %s, %half : f32 loc("loop.py":19:9)
      scf.yield %next : f32
    }
    return
  }
}
"""


def test_scf_for_iter_args_if_and_dynamic_shapes(make_kernel):
    kern = make_kernel(LOOP)
    n = 5
    X = rng.standard_normal((n * 16, 32), dtype=np.float32)
    Y = np.zeros_like(X)
    assert kern(X, Y, scalars=[scalar_bits(1.0, "f32"), n]) is None
    want = X.copy()
    for i in range(n):
        s = np.float32(1.0 + 0.5 * i)
        blk = want[i * 16:(i + 1) * 16]
        blk[:] = blk + s if i % 2 == 0 else blk * s
    np.testing.assert_allclose(Y, want, rtol=1e-6)


def test_kernel_info_reports_bytes_per_space(make_kernel):
    kern = make_kernel(_cube("mm_info", "f16", "f16", "f32", "f32", 32, 32, 16), core="aic")
    info = kern.info()
    assert info["name"] == "mm_info" and info["kernel_kind"] == "cube" and info["arch"] == "a2a3"
    assert info["bytes_used"] == {"acc": 32 * 16 * 4, "left": 32 * 32 * 2, "mat": 32 * 32 * 2 + 32 * 16 * 2,
                                  "right": 32 * 16 * 2}
    assert info["tensor_params"] == 3 and info["scalar_params"] == 0


def test_struct_roundtrip_sanity():
    assert scalar_bits(1.0, "f32") == struct.unpack("<I", struct.pack("<f", 1.0))[0]
