"""ConvertTensorToTileOps: tensor ops inside kernels become loads, tile ops and stores."""
import pytest

import pypto.language as pl
from pypto.errors import CodegenError
from pypto.ir import ops as irops
from pypto.ir.nodes import MemorySpace as M, TileType

from pass_helpers import assigns, before, body_text, calls, fn, ops, roundtrip, run, text
import pipeline_programs as pp

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


# ----------------------------------------------------------------------------- tiling
import shutil  # noqa: E402

import numpy as np  # noqa: E402

from pypto.ir.nodes import For  # noqa: E402
from pypto.passes import run_pipeline  # noqa: E402
from pypto.passes.base import PassOptions  # noqa: E402
from pypto.passes.convert_tensor_to_tile_ops import BUDGET  # noqa: E402

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def big_exp():
    @pl.program
    class Big:
        @pl.function
        def main(self, x: pl.Tensor[[256, 1024], pl.FP32],
                 y: pl.Out[pl.Tensor[[256, 1024], pl.FP32]]) -> pl.Tensor[[256, 1024], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(pl.sub(x, 1.0))
            return y
    return Big


def big_softmax():
    @pl.program
    class Soft:
        @pl.function
        def main(self, x: pl.Tensor[[512, 512], pl.FP32], b: pl.Tensor[[1, 512], pl.FP32],
                 y: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                z = pl.col_expand_add(x, b)
                m = pl.row_max(z)
                e = pl.exp(pl.row_expand_sub(z, m))
                s = pl.row_sum(e)
                y[:] = pl.row_expand_div(e, s)
            return y
    return Soft


def wide_rows():
    @pl.program
    class Wide:
        @pl.function
        def main(self, x: pl.Tensor[[4, 65536], pl.FP16], w: pl.Tensor[[4, 65536], pl.FP16],
                 y: pl.Out[pl.Tensor[[4, 65536], pl.FP32]]) -> pl.Tensor[[4, 65536], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.cast(pl.mul(x, w), pl.FP32)
            return y
    return Wide


def vec_bytes_live(k):
    """Bytes of the chunk tiles of a tiled kernel (each defined once per iteration)."""
    return sum(t.type.nbytes() for t in [a.var for a in assigns(k)] if isinstance(t.type, TileType))


def test_large_elementwise_chain_becomes_a_loop_over_row_chunks():
    out = convert(big_exp())
    assert body_text(out, "main_incore_0") == [
        "for i__chunk_v0, (y__iter_v0,) in pl.range(0, 256, 8, init_values=(y,)):",
        "x__tile_v0: pl.Tile[[8, 1024], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i__chunk_v0, 0], [8, 1024], target_memory=pl.Mem.Vec)",
        "subs__tile_v0: pl.Tile[[8, 1024], pl.FP32] = pl.tile.subs(x__tile_v0, 1.0)",
        "exp__tile_v0: pl.Tile[[8, 1024], pl.FP32] = pl.tile.exp(subs__tile_v0)",
        "y__ssa_v1: pl.Tensor[[256, 1024], pl.FP32] = pl.tile.store(exp__tile_v0, [i__chunk_v0, 0], y__iter_v0)",
        "y__rv_v0 = pl.yield_(y__ssa_v1)",
        "return y__rv_v0",
    ]
    # 8 rows: two 32 KiB tiles live at once fit half of UB; 16 rows would not
    assert 2 * 8 * 4096 <= BUDGET * 184 * 1024 < 2 * 16 * 4096
    roundtrip(out)


def test_row_reductions_keep_whole_rows_and_a_broadcast_row_is_loaded_once():
    out = convert(big_softmax())
    k = fn(out, "main_incore_0")
    (loop,) = [s for s in k.body if isinstance(s, For)]
    b_load = k.body[0]
    assert b_load.value.op == "tile.load" and b_load.value.args[0].name == "b"    # before the loop
    assert b_load.var.type.shape == (1, 512)
    assert [c.op for c in calls(k)] == [
        "tile.load", "tile.load", "tile.col_expand_add", "tile.create", "tile.row_max",
        "tile.row_expand_sub", "tile.exp", "tile.create", "tile.row_sum", "tile.row_expand_div",
        "tile.store"]
    rows = {c.args[2].items[0].value for c in calls(k, "tile.load")}
    assert loop.step.value == 16 and rows == {1, 16}
    assert all(t.type.shape[1] in (1, 512) for t in [a.var for a in assigns(k)] if isinstance(t.type, TileType))
    roundtrip(out)


def test_a_row_too_long_for_ub_is_split_into_aligned_column_blocks():
    out = convert(wide_rows())
    k = fn(out, "main_incore_0")
    (outer,) = [s for s in k.body if isinstance(s, For)]
    (inner,) = [s for s in outer.body if isinstance(s, For)]
    assert (outer.stop.value, outer.step.value) == (4, 1)
    assert (inner.stop.value, inner.step.value) == (65536, 8192)
    assert (8192 * 2) % 32 == 0
    (store,) = calls(k, "tile.store")
    assert [o.name for o in store.args[1].items] == [outer.loop_var.name, inner.loop_var.name]
    roundtrip(out)


def test_small_groups_and_values_used_elsewhere_stay_whole():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[256, 256], pl.FP32], b: pl.Tensor[[256, 256], pl.FP32],
                 o: pl.Out[pl.Tensor[[256, 256], pl.FP32]]) -> pl.Tensor[[256, 256], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.exp(a)
                o[:] = pl.matmul(t, b, out_dtype=pl.FP32)     # t is read by a matmul: not tiled
            return o

    k = fn(convert(P), "main_incore_0")
    assert not [s for s in k.body if isinstance(s, For)]
    k = fn(convert(pp.quickstart()), "add_incore_0")           # fits with in-place reuse
    assert not [s for s in k.body if isinstance(s, For)]


def test_a_row_reduction_whose_row_does_not_fit_is_an_error():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[8, 65536], pl.FP32],
                 o: pl.Out[pl.Tensor[[8, 1], pl.FP32]]) -> pl.Tensor[[8, 1], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                o[:] = pl.row_sum(x)
            return o

    with pytest.raises(CodegenError) as e:
        convert(P)
    assert "[8, 65536]" in e.value.message and "whole rows" in e.value.hint and e.value.span is not None


def test_a_tensor_value_carried_by_a_loop_is_a_tile():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[32, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                acc = pl.exp(x)
                for i in pl.range(3):
                    acc = pl.add(acc, x)
                o[:] = acc
            return o

    out = convert(P)
    k = fn(out, "main_incore_0")
    (loop,) = [s for s in k.body if isinstance(s, For)]
    assert isinstance(loop.iter_args[0].var.type, TileType) and isinstance(loop.return_vars[0].type, TileType)
    assert ops(k) == ["tile.load", "tile.exp", "tile.add", "tile.store"]
    (store,) = calls(k, "tile.store")
    assert store.args[0] is loop.return_vars[0]
    roundtrip(out)


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
def test_tiled_kernels_plan_within_capacity(planner):
    opts = PassOptions(memory_planner=planner)
    for build in (big_exp, big_softmax, wide_rows):
        prog = run_pipeline(build(), opts)
        assert prog.get("main_incore_0") is not None


@needs_gxx
def test_tiled_kernels_compute_the_whole_tensors(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from pypto import ir
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.standard_normal((256, 1024)).astype(np.float32))
    y = torch.zeros(256, 1024)
    ir.compile(big_exp(), output_dir=tmp_path / "a", platform="a2a3sim")(x, y)
    torch.testing.assert_close(y, torch.exp(x - 1.0))
    x = torch.from_numpy(rng.standard_normal((512, 512)).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal((1, 512)).astype(np.float32))
    y = torch.zeros(512, 512)
    ir.compile(big_softmax(), output_dir=tmp_path / "b", platform="a2a3sim", memory_planner="DSA_RP")(x, b, y)
    torch.testing.assert_close(y, torch.softmax(x + b, dim=1))
    x = torch.from_numpy(rng.standard_normal((4, 65536)).astype(np.float16))
    w = torch.from_numpy(rng.standard_normal((4, 65536)).astype(np.float16))
    y = torch.zeros(4, 65536)
    ir.compile(wide_rows(), output_dir=tmp_path / "c", platform="a2a3sim")(x, w, y)
    torch.testing.assert_close(y, (x * w).float())


def region_write():
    @pl.program
    class Reg:
        @pl.function
        def main(self, x: pl.Tensor[[128, 2048], pl.FP32], v: pl.Tensor[[128, 1], pl.FP32],
                 y: pl.InOut[pl.Tensor[[256, 2048], pl.FP32]]) -> pl.Tensor[[256, 2048], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[64:192, :] = pl.row_expand_mul(pl.exp(x), v)
            return y
    return Reg


def test_chunks_keep_vector_columns_aligned_and_region_writes_keep_their_offset():
    out = convert(region_write())
    k = fn(out, "main_incore_0")
    (loop,) = [s for s in k.body if isinstance(s, For)]
    # 4 rows would fit half of UB, but a [4, 1] fp32 column is 16 bytes: 8 rows, in all of UB
    assert loop.step.value == 8
    v_load = next(c for c in calls(k, "tile.load") if c.args[0].name == "v")
    assert [d.value for d in v_load.args[2].items] == [8, 1]
    assert "pl.tile.store(row_expand_mul__tile_v0, [64 + i__chunk_v0, 0], y__iter_v0)" in text(out)
    roundtrip(out)


@needs_gxx
def test_region_write_chunks_compute_the_region(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from pypto import ir
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    x, v, y = torch.randn(128, 2048), torch.randn(128, 1), torch.randn(256, 2048)
    want = y.clone()
    want[64:192] = torch.exp(x) * v
    ir.compile(region_write(), output_dir=tmp_path / "out", platform="a2a3sim")(x, v, y)
    torch.testing.assert_close(y, want)


def test_full_in_a_kernel_becomes_a_filled_tile_never_a_load():
    @pl.program
    class F:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                x = pl.full([64, 64], dtype=pl.FP32, value=2.0)
                out[:] = pl.add(a, x)
            return out

    out = convert(F)
    lines = body_text(out, "main_incore_0")
    assert "x__tile_v0: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.full([64, 64], dtype=pl.FP32, value=2.0)" in lines
    assert not any("tile.load(x" in ln for ln in lines) and not any("tensor.full" in ln for ln in lines)
    roundtrip(out)


def test_full_in_a_tiled_group_is_filled_chunk_by_chunk():
    @pl.program
    class Big:
        @pl.function
        def main(self, a: pl.Tensor[[256, 256], pl.FP32],
                 out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]) -> pl.Tensor[[256, 256], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                x = pl.full([256, 256], dtype=pl.FP32, value=2.0)
                out[:] = pl.add(a, x)
            return out

    out = convert(Big)
    fulls = [c for c in calls(fn(out, "main_incore_0")) if c.op == "tile.full"]
    assert len(fulls) == 1 and fulls[0].type.shape != (256, 256)       # one chunk's shape
    assert fulls[0].type.shape == next(c for c in calls(fn(out, "main_incore_0"))
                                       if c.op == "tile.load").type.shape
