"""MemoryReuse: buffers whose lifetimes don't overlap share one allocation."""
import pypto.language as pl
from pypto.ir.nodes import Assign, MemorySpace as M, PtrType
from pypto.passes.base import PassOptions

from pass_helpers import before, body_text, fn, loops, roundtrip, run, tiles

NAME = "MemoryReuse"


def reuse(prog):
    return run(before(prog, NAME), NAME)


def allocs(f, space=None):
    return [s for s in f.body if isinstance(s, Assign) and isinstance(s.var.type, PtrType)
            and (space is None or s.value.kwargs["target_memory"] is space)]


def base(v):
    return v.type.memref.base


def _quickstart():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out
    return P


def test_quickstart_ends_with_two_vec_buffers():
    src = before(_quickstart(), NAME)
    assert len(allocs(fn(src, "add_incore_0"))) == 3          # 3 x 64 KiB before
    out = run(src, NAME)
    k = fn(out, "add_incore_0")
    assert [a.value.args[0].value for a in allocs(k, M.Vec)] == [65536, 65536]
    ta, tb, t = tiles(k)
    assert base(t) is base(ta) and base(tb) is not base(ta)   # the sum overwrites a dead operand
    assert body_text(out, "add_incore_0")[:2] == [
        "mem_vec_3: pl.Ptr = pl.tile.alloc(65536, target_memory=pl.Mem.Vec)",
        "mem_vec_4: pl.Ptr = pl.tile.alloc(65536, target_memory=pl.Mem.Vec)",
    ]
    roundtrip(out)


def test_non_overlapping_lifetimes_share_a_buffer():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
              z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t1 = pl.load(x, [0, 0], [64, 64])
            y = pl.store(t1, [0, 0], y)
            t2 = pl.load(x, [0, 0], [32, 64])
            z = pl.store(t2, [0, 0], z)
            return z

    k = fn(reuse(P), "k")
    t1, t2 = tiles(k)
    assert base(t1) is base(t2)
    (a,) = allocs(k)
    assert a.value.args[0].value == 64 * 64 * 4           # the larger of the two
    assert t2.type.memref.size == 32 * 64 * 4


def test_live_tiles_never_share():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            a = pl.load(x, [0, 0], [64, 64])
            b = pl.load(x, [0, 0], [64, 64])
            c = pl.load(x, [0, 0], [64, 64])
            y = pl.store(pl.add(pl.add(a, b), c), [0, 0], y)
            return y

    k = fn(reuse(P), "k")
    a, b, c, ab, abc = tiles(k)
    assert len({id(base(v)) for v in (a, b, c)}) == 3
    assert base(ab) is base(a) and base(abc) is base(ab)


def test_a_tile_used_in_a_loop_stays_live_to_the_loop_end():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
            bias = pl.load(x, [0, 0], [64, 64])
            for i in pl.range(4):
                t = pl.add(pl.load(y, [i * 64, 0], [64, 64]), bias)   # last read of bias
                u = pl.exp(pl.load(y, [i * 64, 0], [64, 64]))          # after it, same iteration
                y = pl.store(pl.add(t, u), [i * 64, 0], y)
            return y

    k = fn(reuse(P), "k")
    bias = tiles(k)[0]
    (loop,) = loops(k)
    in_loop = [s.var for s in loop.body if isinstance(s, Assign) and s.var.type.__class__.__name__ == "TileType"]
    assert in_loop and all(base(v) is not base(bias) for v in in_loop)
    roundtrip(run(before(P, NAME), NAME))


def test_loop_carried_group_is_live_through_the_loop():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            for i in pl.range(4):
                t = pl.exp(pl.load(x, [0, 0], [64, 64]))
                acc = pl.add(acc, t)
            y = pl.store(acc, [0, 0], y)
            return y

    k = fn(reuse(P), "k")
    (loop,) = loops(k)
    carried = base(loop.iter_args[0].var)
    others = [v for v in tiles(k) if base(v) is not carried]
    assert others and all(v.type.memref is not None for v in others)
    # the loop's own temporaries share one buffer (exp in place over its load); acc is apart
    assert len(allocs(k)) == 2


def test_reduction_output_never_shares_with_its_live_input():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 1], pl.FP32]]) -> pl.Tensor[[64, 1], pl.FP32]:
            t = pl.load(x, [0, 0], [64, 64])
            tmp = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            s = pl.row_sum(t, tmp)          # t and tmp die here
            y = pl.store(s, [0, 0], y)
            return y

    k = fn(reuse(P), "k")
    t, tmp, s = tiles(k)
    assert base(s) is not base(t) and base(s) is not base(tmp)


def test_broadcast_result_never_overwrites_the_vector_operand():
    # m ([64, 1]) dies at row_expand_sub but is read for every row: d must not overwrite it
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [64, 64])
            scratch = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(t, scratch)
            d = pl.row_expand_sub(t, m)
            s = pl.row_sum(d, scratch)
            y = pl.store(pl.add(pl.row_expand_div(d, s), t), [0, 0], y)
            return y

    out = reuse(P)
    k = fn(out, "k")
    byname = {v.name: v for v in tiles(k)}
    assert base(byname["d"]) is not base(byname["m"])
    assert base(byname["row_expand_div__tmp_v0"]) is not base(byname["s"])
    roundtrip(out)


def test_spaces_never_share():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.store(pl.matmul(ta, ta), [0, 0], c)
            return c

    k = fn(reuse(P), "k")
    for a in allocs(k):
        space = a.value.kwargs["target_memory"]
        assert all(v.type.memory_space is space for v in tiles(k) if base(v) is a.var)


def test_softmax_needs_four_vec_buffers():
    @pl.program
    class P:
        @pl.function
        def softmax(self, x: pl.Tensor[[64, 64], pl.FP32],
                    y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [64, 64])
                scratch = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
                m = pl.row_max(t, scratch)
                e = pl.exp(pl.row_expand_sub(t, m))
                s = pl.row_sum(e, scratch)
                pl.store(pl.row_expand_div(e, s), [0, 0], y)
            return y

    k = fn(reuse(P), "softmax_incore_0")
    # t (reused by e and the quotient), scratch, and the two [64, 1] vectors (m then s)
    assert sorted(a.value.args[0].value for a in allocs(k)) == [256, 16384, 16384]


def test_dsa_rp_and_ptoas_planners_skip_the_pass():
    from pypto.passes import pipeline
    for planner in ("DSA_RP", "PTOAS"):
        assert NAME not in [p.name for p in pipeline(PassOptions(memory_planner=planner))]
    assert NAME in [p.name for p in pipeline(PassOptions())]
