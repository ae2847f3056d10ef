"""Programs the verifier (and planner) must reject, each with a located message."""
from pathlib import Path

import pytest

from ptogen import Pto, tile_type
from pypto.ptoas import PtoasError, compile_pto

DATA = Path(__file__).parent / "data"

ADD = (DATA / "quickstart_add_incore_0.pto").read_text()


def rejects(text: str, *, arch: str = "a2a3", level: str = "level3") -> PtoasError:
    with pytest.raises(PtoasError) as info:
        compile_pto(text, arch=arch, level=level)
    return info.value


def test_level3_requires_addr_on_every_alloc():
    text = ADD.replace("addr = %c65536_i64 ", "", 1)
    e = rejects(text)
    assert "level3 requires 'addr" in str(e)
    assert str(e).startswith("quickstart.py:16:5: error:")  # the op's loc comes first
    assert e.loc == "quickstart.py:16:5" and e.line == 14  # the .pto line too


def test_level2_forbids_addr():
    e = rejects(ADD, level="level2")
    assert "level2 forbids 'addr" in str(e)


def test_sample_passes_unmodified():
    compile_pto(ADD)


def _vec_tile_prog(rows: int, cols: int, addr, dtype: str = "f32", arch: str = "a2a3", **layout) -> str:
    p = Pto("k", [(dtype, (rows, cols))], arch=arch)
    t = p.tile("t", "vec", dtype, rows, cols, addr=addr, **layout)
    p.load(t, 0)
    return p.text()


def test_capacity_overflow_depends_on_arch():
    text = _vec_tile_prog(128, 128, 131072)  # [128 KiB, 192 KiB) > 184 KiB of a2a3 UB
    e = rejects(text)
    assert "overflows 'vec'" in str(e) and "188416" in str(e) and str(e).startswith("t.py:")
    compile_pto(text.replace('"a2a3"', '"a5"'), arch="a5")  # 240 KiB on a5


def test_misaligned_address():
    e = rejects(_vec_tile_prog(16, 32, 16))
    assert "not a multiple of 32" in str(e)


def test_row_major_rows_must_be_32_byte_multiples():
    e = rejects(_vec_tile_prog(16, 4, 0))
    assert "cols*4 must be a multiple of 32" in str(e)
    e = rejects(_vec_tile_prog(4, 1, 0))  # a column vector: col-major, rows*4 = 16 bytes
    assert "rows*4" in str(e)
    compile_pto(_vec_tile_prog(8, 1, 0))


def test_boxed_tiles_follow_the_fractal():
    p = Pto("k", [("f16", (16, 16))], kind="cube")
    t = p.tile("t", "mat", "f16", 8, 16)
    p.load(t, 0, sizes=(8, 16))
    assert "16x16 fractal" in str(rejects(p.text()))


def _mov(src_loc: str, dst_loc: str, arch: str) -> str:
    p = Pto("k", [("f32", (16, 16))], kind="", arch=arch)
    a = p.tile("a", src_loc, "f32", 16, 16)
    b = p.tile("b", dst_loc, "f32", 16, 16)
    p.op("tmov", [a], b)
    return p.text()


def test_acc_to_vec_and_vec_to_mat_only_on_a5():
    for src, dst in (("acc", "vec"), ("vec", "mat")):
        e = rejects(_mov(src, dst, "a2a3"))
        assert f"tmov {src} -> {dst} is not a data path on a2a3" in str(e)
        compile_pto(_mov(src, dst, "a5"), arch="a5")
    assert "not a data path" in str(rejects(_mov("vec", "left", "a5"), arch="a5"))


def _matmul(a_loc="left", b_loc="right", c_loc="acc", dts=("f32", "f32", "f32"), mkn=(16, 16, 16),
            level="level3") -> str:
    m, k, n = mkn
    p = Pto("k", [("f32", (16, 16))], kind="cube", level=level)
    c_dt, a_dt, b_dt = dts
    a = p.tile("a", a_loc, a_dt, m, k)
    b = p.tile("b", b_loc, b_dt, k, n)
    c = p.tile("c", c_loc, c_dt, m, n)
    p.op("tmatmul", [a, b], c)
    return p.text()


def test_matmul_operand_spaces_and_dtypes():
    compile_pto(_matmul())
    assert "left x right -> acc" in str(rejects(_matmul(a_loc="mat")))
    assert "left x right -> acc" in str(rejects(_matmul(b_loc="left")))
    assert "not supported" in str(rejects(_matmul(dts=("f16", "f16", "f16"))))
    assert "not supported" in str(rejects(_matmul(dts=("f32", "i8", "i8"), mkn=(16, 32, 32))))
    compile_pto(_matmul(dts=("i32", "i8", "i8"), mkn=(16, 32, 32)))


def test_matmul_dims_limit():
    e = rejects(_matmul(dts=("i32", "i8", "i8"), mkn=(16, 4096, 32), level="level2"), level="level2")
    assert "k=4096 is outside [1, 4095]" in str(e)


def test_elementwise_shapes_and_dtypes_must_agree():
    p = Pto("k", [("f32", (16, 32))])
    a, b = p.tile("a", "vec", "f32", 16, 32), p.tile("b", "vec", "f32", 16, 16)
    d = p.tile("d", "vec", "f32", 16, 32)
    p.op("tadd", [a, b], d)
    assert "second operand is 16x16, expected 16x32" in str(rejects(p.text()))

    p = Pto("k", [("f32", (16, 32))])
    a, b = p.tile("a", "vec", "f32", 16, 32), p.tile("b", "vec", "f16", 16, 32)
    d = p.tile("d", "vec", "f32", 16, 32)
    p.op("tmul", [a, b], d)
    assert "mixes f16 and f32" in str(rejects(p.text()))

    p = Pto("k", [("i32", (16, 32))])
    a = p.tile("a", "vec", "i32", 16, 32)
    p.op("texp", [a], a)
    assert "needs a float tile" in str(rejects(p.text()))


def test_reduction_result_shape():
    p = Pto("k", [("f32", (16, 32))])
    a, tmp = p.tile("a", "vec", "f32", 16, 32), p.tile("tmp", "vec", "f32", 16, 32)
    bad = p.tile("bad", "vec", "f32", 1, 32)
    p.op("trowsum", [a, tmp], bad)
    assert "the result is 1x32, expected 16x1" in str(rejects(p.text()))


def test_gm_paths():
    p = Pto("k", [("f32", (16, 16))], kind="cube")
    t = p.tile("t", "left", "f32", 16, 16)
    p.load(t, 0)
    assert "GM loads go into 'vec' or 'mat'" in str(rejects(p.text()))
    p = Pto("k", [("f16", (16, 32))])
    t = p.tile("t", "vec", "f32", 16, 32)
    p.store(t, 0)
    assert "use pto.tcvt first" in str(rejects(p.text()))


def test_kernel_kind_matches_spaces():
    p = Pto("k", [("f32", (16, 16))], kind="vector")
    p.tile("t", "acc", "f32", 16, 16)
    assert "vector (AIV) kernel has no 'acc'" in str(rejects(p.text()))


def test_ssa_use_before_definition_and_undefined():
    text = ADD.replace("pto.tadd ins(%a__tile, %b__tile", "pto.tadd ins(%a__tile, %nope")
    e = rejects(text)
    assert "use of undefined value %nope" in str(e) and e.loc == "quickstart.py:17:9"
    lines = ADD.splitlines()
    # move the tstore above the alloc of the tile it stores
    store = next(i for i, l in enumerate(lines) if "pto.tstore" in l)
    alloc = next(i for i, l in enumerate(lines) if "%t__tile = pto.alloc_tile" in l)
    lines.insert(alloc, lines.pop(store))
    assert "used before its definition" in str(rejects("\n".join(lines)))


def test_declared_operand_type_must_match_definition():
    text = ADD.replace("pto.tadd ins(%a__tile, %b__tile : !pto.tile_buf<loc=vec, dtype=f32",
                       "pto.tadd ins(%a__tile, %b__tile : !pto.tile_buf<loc=vec, dtype=f16")
    assert "is declared as" in str(rejects(text))


def test_parse_errors_carry_pto_position():
    e = rejects("module {\n  func.func @k(%arg0 !pto.ptr<f32>) {\n  }\n}\n")
    assert str(e).startswith("<pto>:2:22: error: expected ':'")
    e = rejects(ADD.replace("outs(%t__tile", "outs(%t__tile,"))
    assert e.loc == "quickstart.py:17:9" and e.line == 18  # the loc written on that line
    e = rejects("module { func.func @k() { %x = arith.constant 1 : index\n %x = arith.constant 2 : index\n return } }")
    assert "redefinition of SSA value %x" in str(e) and e.line == 2


def test_unknown_op_is_rejected_with_its_loc():
    text = ADD.replace("pto.tadd ins", "pto.tfrobnicate ins")
    e = rejects(text)
    assert "unsupported operation 'pto.tfrobnicate'" in str(e) and e.loc == "quickstart.py:17:9"


def test_compile_options_are_checked():
    with pytest.raises(ValueError, match="unknown pto arch"):
        compile_pto(ADD, arch="a9")
    with pytest.raises(ValueError, match="unknown pto level"):
        compile_pto(ADD, level="level9")


def test_tile_type_helper_matches_sample_spelling():
    assert tile_type("vec", "f32", 128, 128) in ADD


def test_hifloat8_converts_on_the_conversion_units_paths_only():
    for src, dst, ok in (("f32", "!pto.hif8", True), ("f16", "!pto.hif8", True), ("!pto.hif8", "f32", True),
                         ("bf16", "!pto.hif8", False), ("!pto.hif8", "f16", False)):
        p = Pto("k", [("f32", (16, 32))], arch="a5")
        a, b = p.tile("a", "vec", src, 16, 32), p.tile("b", "vec", dst, 16, 32)
        p.op("tcvt", [a], b, attrs="{rmode = #pto<round_mode ROUND>}")
        if ok:
            compile_pto(p.text(), arch="a5")
        else:
            assert f"tcvt {src} -> {dst}: HiFloat8 converts from f32 and f16" in str(rejects(p.text(), arch="a5"))
