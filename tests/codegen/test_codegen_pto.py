"""The .pto generator on hand-built post-pass IR."""
from __future__ import annotations

import re

import pytest

import cg_programs as P
from pypto import dtype as dt
from pypto.codegen.pto import SUPPORTED_OPS, generate_kernel, generate_kernels, ptoas_level
from pypto.errors import CodegenError, Span
from pypto.ir.layout import tile_layout
from pypto.ir.nodes import (Assign, BinOp, Call, Const, For, FunctionType, If, MemorySpace as M,
                            Param, ParamDirection as PD, Program, Return, ScalarType, TileType,
                            Var)

OP = re.compile(r"^\s*(?:%[\w.$-]+ = )?((?:pto|arith|scf)\.[\w.]+)")


def ops(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        m = OP.match(line)
        if m and m.group(1) != "arith.constant":
            out.append(m.group(1))
    return out


def line_of(text: str, needle: str) -> str:
    hits = [ln for ln in text.splitlines() if needle in ln]
    assert hits, f"no line with {needle!r}"
    return hits[0]


def compile_pto_or_skip():
    try:
        from pypto.ptoas import compile_pto  # noqa: F401
    except ImportError as e:
        pytest.skip(f"pypto.ptoas.compile_pto is not available yet ({e})")
    return compile_pto


# ----------------------------------------------------------------------------- (a) quickstart
def test_quickstart_structure_and_addresses():
    text = generate_kernel(P.quickstart(), "add_incore_0")
    lines = text.splitlines()
    assert lines[0] == 'module attributes {pto.target_arch = "a2a3"} {'
    assert lines[1] == ("  func.func @add_incore_0(%arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32>, "
                        "%arg2: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {")
    assert lines[-3:] == ["    return", "  }", "}"]
    assert ops(text) == ["pto.make_tensor_view"] * 3 + [
        "pto.alloc_tile", "pto.partition_view", "pto.tload",
        "pto.alloc_tile", "pto.partition_view", "pto.tload",
        "pto.alloc_tile", "pto.tadd",
        "pto.partition_view", "pto.tstore"]
    # the add's result reuses a's buffer: both at address 0; b at 65536
    assert "%a__tile = pto.alloc_tile addr = %c0_i64 valid_row = %c128_index valid_col = %c128_index" in text
    assert "%b__tile = pto.alloc_tile addr = %c65536_i64 " in text
    assert "%t__tile = pto.alloc_tile addr = %c0_i64 " in text
    tb = ("!pto.tile_buf<loc=vec, dtype=f32, rows=128, cols=128, v_row=?, v_col=?, "
          "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    assert f"pto.tadd ins(%a__tile, %b__tile : {tb}, {tb}) outs(%t__tile : {tb}) loc(\"quickstart.py\":17:9)" in text
    assert ("%a__ssa_v0_view = pto.make_tensor_view %arg0, shape = [%c128_index, %c128_index], "
            "strides = [%c128_index, %c1_index] {layout = #pto.layout<nd>} : "
            "!pto.tensor_view<?x?xf32> loc(\"quickstart.py\":16:5)") in text
    assert ("pto.tstore ins(%t__tile : " + tb + ") outs(%out__ssa_v0_pview : "
            "!pto.partition_tensor_view<128x128xf32>) loc(\"quickstart.py\":17:9)") in text


def test_constants_first_deduplicated_sorted_no_loc():
    text = generate_kernel(P.quickstart(), "add_incore_0")
    body = text.splitlines()[2:]
    consts = [ln for ln in body if "arith.constant" in ln]
    first_other = next(i for i, ln in enumerate(body) if "arith.constant" not in ln)
    assert body[:first_other] == consts, "constants come first"
    assert len(consts) == len(set(consts))
    assert consts == ["    %c0_i64 = arith.constant 0 : i64",
                      "    %c65536_i64 = arith.constant 65536 : i64",
                      "    %c0_index = arith.constant 0 : index",
                      "    %c1_index = arith.constant 1 : index",
                      "    %c128_index = arith.constant 128 : index"]
    assert not any("loc(" in c for c in consts)


def test_every_op_line_has_a_loc_and_none_without_emit_loc():
    text = generate_kernel(P.quickstart(), "add_incore_0")
    for ln in text.splitlines():
        if OP.match(ln) and "arith.constant" not in ln:
            assert ln.endswith(")") and ' loc("quickstart.py":' in ln, ln
    bare = generate_kernel(P.quickstart(), "add_incore_0", emit_loc=False)
    assert "loc(" not in bare
    assert ops(bare) == ops(text)


@pytest.mark.parametrize("build", [P.quickstart, P.softmax, P.matmul_k, P.scale_add, P.dyn_kernel])
def test_deterministic_bytes(build):
    # two independently built (equal) programs, and two runs on one program
    a, b = build(), build()
    name = next(f.name for f in a.functions if f.is_kernel)
    t1 = generate_kernel(a, name)
    assert t1 == generate_kernel(a, name) == generate_kernel(b, name)
    assert t1.endswith("}\n")


def test_level2_without_memrefs_has_no_addr():
    prog = P.quickstart(planned=False)
    k = prog.get("add_incore_0")
    assert ptoas_level(k) == "level2"
    assert ptoas_level(P.quickstart().get("add_incore_0")) == "level3"
    text = generate_kernel(prog, "add_incore_0")
    allocs = [ln for ln in text.splitlines() if "pto.alloc_tile" in ln]
    assert len(allocs) == 3
    assert all("addr" not in ln and "valid_row = %c128_index" in ln for ln in allocs)
    assert "_i64" not in text


# ----------------------------------------------------------------------------- (b) softmax
def test_softmax_reductions_with_scratch():
    text = generate_kernel(P.softmax(), "softmax64_incore_0")
    assert ops(text) == ["pto.make_tensor_view"] * 2 + [
        "pto.alloc_tile", "pto.partition_view", "pto.tload",
        "pto.alloc_tile",                                  # tmp: tile.create is an alloc only
        "pto.alloc_tile", "pto.trowmax",
        "pto.alloc_tile", "pto.trowexpandsub",
        "pto.alloc_tile", "pto.texp",
        "pto.alloc_tile", "pto.trowsum",
        "pto.alloc_tile", "pto.trowexpanddiv",
        "pto.partition_view", "pto.tstore"]
    col = ("!pto.tile_buf<loc=vec, dtype=f32, rows=64, cols=1, v_row=?, v_col=?, "
           "blayout=col_major, slayout=none_box, fractal=512, pad=0>")
    full = ("!pto.tile_buf<loc=vec, dtype=f32, rows=64, cols=64, v_row=?, v_col=?, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    assert f"pto.trowmax ins(%t, %tmp : {full}, {full}) outs(%m : {col})" in text
    assert f"pto.trowsum ins(%e, %tmp : {full}, {full}) outs(%s : {col})" in text
    assert "%m = pto.alloc_tile addr = %c32768_i64 valid_row = %c64_index valid_col = %c1_index" in text
    assert "%tmp = pto.alloc_tile addr = %c16384_i64" in text
    assert line_of(text, "pto.trowmax").endswith('loc("kernels.py":62:9)')


# ----------------------------------------------------------------------------- (c) matmul
@pytest.mark.parametrize("planned", [True, False])
def test_matmul_k_loop(planned):
    text = generate_kernel(P.matmul_k(planned), "matmul_k_incore_0")
    assert "attributes {pto.kernel_kind = #pto.kernel_kind<cube>}" in text
    seq = ops(text)
    i = seq.index("scf.for")
    assert seq[:i] == ["pto.make_tensor_view"] * 3 + [
        "pto.alloc_tile", "pto.partition_view", "pto.tload",
        "pto.alloc_tile", "pto.tmov",
        "pto.alloc_tile", "pto.partition_view", "pto.tload",
        "pto.alloc_tile", "pto.tmov",
        "pto.alloc_tile", "pto.tmatmul"]
    assert seq[i + 1:] == [
        "pto.alloc_tile", "arith.muli", "pto.partition_view", "pto.tload",
        "pto.alloc_tile", "pto.tmov",
        "pto.alloc_tile", "arith.muli", "pto.partition_view", "pto.tload",
        "pto.alloc_tile", "pto.tmov",
        "pto.tmatmul.acc",
        "pto.partition_view", "pto.tstore"]
    lines = text.splitlines()
    assert "    scf.for %k = %c1_index to %c4_index step %c1_index {" in lines
    close = lines.index("    }")
    acc = line_of(text, "pto.tmatmul.acc")
    assert lines.index(acc) < close < lines.index(line_of(text, "pto.tstore"))
    # in place: the accumulator is both an input and the output, and it is the loop-invariant buffer
    assert acc.strip().startswith("pto.tmatmul.acc ins(%acc, %la__ssa_v1, %rb__ssa_v1 :")
    assert ") outs(%acc : !pto.tile_buf<loc=acc, dtype=f32, rows=64, cols=64, v_row=?, v_col=?, " \
           "blayout=col_major, slayout=row_major, fractal=1024, pad=0>)" in acc
    assert "pto.tstore ins(%acc :" in text
    assert text.count("%acc = pto.alloc_tile") == 1
    assert "offsets = [%c0_index, %0]" in text and "offsets = [%1, %c0_index]" in text
    assert "loc=left, dtype=f32, rows=64, cols=32, v_row=?, v_col=?, blayout=row_major, slayout=row_major" in text
    assert "loc=right, dtype=f32, rows=32, cols=64, v_row=?, v_col=?, blayout=row_major, slayout=col_major" in text
    assert "loc=mat, dtype=f32, rows=64, cols=32, v_row=?, v_col=?, blayout=col_major, slayout=row_major" in text
    if planned:
        assert "%tb = pto.alloc_tile addr = %c8192_i64 " in text
    else:
        assert "addr" not in text


def test_matmul_a5_left_layout():
    text = generate_kernel(P.matmul_k(), "matmul_k_incore_0", arch="a5")
    assert text.startswith('module attributes {pto.target_arch = "a5"} {')
    assert "loc=left, dtype=f32, rows=64, cols=32, v_row=?, v_col=?, blayout=col_major, slayout=row_major" in text


# ----------------------------------------------------------------------------- (d) scalar ops
def test_tile_scalar_ops():
    text = generate_kernel(P.scale_add(), "scale_add_incore_0")
    assert "func.func @scale_add_incore_0(%arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32>, %arg2: f32)" in text
    assert "    %cst = arith.constant 1.5 : f32" in text
    tb = ("!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=64, v_row=?, v_col=?, "
          "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    assert f"pto.tmuls ins(%t, %arg2 : {tb}, f32) outs(%u : {tb})" in text
    assert f"pto.tadds ins(%u, %cst : {tb}, f32) outs(%w : {tb})" in text
    const = generate_kernel(P.scale_add(scalar_param=False), "scale_add_incore_0")
    assert "%cst = arith.constant 2.0 : f32" in const and "%cst_1 = arith.constant 1.5 : f32" in const
    assert f"pto.tmuls ins(%t, %cst : {tb}, f32)" in const


def _vec_kernel(ops_body, extra_params=(), dtype=dt.FP32):
    """A one-tile kernel: t = load(x); <ops_body(t) -> list of (var, call)>; store."""
    x, y = P.tensor("x", [16, 64], dtype), P.tensor("y", [16, 64], dtype)
    t = P.tile("t", [16, 64], M.Vec, dtype=dtype)
    body = [Assign(t, P.load(x, [0, 0], [16, 64]), P.sp(3))]
    last = t
    for k, (v, call) in enumerate(ops_body(t)):
        body.append(Assign(v, call, P.sp(4 + k)))
        last = v
    body += [Assign(Var("y1", y.type), Call("tile.store", [last, P.tup(0, 0), y]), P.sp(20)),
             Return([y], P.sp(21))]
    params = [Param(x), Param(y, PD.Out)] + [Param(p) for p in extra_params]
    return Program("p", [P.kernel("k", params, body, span=P.sp(2, 5))], "kernels.py")


@pytest.mark.parametrize("op,pto", [("tile.exp", "texp"), ("tile.log", "tlog"), ("tile.sqrt", "tsqrt"),
                                    ("tile.rsqrt", "trsqrt"), ("tile.recip", "trecip"),
                                    ("tile.neg", "tneg"), ("tile.abs", "tabs"), ("tile.relu", "trelu")])
def test_unary_ops(op, pto):
    prog = _vec_kernel(lambda t: [(P.tile("u", [16, 64], M.Vec), Call(op, [t]))])
    assert f"pto.{pto} ins(%t : " in generate_kernel(prog, "k")


@pytest.mark.parametrize("op,pto", [("tile.add", "tadd"), ("tile.sub", "tsub"), ("tile.mul", "tmul"),
                                    ("tile.div", "tdiv"), ("tile.maximum", "tmax"),
                                    ("tile.minimum", "tmin")])
def test_binary_ops(op, pto):
    prog = _vec_kernel(lambda t: [(P.tile("u", [16, 64], M.Vec), Call(op, [t, t]))])
    assert f"pto.{pto} ins(%t, %t : " in generate_kernel(prog, "k")


@pytest.mark.parametrize("op,pto", [("tile.adds", "tadds"), ("tile.subs", "tsubs"),
                                    ("tile.muls", "tmuls"), ("tile.divs", "tdivs"),
                                    ("tile.maximums", "tmaxs"), ("tile.minimums", "tmins")])
def test_scalar_ops_with_index_math(op, pto):
    n = Var("n", ScalarType(dt.INT32))
    # t op (n * 2): the int32 scalar is computed then converted to the tile dtype
    expr = BinOp("*", n, Const(2, dt.INT32), dt.INT32)
    prog = _vec_kernel(lambda t: [(P.tile("u", [16, 64], M.Vec), Call(op, [t, expr]))], [n])
    text = generate_kernel(prog, "k")
    assert "%0 = arith.muli %arg2, %c2_i32 : i32" in text
    assert "%1 = arith.sitofp %0 : i32 to f32" in text
    assert f"pto.{pto} ins(%t, %1 : " in text


def test_broadcast_binary_becomes_expand():
    def body(t):
        tmp = P.tile("tmp", [16, 64], M.Vec)
        r = P.tile("r", [16, 1], M.Vec)
        c = P.tile("cs", [1, 64], M.Vec)
        return [(tmp, Call("tile.create", [P.tup(16, 64)], {"dtype": dt.FP32, "target_memory": M.Vec})),
                (r, Call("tile.row_min", [t, tmp])),
                (P.tile("a", [16, 64], M.Vec), Call("tile.sub", [t, r])),
                (c, Call("tile.col_max", [t])),
                (P.tile("b", [16, 64], M.Vec), Call("tile.mul", [t, c])),
                (P.tile("d", [16, 64], M.Vec), Call("tile.col_expand_add", [t, c]))]
    text = generate_kernel(_vec_kernel(body), "k")
    assert "pto.trowmin ins(%t, %tmp : " in text
    assert "pto.trowexpandsub ins(%t, %r : " in text
    assert "pto.tcolmax ins(%t : " in text
    assert "pto.tcolexpandmul ins(%t, %cs : " in text
    assert "pto.tcolexpandadd ins(%t, %cs : " in text
    assert "rows=1, cols=64, v_row=?, v_col=?, blayout=row_major" in text


def test_row_and_col_expand_broadcast_the_vector():
    def body(t):
        tmp = P.tile("tmp", [16, 64], M.Vec)
        r = P.tile("r", [16, 1], M.Vec)
        c = P.tile("cs", [1, 64], M.Vec)
        return [(tmp, Call("tile.create", [P.tup(16, 64)], {"dtype": dt.FP32, "target_memory": M.Vec})),
                (r, Call("tile.row_sum", [t, tmp])),
                (c, Call("tile.col_sum", [t])),
                (P.tile("rb", [16, 64], M.Vec), Call("tile.row_expand", [t, r])),
                (P.tile("cb", [16, 64], M.Vec), Call("tile.col_expand", [t, c]))]
    text = generate_kernel(_vec_kernel(body), "k")
    assert "pto.trowexpand ins(%r : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1," in text
    assert "outs(%rb : " in text
    assert "pto.tcolexpand ins(%cs : !pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=64," in text
    assert "outs(%cb : " in text


def test_cast_and_reshape():
    def body(t):
        h = P.tile("h", [16, 64], M.Vec, dtype=dt.FP16)
        r = P.tile("r", [1, 1024], M.Vec)
        return [(h, Call("tile.cast", [t], {"dtype": dt.FP16})),
                (P.tile("h2", [16, 64], M.Vec, dtype=dt.FP16), Call("tile.cast", [t], {"dtype": dt.FP16, "mode": "rint"})),
                (r, Call("tile.reshape", [t, P.tup(1, 1024)])),
                (P.tile("r2", [1, 1024], M.Vec), Call("tile.exp", [r])),
                (P.tile("back", [16, 64], M.Vec), Call("tile.reshape", [t, P.tup(16, 64)]))]
    text = generate_kernel(_vec_kernel(body), "k")
    assert "pto.tcvt ins(%t{rmode = #pto<round_mode ROUND>} : " in text
    assert "pto.tcvt ins(%t{rmode = #pto<round_mode RINT>} : " in text
    assert "outs(%h : !pto.tile_buf<loc=vec, dtype=f16, rows=16, cols=64," in text
    assert ("%r = pto.treshape %t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=?, v_col=?, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0> -> !pto.tile_buf<loc=vec, dtype=f32, "
            "rows=1, cols=1024, v_row=1, v_col=1024, blayout=row_major, slayout=none_box, fractal=512, pad=0>") in text
    assert "%r = pto.alloc_tile" not in text
    assert "pto.texp ins(%r : !pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=1024, v_row=1, v_col=1024" in text


def test_dynamic_dims_become_trailing_index_args():
    text = generate_kernel(P.dyn_kernel(), "relu_rows")
    assert "func.func @relu_rows(%arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32>, %arg2: i32, %M: index)" in text
    assert "%x_view = pto.make_tensor_view %arg0, shape = [%M, %c64_index], strides = [%c64_index, %c1_index]" in text
    assert "%0 = arith.index_cast %arg2 : i32 to index" in text
    assert "scf.for %i = %c0_index to %0 step %c1_index {" in text
    assert "pto.trelu ins(%t : " in text


def test_dynamic_inner_dim_stride_is_computed():
    N = P.DynDim("N")
    x = P.tensor("x", [4, 8, N])
    t = P.tile("t", [1, 8, 16], M.Vec)
    body = [Assign(t, P.load(x, [0, 0, 0], [1, 8, 16]), P.sp(3)),
            Assign(Var("x1", x.type), Call("tile.store", [t, P.tup(1, 0, 0), x]), P.sp(4)),
            Return([x], P.sp(5))]
    prog = Program("p", [P.kernel("k3", [Param(x, PD.InOut)], body, span=P.sp(2, 5))], "kernels.py")
    text = generate_kernel(prog, "k3")
    assert "%0 = arith.muli %c1_index, %N : index" in text
    assert "%1 = arith.muli %0, %c8_index : index" in text
    assert "shape = [%c4_index, %c8_index, %N], strides = [%1, %0, %c1_index]" in text
    assert ": !pto.tensor_view<?x?x?xf32>" in text
    assert "sizes = [%c1_index, %c8_index, %c16_index] : !pto.tensor_view<?x?x?xf32> -> !pto.partition_tensor_view<1x8x16xf32>" in text
    assert "rows=8, cols=16" in text


def test_unused_tensor_param_gets_no_view():
    prog = P.quickstart()
    k = prog.get("add_incore_0")
    extra = P.tensor("unused", [8, 8])
    k.params.insert(2, Param(extra))
    text = generate_kernel(prog, "add_incore_0")
    assert "%arg2: !pto.ptr<f32>, %arg3: !pto.ptr<f32>" in text
    assert "unused_view" not in text
    assert "pto.make_tensor_view %arg3" in text


def test_loop_carried_vector_tile_copies_at_level2():
    # acc = 0-init tile (create); for i: acc2 = add(acc_it, x_i); yield acc2 -> tmov into the carried buffer
    from pypto.ir.nodes import IterArg, Yield
    x, y = P.tensor("x", [64, 64]), P.tensor("y", [16, 64])
    acc0 = P.tile("acc", [16, 64], M.Vec)
    it = P.tile("acc_it", [16, 64], M.Vec)
    t = P.tile("t", [16, 64], M.Vec)
    acc2 = P.tile("acc2", [16, 64], M.Vec)
    rv = P.tile("acc_rv", [16, 64], M.Vec)
    i = Var("i", ScalarType(dt.INDEX))
    loop = For(i, Const(0, dt.INDEX), Const(4, dt.INDEX), Const(1, dt.INDEX), [
        Assign(t, P.load(x, [BinOp("*", i, Const(16, dt.INDEX), dt.INDEX), Const(0, dt.INDEX)], [16, 64]), P.sp(5)),
        Assign(acc2, Call("tile.add", [it, t]), P.sp(6)),
        Yield([acc2], P.sp(6))], [IterArg(it, acc0)], [rv], span=P.sp(4))
    body = [Assign(acc0, Call("tile.create", [P.tup(16, 64)], {"dtype": dt.FP32, "target_memory": M.Vec}), P.sp(3)),
            loop,
            Assign(Var("y1", y.type), Call("tile.store", [rv, P.tup(0, 0), y]), P.sp(7)),
            Return([y], P.sp(8))]
    prog = Program("p", [P.kernel("acc_k", [Param(x), Param(y, PD.Out)], body, span=P.sp(2, 5))], "kernels.py")
    text = generate_kernel(prog, "acc_k")
    assert "pto.tadd ins(%acc, %t : " in text
    assert "pto.tmov ins(%acc2 : " in text and ") outs(%acc : " in line_of(text, "pto.tmov")
    assert "pto.tstore ins(%acc : " in text


def test_if_without_results():
    n = Var("n", ScalarType(dt.INDEX))
    def body(t):
        return []
    prog = _vec_kernel(body, [n])
    k = prog.functions[0]
    u = P.tile("u", [16, 64], M.Vec)
    cond = BinOp(">", n, Const(0, dt.INDEX), dt.BOOL)
    k.body.insert(1, If(cond, [Assign(u, Call("tile.exp", [k.body[0].var]), P.sp(9))],
                        [Assign(P.tile("w", [16, 64], M.Vec), Call("tile.neg", [k.body[0].var]), P.sp(11))],
                        span=P.sp(8)))
    text = generate_kernel(prog, "k")
    assert "%0 = arith.cmpi sgt, %arg2, %c0_index : index" in text
    lines = [ln.strip() for ln in text.splitlines()]
    i = lines.index("scf.if %0 {")
    assert lines[i + 2].startswith("pto.texp") and lines[i + 3] == "} else {" and lines[i + 5].startswith("pto.tneg")


def test_generate_kernels_all():
    texts = generate_kernels(P.two_stage())
    assert list(texts) == ["stage0", "stage1"]


def test_layout_table():
    assert tile_layout(TileType((64, 64), dt.FP32, M.Vec)) == ("row_major", "none_box", 512)
    assert tile_layout(TileType((64, 1), dt.FP32, M.Vec)) == ("col_major", "none_box", 512)
    assert tile_layout(TileType((1, 1), dt.FP32, M.Vec)) == ("row_major", "none_box", 512)
    assert tile_layout(TileType((64,), dt.FP32, M.Vec)) == ("row_major", "none_box", 512)
    assert tile_layout(TileType((64, 64), dt.FP16, M.Mat)) == ("col_major", "row_major", 512)
    assert tile_layout(TileType((64, 64), dt.FP16, M.Left)) == ("row_major", "row_major", 512)
    assert tile_layout(TileType((64, 64), dt.FP16, M.Left), "a5") == ("col_major", "row_major", 512)
    assert tile_layout(TileType((64, 64), dt.FP16, M.Right)) == ("row_major", "col_major", 512)
    assert tile_layout(TileType((64, 64), dt.FP32, M.Acc)) == ("col_major", "row_major", 1024)
    with pytest.raises(ValueError):
        tile_layout(TileType((64, 64), dt.FP32, None))
    with pytest.raises(ValueError):
        tile_layout(TileType((64, 64), dt.FP32, M.Vec), "a9")


def test_printer_explicit_mode_uses_layout():
    from pypto.ir.printer import print_program
    text = print_program(P.softmax(), explicit=True)
    assert 'pl.TileView(blayout="col_major", slayout="none_box", fractal=512)' in text
    assert 'pl.TileView(blayout="row_major", slayout="none_box", fractal=512)' in text


def test_supported_ops_list():
    for op in ("tile.load", "tile.store", "tile.add", "tile.adds", "tile.exp", "tile.row_sum",
               "tile.col_sum", "tile.row_expand_div", "tile.col_expand_mul", "tile.cast",
               "tile.reshape", "tile.matmul", "tile.matmul_acc", "tile.move", "tile.create"):
        assert op in SUPPORTED_OPS
    from pypto.ir import ops
    # every tile op of the op table has its emitter (pypto.codegen.tileops, by family)
    assert {o for o in ops.OPS if o.startswith("tile.")} <= set(SUPPORTED_OPS)


# ----------------------------------------------------------------------------- negative
def _expect_error(prog, name, match, span=None):
    with pytest.raises(CodegenError, match=match) as ei:
        generate_kernel(prog, name)
    if span is not None:
        assert ei.value.span == span
        assert str(span) in str(ei.value)
    return ei.value


def test_unsupported_op_raises_with_span():
    bad = Span("kernels.py", 42, 7)
    prog = _vec_kernel(lambda t: [])
    k = prog.functions[0]
    k.body.insert(1, Assign(P.tile("u", [16, 64], M.Vec), Call("tile.sort", [k.body[0].var]), bad))
    _expect_error(prog, "k", "cannot generate PTO for tile.sort", bad)


@pytest.mark.parametrize("shape,space,match,hint", [
    ([4, 1], M.Vec, r"Vec tile of shape \[4, 1\] fp32 has a 16-byte column", r"\[8, 1\]"),
])
def test_misaligned_tile_shape_is_a_located_error(shape, space, match, hint):
    bad = Span("kernels.py", 9, 5)
    x = P.tensor("x", [64, 64])
    t = P.tile("t", shape, space)
    k = P.kernel("k", [Param(x)], [Assign(t, P.load(x, [0, 0], shape, space), bad), Return([], P.sp(10))],
                 ftype=FunctionType.AIV if space is M.Vec else FunctionType.AIC)
    e = _expect_error(Program("p", [k], "kernels.py"), "k", match, bad)
    assert re.search(hint, e.hint)


def test_a_vec_tile_with_rows_narrower_than_a_block_is_allocated_padded():
    x = P.tensor("x", [64, 64])
    t = P.tile("t", [16, 4], M.Vec)
    k = P.kernel("k", [Param(x)], [Assign(t, P.load(x, [0, 0], [16, 4], M.Vec), P.sp(9)), Return([], P.sp(10))],
                 ftype=FunctionType.AIV)
    text = generate_kernel(Program("p", [k], "kernels.py"), "k")
    assert "loc=vec, dtype=f32, rows=16, cols=8, v_row=16, v_col=4" in text


def _mat_then(space, shape):
    x = P.tensor("x", [64, 64])
    m = P.tile("m", shape, M.Mat)
    body = [Assign(m, P.load(x, [0, 0], shape, M.Mat), P.sp(8))]
    if space is not None:
        body.append(Assign(P.tile("l", shape, space), Call("tile.move", [m], {"target_memory": space}),
                           Span("kernels.py", 9, 5)))
    return Program("p", [P.kernel("k", [Param(x)], body + [Return([], P.sp(10))],
                                  ftype=FunctionType.AIC)], "kernels.py")


def test_a_mat_tile_that_is_not_whole_fractals_is_allocated_padded():
    # [16, 4] fp32 is half a 16x8 fractal: allocated [16, 8], its shape the data region
    text = generate_kernel(_mat_then(None, [16, 4]), "k")
    assert "loc=mat, dtype=f32, rows=16, cols=8, v_row=16, v_col=4" in text
    assert TileType((10, 48), dt.INT8, M.Mat).nbytes() == 16 * 64
    assert TileType((10, 48), dt.INT8, M.Vec).nbytes() == 10 * 64     # (its rows: whole 32-byte blocks)
    assert TileType((10, 64), dt.INT8, M.Vec).nbytes() == 10 * 64


def test_an_l0_tile_that_is_not_whole_fractals_is_a_located_error():
    e = _expect_error(_mat_then(M.Left, [16, 4]), "k",
                      r"Left tile of shape \[16, 4\] fp32 is not a whole number of 16x8 fractals",
                      Span("kernels.py", 9, 5))
    assert "multiple of 16" in e.hint


def test_tensor_op_in_kernel_raises():
    bad = Span("kernels.py", 7, 3)
    x = P.tensor("x", [16, 16])
    body = [Assign(Var("z", x.type), Call("tensor.add", [x, x]), bad), Return([x], P.sp(9))]
    prog = Program("p", [P.kernel("k", [Param(x, PD.InOut)], body)], "kernels.py")
    err = _expect_error(prog, "k", "tensor.add", bad)
    assert "ConvertTensorToTileOps" in (err.hint or "")


def test_row_reduce_without_scratch_raises():
    bad = Span("kernels.py", 11, 5)
    prog = _vec_kernel(lambda t: [])
    k = prog.functions[0]
    k.body.insert(1, Assign(P.tile("r", [16, 1], M.Vec), Call("tile.row_sum", [k.body[0].var]), bad))
    _expect_error(prog, "k", "scratch tile", bad)


def test_tile_without_memory_space_raises():
    bad = Span("kernels.py", 12, 5)
    prog = _vec_kernel(lambda t: [])
    k = prog.functions[0]
    k.body.insert(1, Assign(Var("u", TileType((16, 64), dt.FP32, None)), Call("tile.exp", [k.body[0].var]), bad))
    _expect_error(prog, "k", "no memory space", bad)


def test_matmul_operand_in_wrong_space_raises():
    prog = P.matmul_k(planned=False)
    k = prog.functions[0]
    mm = next(s for s in k.body if isinstance(s, Assign) and s.value.op == "tile.matmul")
    ta = k.body[0].var                          # a Mat tile
    mm.value = Call("tile.matmul", [ta, mm.value.args[1]])
    _expect_error(prog, "matmul_k_incore_0", "operand in Mat, expected Left", mm.span)


def test_missing_data_path_raises():
    prog = _vec_kernel(lambda t: [(P.tile("m", [16, 64], M.Mat), Call("tile.move", [t], {"target_memory": M.Mat}))])
    _expect_error(prog, "k", "no Vec -> Mat data path on a2a3")
    # a5 has the path, but a vector kernel has no Mat buffer
    with pytest.raises(CodegenError, match="vector \\(AIV\\) kernel, which has only Vec"):
        generate_kernel(prog, "k", arch="a5")
    prog.functions[0].func_type = FunctionType.InCore
    assert "pto.tmov" in generate_kernel(prog, "k", arch="a5")


def test_mixed_planned_and_unplanned_tiles_raise():
    prog = P.quickstart()
    k = prog.functions[0]
    add = next(s for s in k.body if isinstance(s, Assign) and getattr(s.value, "op", "") == "tile.add")
    add.var = Var("t_free", TileType((128, 128), dt.FP32, M.Vec, None))
    k.body[-2].value.args[0] = add.var
    _expect_error(prog, "add_incore_0", "no MemRef", add.span)


def test_not_a_kernel_raises():
    with pytest.raises(CodegenError, match="only InCore/AIC/AIV"):
        generate_kernel(P.quickstart(), "add")
    with pytest.raises(CodegenError, match="no function named"):
        generate_kernel(P.quickstart(), "nope")


def test_scalar_iter_arg_is_an_scf_for_iter_arg():
    from pypto.ir.nodes import IterArg, Yield
    prog = _vec_kernel(lambda t: [])
    k = prog.functions[0]
    i = Var("i", ScalarType(dt.INDEX))
    s = Var("s", ScalarType(dt.INDEX))
    s2 = Var("s2", ScalarType(dt.INDEX))
    loop = For(i, Const(0, dt.INDEX), Const(2, dt.INDEX), Const(1, dt.INDEX),
               [Assign(s2, BinOp("+", s, i, dt.INDEX)), Yield([s2])],
               [IterArg(s, Const(0, dt.INDEX))], [Var("s3", ScalarType(dt.INDEX))], span=P.sp(30))
    k.body.insert(1, loop)
    text = generate_kernel(prog, "k")
    assert "iter_args(%s = %c0_index) -> (index)" in text and "scf.yield" in text


# ----------------------------------------------------------------------------- ptoas
@pytest.mark.parametrize("build,name", [(P.quickstart, "add_incore_0"),
                                        (P.softmax, "softmax64_incore_0"),
                                        (P.matmul_k, "matmul_k_incore_0"),
                                        (P.scale_add, "scale_add_incore_0"),
                                        (P.dyn_kernel, "relu_rows")])
def test_ptoas_accepts_level3(build, name):
    compile_pto = compile_pto_or_skip()
    prog = build()
    text = generate_kernel(prog, name)
    compile_pto(text, arch="a2a3", level=ptoas_level(prog.get(name)))


@pytest.mark.parametrize("build,name", [(lambda: P.quickstart(planned=False), "add_incore_0"),
                                        (lambda: P.matmul_k(planned=False), "matmul_k_incore_0")])
def test_ptoas_accepts_level2(build, name):
    compile_pto = compile_pto_or_skip()
    prog = build()
    assert ptoas_level(prog.get(name)) == "level2"
    compile_pto(generate_kernel(prog, name), arch="a2a3", level="level2")


def test_func_type_incore_has_no_kernel_kind():
    prog = P.quickstart()
    prog.functions[0].func_type = FunctionType.InCore
    text = generate_kernel(prog, "add_incore_0")
    assert "pto.kernel_kind" not in text
    assert "func.func @add_incore_0(%arg0: !pto.ptr<f32>, %arg1: !pto.ptr<f32>, %arg2: !pto.ptr<f32>) {" in text


# ----------------------------------------------------------------------------- planners
def _unplanned_quickstart():
    """The PTOAS planner's IR: one tile.alloc per buffer group, every MemRef at offset 0."""
    prog = P.quickstart()
    k = prog.functions[0]
    ptrs = [s.var for s in k.body if isinstance(s, Assign) and s.value.op == "tile.alloc"]
    for s in k.body:
        if isinstance(s, Assign) and isinstance(s.var.type, TileType):
            t, m = s.var.type, s.var.type.memref
            s.var.type = TileType(t.shape, t.dtype, t.memory_space, P.MemRef(m.base, 0, m.size))
    return prog, ptrs


def test_planner_inferred_from_overlapping_allocations():
    prog, _ = _unplanned_quickstart()
    k = prog.functions[0]
    assert ptoas_level(k) == "level2"
    text = generate_kernel(prog, "add_incore_0")
    assert "addr" not in text and text.count("pto.alloc_tile") == 2


def test_explicit_planner_wins():
    prog = P.quickstart()
    k = prog.functions[0]
    assert ptoas_level(k, "PTOAS") == "level2"
    assert ptoas_level(k, "DSA_RP") == "level3" and ptoas_level(k, "pypto") == "level3"
    assert "addr" not in generate_kernel(prog, "add_incore_0", memory_planner="PTOAS")
    with pytest.raises(CodegenError, match="unknown memory planner"):
        generate_kernel(prog, "add_incore_0", memory_planner="LINEAR")


def test_level2_tiles_of_one_buffer_are_one_value():
    """Without addresses, tiles the passes put in one buffer (here t reuses a's) must be
    the same SSA value, or ptoas would plan them apart."""
    prog = P.quickstart()
    text = generate_kernel(prog, "add_incore_0", memory_planner="PTOAS")
    assert text.count("pto.alloc_tile") == 2
    assert "pto.tadd ins(%a__tile, %b__tile : " in text and "outs(%a__tile : " in text
    assert "pto.tstore ins(%a__tile : " in text


def test_level2_loop_carried_group_needs_no_copy():
    text = generate_kernel(P.matmul_k(), "matmul_k_incore_0", memory_planner="PTOAS")
    assert "addr" not in text and "pto.tmov ins(%acc" not in text
    assert text.count("%acc = pto.alloc_tile") == 1
    # the loads inside the loop reuse the buffers of the loads before it (same MemRef)
    seq = ops(text)
    loop = seq[seq.index("scf.for"):]
    assert "pto.alloc_tile" not in loop
