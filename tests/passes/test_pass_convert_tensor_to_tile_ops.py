"""ConvertTensorToTileOps: tensor ops inside kernels become loads, tile ops and stores."""
import pytest

import pypto.language as pl
from pypto.errors import CodegenError
from pypto.ir import ops as irops
from pypto.ir.nodes import MemorySpace as M, TileType

from pass_helpers import assigns, before, body_text, calls, fn, ops, roundtrip, run, text

NAME = "ConvertTensorToTileOps"


def convert(prog):
    return run(before(prog, NAME), NAME)


def test_tensor_add_becomes_two_loads_an_add_and_a_store():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out

    out = convert(P)
    assert body_text(out, "add_incore_0") == [
        "a__tile_v0: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], [128, 128], target_memory=pl.Mem.Vec)",
        "b__tile_v0: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Vec)",
        "add__tile_v0: pl.Tile[[128, 128], pl.FP32] = pl.tile.add(a__tile_v0, b__tile_v0)",
        "out__ssa_v0: pl.Tensor[[128, 128], pl.FP32] = pl.tile.store(add__tile_v0, [0, 0], out)",
        "return out__ssa_v0",
    ]
    k = fn(out, "add_incore_0")
    load_a, load_b, add, store = assigns(k)
    assert load_a.value.args[0] is k.params[0].var and load_b.value.args[0] is k.params[1].var
    assert add.value.args == [load_a.var, load_b.var]
    assert store.value.args[0] is add.var and store.value.args[2] is k.params[2].var
    # the orchestration is not a kernel: it keeps its call
    assert ops(fn(out, "add")) == ["@add_incore_0"]
    roundtrip(out)


def test_tensor_matmul_loads_to_mat_and_moves_to_left_and_right():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 128], pl.FP16], w: pl.Tensor[[128, 32], pl.FP16],
                 out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.matmul(a, w, out_dtype=pl.FP32)
            return out

    out = convert(P)
    k = fn(out, "main_incore_0")
    assert ops(k) == ["tile.load", "tile.move", "tile.load", "tile.move", "tile.matmul", "tile.store"]
    la, ma, lw, mw, mm, st = assigns(k)
    assert la.value.kwargs["target_memory"] is M.Mat and lw.value.kwargs["target_memory"] is M.Mat
    assert (ma.value.args[0], ma.value.kwargs["target_memory"]) == (la.var, M.Left)
    assert (mw.value.args[0], mw.value.kwargs["target_memory"]) == (lw.var, M.Right)
    assert mm.value.args == [ma.var, mw.var]
    assert mm.var.type == TileType((64, 32), mm.var.type.dtype, M.Acc) and str(mm.var.type.dtype) == "fp32"
    assert st.value.args[0] is mm.var
    roundtrip(out)


def test_a_tensor_used_twice_is_loaded_once():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(pl.exp(a), a)
            return out

    k = fn(convert(P), "main_incore_0")
    assert ops(k) == ["tile.load", "tile.exp", "tile.add", "tile.store"]
    load, exp, add, _ = assigns(k)
    assert add.value.args == [exp.var, load.var]


def test_a_tensor_read_by_cube_and_vector_ops_is_loaded_into_each_space():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], o1: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                 o2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                o1[:] = pl.exp(a)
                o2[:] = pl.matmul(a, a)
            return o2

    k = fn(convert(P), "main_incore_0")
    spaces = [c.kwargs["target_memory"] for c in calls(k, "tile.load")]
    assert spaces == [M.Vec, M.Mat]
    # the Mat tile feeds both matmul operands
    mat = assigns(k, "tile.load")[1].var
    assert [c.args[0] for c in calls(k, "tile.move")] == [mat, mat]


def test_row_reduction_on_a_tensor_gets_a_scratch_tile():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                s = pl.row_sum(x)
                out[:] = pl.row_expand_div(x, s)
            return out

    k = fn(convert(P), "main_incore_0")
    assert ops(k) == ["tile.load", "tile.create", "tile.row_sum", "tile.row_expand_div", "tile.store"]
    load, scratch, rs, div, _ = assigns(k)
    assert scratch.var.type == TileType((64, 64), load.var.type.dtype, M.Vec)
    assert rs.value.args == [load.var, scratch.var]
    assert rs.var.type.shape == (64, 1)
    assert div.value.args == [load.var, rs.var]


def test_scalar_forms_keep_their_scalar():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.mul(x, 2.0)
            return out

    out = convert(P)
    assert "muls__tile_v0: pl.Tile[[64, 64], pl.FP32] = pl.tile.muls(x__tile_v0, 2.0)" in body_text(out, "main_incore_0")
    roundtrip(out)


def test_region_write_stores_at_its_offset_in_a_loop():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    y[i * 16:i * 16 + 16, :] = pl.exp(pl.load(x, [i * 16, 0], [16, 64]))
            return y

    out = convert(P)
    k = fn(out, "main_incore_0")
    assert ops(k) == ["tile.load", "tile.exp", "tile.store"]
    (store,) = calls(k, "tile.store")
    assert "pl.tile.store(exp__tmp_v0, [i * 16, 0], y__iter_v0)" in text(out)
    assert store.args[2] is k.params[-1].var
    roundtrip(out)


def _tile_quickstart():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def add_kernel(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                       out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            ta = pl.load(a, [0, 0], [128, 128])
            tb = pl.load(b, [0, 0], [128, 128])
            t = pl.add(ta, tb)
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            out = self.add_kernel(a, b, out)
            return out
    return P


def test_tile_level_program_is_unchanged():
    src = before(_tile_quickstart(), NAME)
    assert run(src, NAME).as_python() == src.as_python()


def test_no_tensor_op_left_in_kernels():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.sub(pl.maximum(a, b), pl.minimum(a, b))
                out[:] = pl.relu(pl.div(t, pl.add(a, b)))
            return out

    out = convert(P)
    k = fn(out, "main_incore_0")
    assert not any(irops.is_tensor_op(o) for o in ops(k))
    assert ops(k).count("tile.load") == 2
    roundtrip(out)


def test_dynamic_shape_tensor_op_is_an_error_with_a_hint():
    M_ = pl.dynamic("M")

    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[M_, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[M_, 64], pl.FP32]]) -> pl.Tensor[[M_, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.exp(a)
            return out

    with pytest.raises(CodegenError) as e:
        convert(P)
    assert "'a'" in e.value.message and "dynamic" in e.value.message and "pl.range" in e.value.hint
