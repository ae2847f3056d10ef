"""InferTileMemorySpace: every tile gets a memory space; moves where spaces disagree."""
import pytest

import pypto.language as pl
from pypto.backend import BackendType
from pypto.errors import CodegenError
from pypto.ir.nodes import MemorySpace as M
from pypto.passes.base import PassOptions

from pass_helpers import assigns, before, body_text, calls, fn, ifs, loops, ops, roundtrip, run, tiles

NAME = "InferTileMemorySpace"
A5 = PassOptions(backend_type=BackendType.Ascend950)


def infer(prog, opts=None):
    opts = opts or PassOptions()
    return run(before(prog, NAME, opts), NAME, opts=opts)


def all_placed(prog):
    for f in prog.functions:
        if f.is_kernel:
            for v in tiles(f):
                assert v.type.memory_space is not None, (f.name, v.name)


def _matmul_from_mat():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(ta, tb)
            y = pl.store(c, [0, 0], y)
            return y
    return P


def test_matmul_operands_in_mat_get_moves_to_left_and_right():
    out = infer(_matmul_from_mat())
    k = fn(out, "k")
    assert ops(k) == ["tile.load", "tile.load", "tile.move", "tile.move", "tile.matmul", "tile.store"]
    ta, tb, ml, mr, mm, _ = assigns(k)
    assert (ml.value.args, ml.var.type.memory_space) == ([ta.var], M.Left)
    assert (mr.value.args, mr.var.type.memory_space) == ([tb.var], M.Right)
    assert mm.value.args == [ml.var, mr.var] and mm.var.type.memory_space is M.Acc
    all_placed(out)
    roundtrip(out)


def test_operands_already_in_place_get_no_move():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64])
            u = pl.exp(t)
            y = pl.store(pl.add(t, u), [0, 0], y)
            return y

    out = infer(P)
    assert "tile.move" not in ops(fn(out, "k"))
    assert {v.type.memory_space for v in tiles(fn(out, "k"))} == {M.Vec}


def test_quickstart_every_tile_is_vec():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out

    src = before(P, NAME)
    assert any(v.type.memory_space is None for v in tiles(fn(src, "add_incore_0")))
    out = run(src, NAME)
    assert [v.type.memory_space for v in tiles(fn(out, "add_incore_0"))] == [M.Vec] * 3
    assert body_text(out, "add_incore_0")[2] == \
        "add__tile_v0: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(a__tile_v0, b__tile_v0)"
    roundtrip(out)


def test_loop_carried_and_branch_merged_tiles_get_spaces():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
              n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [64, 64])
            for i in pl.range(4):
                acc = pl.add(acc, pl.load(x, [0, 0], [64, 64]))
            if n > 2:
                acc = pl.exp(acc)
            else:
                acc = pl.relu(acc)
            y = pl.store(acc, [0, 0], y)
            return y

    out = infer(P)
    k = fn(out, "k")
    all_placed(out)
    (loop,) = loops(k)
    (br,) = ifs(k)
    assert loop.iter_args[0].var.type.memory_space is M.Vec
    assert loop.return_vars[0].type.memory_space is M.Vec
    assert br.return_vars[0].type.memory_space is M.Vec
    roundtrip(out)


def test_branches_yielding_different_spaces_is_an_error():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
              n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            if n > 2:
                t = pl.load(x, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            else:
                t = pl.load(x, [0, 0], [64, 64])
            y = pl.store(t, [0, 0], y)
            return y

    with pytest.raises(CodegenError) as e:
        infer(P)
    assert "Mat" in e.value.message and "Vec" in e.value.message and "pl.move" in e.value.hint


def _acc_to_vec():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(ta, ta)
            d = pl.exp(c)
            y = pl.store(d, [0, 0], y)
            return y
    return P


@pytest.mark.parametrize("chip", [None, A5], ids=["a2a3", "a5"])
def test_acc_to_vec_is_a_move_on_both_chips(chip):
    # on a2a3 the move crosses from the cube core to a vector core through the Group's pipe
    out = infer(_acc_to_vec(), chip) if chip else infer(_acc_to_vec())
    k = fn(out, "k")
    mm = assigns(k, "tile.matmul")[0]
    mv = [a for a in assigns(k, "tile.move") if a.var.type.memory_space is M.Vec]
    assert len(mv) == 1 and mv[0].value.args == [mm.var]
    assert assigns(k, "tile.exp")[0].value.args == [mv[0].var]
    all_placed(out)
    roundtrip(out)


@pytest.mark.parametrize("chip", [None, A5], ids=["a2a3", "a5"])
def test_vec_operand_of_matmul_goes_through_mat(chip):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64])
            y = pl.store(pl.matmul(t, t), [0, 0], y)
            return y

    k = fn(infer(P, chip) if chip else infer(P), "k")
    spaces = [c.kwargs["target_memory"] for c in calls(k, "tile.move")]
    assert spaces == [M.Mat, M.Left, M.Mat, M.Right]


def test_explicit_move_on_a_missing_path_is_an_error():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            m = pl.move(t, target_memory=pl.Mem.Left)
            v = pl.move(m, target_memory=pl.Mem.Vec)
            y = pl.store(v, [0, 0], y)
            return y

    with pytest.raises(CodegenError, match="no data path from Left to Vec on a2a3"):
        infer(P)


def test_matmul_acc_in_a_k_loop_keeps_the_accumulator_in_acc():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
              c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            acc = pl.matmul(pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat),
                            pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat))
            for i, (acc_in,) in pl.range(1, 4, init_values=(acc,)):
                ta = pl.load(a, [0, i * 32], [64, 32], target_memory=pl.Mem.Mat)
                tb = pl.load(b, [i * 32, 0], [32, 64], target_memory=pl.Mem.Mat)
                acc_out = pl.yield_(pl.matmul_acc(acc_in, ta, tb))
            c = pl.store(acc_out, [0, 0], c)
            return c

    out = infer(P)
    k = fn(out, "k")
    (loop,) = loops(k)
    (mma,) = assigns(k, "tile.matmul_acc")
    assert mma.value.args[0] is loop.iter_args[0].var          # no move for the accumulator
    assert [a.type.memory_space for a in mma.value.args] == [M.Acc, M.Left, M.Right]
    assert loop.return_vars[0].type.memory_space is M.Acc
    assert ops(k).count("tile.move") == 4
    all_placed(out)
    roundtrip(out)


def test_reshape_stays_in_its_sources_space():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 128], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            tb = pl.reshape(pl.load(a, [0, 0], [32, 128], target_memory=pl.Mem.Mat), [64, 64])
            y = pl.store(pl.matmul(ta, tb), [0, 0], y)
            return y

    out = infer(P)
    k = fn(out, "k")
    (rs,) = assigns(k, "tile.reshape")
    assert rs.var.type.memory_space is M.Mat
    assert [(c.args[0].type.memory_space, c.kwargs["target_memory"]) for c in calls(k, "tile.move")] == \
        [(M.Mat, M.Left), (M.Mat, M.Right)]
    all_placed(out)
    roundtrip(out)


def test_store_from_a_cube_operand_space_is_an_error():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            y = pl.store(t, [0, 0], y)
            return y

    for opts in (None, A5):
        with pytest.raises(CodegenError, match="no data path from Mat to GM"):
            infer(P, opts)


def test_store_written_as_a_statement_is_checked_too():
    """`pl.store(t, [0, 0], y)` as a bare statement (an Eval, no result bound) gets the
    same check as `y = pl.store(...)`. The Mat tile is made by editing the IR before the
    pass, so the check of the pass itself is what is tested."""
    from pypto.ir.nodes import Assign, Eval, TileType

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64])
            pl.store(t, [0, 0], y)
            return y

    src = before(P, NAME)
    k = fn(src, "k")
    load, store = [s for s in k.body if isinstance(s, (Assign, Eval))]
    assert isinstance(store, Eval)
    load.value.kwargs["target_memory"] = M.Mat
    load.var.type = TileType(load.var.type.shape, load.var.type.dtype, M.Mat)
    with pytest.raises(CodegenError, match="no data path from Mat to GM") as e:
        run(src, NAME)
    assert e.value.span is not None and e.value.span.line == store.span.line


def _chain(dtype):
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], dtype], b: pl.Tensor[[64, 64], dtype],
                 c: pl.Tensor[[64, 64], dtype],
                 o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                o[:] = pl.matmul(pl.matmul(a, b), c, out_dtype=pl.FP32)
            return o
    return P


def test_a_matmul_result_feeding_a_matmul_goes_through_mat():
    out = infer(_chain(pl.FP32))
    k = fn(out, "main_incore_0")
    first, second = assigns(k, "tile.matmul")
    hops = [(c.args[0].type.memory_space, c.kwargs["target_memory"]) for c in calls(k, "tile.move")]
    assert (M.Acc, M.Mat) in hops and (M.Mat, M.Left) in hops
    to_mat = next(s for s in assigns(k, "tile.move") if s.value.args[0] is first.var)
    to_left = next(s for s in assigns(k, "tile.move") if s.value.args[0] is to_mat.var)
    assert second.value.args[0] is to_left.var and to_left.var.type.memory_space is M.Left
    all_placed(out)
    roundtrip(out)


def test_an_explicit_move_from_acc_to_left_is_routed_through_mat():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
              o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
            sq = pl.matmul(pl.move(acc, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
            o = pl.store(sq, [0, 0], o)
            return o

    k = fn(infer(P), "k")
    hops = [(c.args[0].type.memory_space, c.kwargs["target_memory"]) for c in calls(k, "tile.move")]
    assert hops.count((M.Acc, M.Mat)) == 1 and (M.Acc, M.Left) not in hops


def test_an_fp16_matmul_chain_is_a_clear_error():
    with pytest.raises(CodegenError) as e:
        run(before(_chain(pl.FP16), "ConvertTensorToTileOps"), "ConvertTensorToTileOps")
    assert "inner matmul's result is accumulated in fp32" in e.value.message and "fp16 'c'" in e.value.message
    assert "pl.cast" in e.value.hint


def test_a_matmul_chain_computes_the_product(tmp_path, monkeypatch):
    import shutil
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    torch = pytest.importorskip("torch")
    from pypto import ir
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    a, b, c = (torch.randn(64, 64) for _ in range(3))
    o = torch.zeros(64, 64)
    ir.compile(_chain(pl.FP32), output_dir=tmp_path / "out", platform="a2a3sim")(a, b, c, o)
    torch.testing.assert_close(o, (a @ b) @ c, rtol=1e-4, atol=1e-3)
