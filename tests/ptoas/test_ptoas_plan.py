"""Level2: ptoas plans the addresses itself (lifetimes, reuse, overflow)."""
import numpy as np

from ptogen import Pto
from pypto.ptoas import PtoasError, compile_pto

import pytest


def _chain(late_load: bool) -> str:
    """out = (a + b) + c over 128x128 f32 tiles (64 KiB each, UB plans within 184 KiB)."""
    p = Pto("chain", [("f32", (128, 128))] * 4, level="level2")
    a, b = p.tile("a", "vec", "f32", 128, 128), p.tile("b", "vec", "f32", 128, 128)
    c = None
    if not late_load:
        c = p.tile("c", "vec", "f32", 128, 128)
    p.load(a, 0)
    p.load(b, 1)
    if not late_load:
        p.load(c, 2)
    d = p.tile("d", "vec", "f32", 128, 128)
    p.op("tadd", [a, b], d)  # a and b die here: d takes a's buffer
    if late_load:
        c = p.tile("c", "vec", "f32", 128, 128)  # ... and c takes b's
        p.load(c, 2)
    e = p.tile("e", "vec", "f32", 128, 128)
    p.op("tadd", [d, c], e)
    p.store(e, 3)
    return p.text()


def test_tiles_that_only_fit_with_reuse_plan_and_run(make_kernel):
    text = _chain(late_load=True)
    r = compile_pto(text, level="level2", dump_passes=True)
    dump = r.pass_dumps["03_plan_memory"]
    assert "vec 131072/188416" in dump  # five 64 KiB tiles in two buffers
    assert r.kernel_info["bytes_used"] == {"vec": 131072}
    kern = make_kernel(text, level="level2")
    rng = np.random.default_rng(11)
    a, b, c = rng.standard_normal((3, 128, 128), dtype=np.float32)
    out = np.zeros_like(a)
    assert kern(a, b, c, out) is None
    np.testing.assert_allclose(out, (a + b) + c, rtol=1e-6)


def test_overflow_names_function_space_bytes_and_capacity():
    with pytest.raises(PtoasError) as info:
        compile_pto(_chain(late_load=False), level="level2")
    msg = str(info.value)
    assert "function @chain" in msg and "'vec' needs 196608 bytes but has 188416 on a2a3" in msg
    assert info.value.loc is not None  # points at the alloc that did not fit
    compile_pto(_chain(late_load=False).replace('"a2a3"', '"a5"'), arch="a5", level="level2")


def test_loop_keeps_outer_tiles_alive_for_the_whole_loop():
    text = """\
module {
  func.func @k(%arg0: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %v = pto.make_tensor_view %arg0, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %acc = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>
    pto.tload ins(%p : !pto.partition_tensor_view<16x16xf32>) outs(%acc : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
    scf.for %i = %c0 to %c4 step %c1 {
      %t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>
      pto.tload ins(%p : !pto.partition_tensor_view<16x16xf32>) outs(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
      pto.tadd ins(%acc, %t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>, !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%acc : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
    }
    pto.tstore ins(%acc : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%p : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
"""
    r = compile_pto(text, level="level2", dump_passes=True)
    dump = r.pass_dumps["03_plan_memory"]
    # %t is born inside the loop, %acc is read there on every iteration: never the same buffer
    acc_line = next(l for l in dump.splitlines() if "%acc = pto.alloc_tile" in l)
    t_line = next(l for l in dump.splitlines() if "%t = pto.alloc_tile" in l)
    assert "vec[0, 1024)" in acc_line and "vec[1024, 2048)" in t_line
    assert compile_pto(r.pass_dumps["03_plan_memory"], level="level3").cpp  # planned IR is level3 IR


def _slots(count: int = 2, slots=(0, 1), get_rows: int = 32) -> str:
    """out = x - y with x, y two slots of one pto.alloc_multi_tile buffer."""
    p = Pto("slots", [("f32", (32, 64))] * 3, level="level2")
    t = "!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=64, v_row=?, v_col=?, blayout=row_major, " \
        "slayout=none_box, fractal=512, pad=0>"
    got = t.replace("rows=32", f"rows={get_rows}")
    mt = f"!pto.multi_tile_buf<{t}, count={count}>"
    p.emit(f"%r = pto.alloc_multi_tile valid_row = {p.c(32)} valid_col = {p.c(64)} : {mt}")
    for name, k in zip(("x", "y"), slots):
        p.emit(f"%{name} = pto.multi_tile_get %r[{p.c(k)}] : {mt} -> {got}")
        p.types[f"%{name}"] = got
    p.load("%x", 0)
    p.load("%y", 1)
    d = p.tile("d", "vec", "f32", 32, 64)
    p.op("tsub", ["%x", "%y"], d)
    p.store(d, 2)
    return p.text()


def test_multi_slot_buffer_is_planned_whole_and_its_slots_stay_apart(make_kernel):
    text = _slots()
    r = compile_pto(text, level="level2", dump_passes=True)
    dump = r.pass_dumps["03_plan_memory"]
    region = next(l for l in dump.splitlines() if "%r = pto.alloc_multi_tile" in l)
    assert "planned vec[0, 16384)" in region           # two 8 KiB slots, one buffer
    kern = make_kernel(text, level="level2")
    rng = np.random.default_rng(12)
    x, y = rng.standard_normal((2, 32, 64), dtype=np.float32)
    out = np.zeros_like(x)
    assert kern(x, y, out) is None
    np.testing.assert_allclose(out, x - y, rtol=1e-6)


@pytest.mark.parametrize("kw,msg", [
    ({"count": 1}, "2 to 16 slots, not 1"),
    ({"slots": (0, 2)}, "slot 2 of a 2-slot buffer"),
    ({"get_rows": 16}, "multi_tile_get gives a slot's tile"),
])
def test_multi_slot_buffer_misuse_is_rejected(kw, msg):
    with pytest.raises(PtoasError, match=msg):
        compile_pto(_slots(**kw), level="level2")
