"""GM forwarding (ptoas forward.py): which tloads read GM in place and which results are
computed straight into GM -- and that every kernel still computes what its copies would."""
import numpy as np

from ptogen import Pto
from pypto.ptoas import compile_pto
from pypto.ptoas.forward import analyse
from pypto.ptoas.parser import parse


def _cpp(p: Pto) -> str:
    return compile_pto(p.text()).cpp


def _forwarded(p: Pto):
    f = parse(p.text()).funcs[0]
    fwd = analyse(f)
    return ({op.group("outs")[0].name for op in fwd.loads},
            {op.group("outs")[0].name for op in fwd.stores})


def test_add_reads_its_operands_in_place_and_computes_into_gm(make_kernel):
    p = Pto("add", [("f32", (16, 64))] * 3)
    a, b, c = (p.tile(n, "vec", "f32", 16, 64) for n in "abc")
    p.load(a, 0)
    p.load(b, 1)
    p.op("tadd", [a, b], c)
    p.store(c, 2)
    assert _forwarded(p) == ({"a", "b"}, {"c"})
    cpp = _cpp(p)
    assert cpp.count("pto::tload_view(") == 2 and "pto::store_target(" in cpp
    x, y = np.random.rand(16, 64).astype(np.float32), np.random.rand(16, 64).astype(np.float32)
    out = np.zeros((16, 64), np.float32)
    assert make_kernel(p.text())(x, y, out) is None
    np.testing.assert_array_equal(out, x + y)


def test_a_store_inside_the_window_keeps_the_copy(make_kernel):
    """t is read after a store that overwrites its source: it must hold what was loaded."""
    p = Pto("inplace", [("f32", (16, 64)), ("f32", (16, 64))])
    t, u, w = (p.tile(n, "vec", "f32", 16, 64) for n in "tuw")
    p.load(t, 0)
    p.op("tmuls", [t, p.scalar_const(2.0, "f32")], u)
    p.store(u, 0)                       # x = 2 x
    p.op("tadds", [t, p.scalar_const(1.0, "f32")], w)
    p.store(w, 1)                       # y = x + 1 (the x that was loaded)
    loads, stores = _forwarded(p)
    assert "t" not in loads and stores == {"u", "w"}
    x0 = np.random.rand(16, 64).astype(np.float32)
    x, y = x0.copy(), np.zeros((16, 64), np.float32)
    assert make_kernel(p.text())(x, y) is None
    np.testing.assert_array_equal(x, x0 * 2)
    np.testing.assert_array_equal(y, x0 + 1)


def test_a_result_stored_over_its_own_source_is_copied_at_run_time(make_kernel):
    """x[1:17] = x[0:16] + 1: computed into GM directly, row 1 would be written before it
    is read as the source of row 2; the tile library sees the overlap and copies."""
    p = Pto("shift", [("f32", (17, 64))])
    t, u = p.tile("t", "vec", "f32", 16, 64), p.tile("u", "vec", "f32", 16, 64)
    p.load(t, 0, (0, 0), (16, 64))
    p.op("tadds", [t, p.scalar_const(1.0, "f32")], u)
    p.store(u, 0, (1, 0), (16, 64))
    assert _forwarded(p) == ({"t"}, {"u"})
    x0 = np.random.rand(17, 64).astype(np.float32)
    x = x0.copy()
    assert make_kernel(p.text())(x) is None
    np.testing.assert_array_equal(x[1:], x0[:16] + 1)
    np.testing.assert_array_equal(x[0], x0[0])


def test_bytes_read_through_another_tile_keep_the_copy(make_kernel):
    """u sits on t's bytes and is read without being written: it reads what t loaded."""
    p = Pto("alias", [("f32", (16, 64)), ("f32", (16, 64)), ("f32", (16, 64))])
    t = p.tile("t", "vec", "f32", 16, 64, addr=0)
    u = p.tile("u", "vec", "f32", 16, 64, addr=0)
    w = p.tile("w", "vec", "f32", 16, 64, addr=4096)
    v = p.tile("v", "vec", "f32", 16, 64, addr=8192)
    p.load(t, 0)
    p.op("tmuls", [t, p.scalar_const(3.0, "f32")], w)
    p.store(w, 1)
    p.op("tadds", [u, p.scalar_const(1.0, "f32")], v)
    p.store(v, 2)
    loads, _ = _forwarded(p)
    assert loads == set()
    x = np.random.rand(16, 64).astype(np.float32)
    y, z = np.zeros_like(x), np.zeros_like(x)
    assert make_kernel(p.text())(x, y, z) is None
    np.testing.assert_array_equal(y, x * 3)
    np.testing.assert_array_equal(z, x + 1)


def test_a_tile_written_over_after_its_last_read_is_forwarded():
    """The planner's in-place reuse: the result takes the loaded tile's bytes."""
    p = Pto("reuse", [("f32", (16, 64)), ("f32", (16, 64))])
    t = p.tile("t", "vec", "f32", 16, 64, addr=0)
    u = p.tile("u", "vec", "f32", 16, 64, addr=0)
    p.load(t, 0)
    p.op("texp", [t], u)
    p.store(u, 1)
    assert _forwarded(p) == ({"t"}, {"u"})


def test_partitions_that_are_not_one_row_stride_are_copied(make_kernel):
    """[2, 4, 64] of a [4, 8, 64] tensor: its 8 rows are two runs of 4 (copied);
    [2, 8, 64] is 16 evenly spaced rows (read in place)."""
    for sizes, gap in (((2, 4, 64), True), ((2, 8, 64), False)):
        p = Pto("rank3", [("f32", (4, 8, 64)), ("f32", (sizes[0] * sizes[1], 64))])
        rows = sizes[0] * sizes[1]
        t, u = p.tile("t", "vec", "f32", rows, 64), p.tile("u", "vec", "f32", rows, 64)
        p.load(t, 0, (1, 0, 0), sizes)
        p.op("tabs", [t], u)
        p.store(u, 1)
        assert _forwarded(p)[0] == {"t"}
        x = np.random.randn(4, 8, 64).astype(np.float32)
        out = np.zeros((rows, 64), np.float32)
        assert make_kernel(p.text())(x, out) is None, gap
        np.testing.assert_array_equal(out, np.abs(x[1:1 + sizes[0], :sizes[1]]).reshape(rows, 64))


def test_errors_still_name_the_copy_they_come_from(make_kernel):
    p = Pto("oob", [("f32", (16, 64)), ("f32", (16, 64))], scalars=("index",))
    t, u = p.tile("t", "vec", "f32", 16, 64), p.tile("u", "vec", "f32", 16, 64)
    ptv = "!pto.partition_tensor_view<16x64xf32>"
    p.emit(f"%win = pto.partition_view %v0, offsets = [%arg2, {p.c(0)}], sizes = [{p.c(16)}, {p.c(64)}] : "
           f"!pto.tensor_view<?x?xf32> -> {ptv}")
    p.types["%win"] = ptv
    p.op("tload", ["%win"], t)
    p.op("tneg", [t], u)
    p.store(u, 1)
    assert _forwarded(p) == ({"t"}, {"u"})
    x, out = np.ones((16, 64), np.float32), np.zeros((16, 64), np.float32)
    err = make_kernel(p.text())(x, out, scalars=[4])
    assert "pto.tload: error:" in err and "partition [4, 20) of dim 0 is outside" in err
