"""Mixed kernels (issue 12.2): one pl.at region (or InCore kernel) that holds both vector
work (Vec tiles) and cube work (a matmul) becomes a Group -- a cube half on an AIC and a
vector half on an AIV, launched together, that pass tiles through a pipe: vector -> cube
(a Vec operand of a matmul), cube -> vector (a matmul result used by vector ops) and both
ways in one loop. The numbers match torch on both simulated chips."""
import json

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker

from prog_helpers import close, randn

M, K, N, NB = 32, 64, 256, 64


@pl.program
class VecToCube:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.add(a, b)            # vector
            d = pl.sub(a, b)            # vector
            p = pl.matmul(s, d)         # cube: both operands cross to it
            out = pl.assemble(out, p, [0, 0])
        return out


@pl.program
class CubeToVec:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(0, N // NB):
                c_prev = pl.slice(c, [M, NB], [0, j * NB])
                b_chunk = pl.slice(b, [K, NB], [0, j * NB])
                c_next = pl.add(c_prev, pl.matmul(a, b_chunk))    # the result crosses to vector
                c = pl.assemble(c, c_next, [0, j * NB])
        return c


@pl.program
class BothWays:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(0, N // NB):
                c_prev = pl.slice(c, [M, NB], [0, j * NB])
                a1 = pl.add(a, 1.0)                                  # vector -> cube
                b_chunk = pl.slice(b, [K, NB], [0, j * NB])
                c_next = pl.add(c_prev, pl.matmul(a1, b_chunk))     # cube -> vector
                c = pl.assemble(c, c_next, [0, j * NB])
        return c


@pl.program
class SpmdMixed:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[M, 16], pl.FP32]]) -> pl.Tensor[[M, 16], pl.FP32]:
        for blk in pl.spmd(M // 16, name_hint="rows"):                # a Group per block
            rows = pl.slice(a, [16, K], [blk * 16, 0])
            c = pl.matmul(pl.add(rows, 1.0), b)
            out = pl.assemble(out, pl.transpose(pl.add(c, 1.0), axis1=0, axis2=1), [blk * 16, 0])
        return out


PLATFORMS = ["a2a3sim", "a5sim"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vector_to_cube(tmp_path, platform):
    a, b, out = randn(32, 32, seed=1), randn(32, 32, seed=2), torch.zeros(32, 32)
    ir.compile(VecToCube, output_dir=tmp_path, platform=platform)(a, b, out)
    close(out, (a + b) @ (a - b), 1e-4, 1e-4)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("prog, shift", [(CubeToVec, 0.0), (BothWays, 1.0)], ids=["cube_to_vec", "both"])
def test_cube_to_vector_in_a_loop(tmp_path, platform, prog, shift):
    a, b, c = randn(M, K, seed=1), randn(K, N, seed=2), randn(M, N, seed=3)
    want = c + (a + shift) @ b
    ir.compile(prog, output_dir=tmp_path, platform=platform)(a, b, c)
    close(c, want, 1e-4, 1e-4)


def test_spmd_blocks_of_a_group(tmp_path):
    a, b, out = randn(M, K, seed=1), randn(K, 16, seed=2), torch.zeros(M, 16)
    ir.compile(SpmdMixed, output_dir=tmp_path)(a, b, out)
    want = torch.cat([((a[i:i + 16] + 1) @ b + 1).t() for i in range(0, M, 16)])
    close(out, want, 1e-4, 1e-4)


def test_a_group_is_one_task_on_a_cube_and_a_vector_core(tmp_path):
    compiled = ir.compile(BothWays, output_dir=tmp_path)
    config = (tmp_path / "kernel_config.py").read_text()
    assert '"core_type": "mix"' in config and "kernels/mix/main_incore_0.so" in config
    pto = (tmp_path / "ptoas" / "main_incore_0.pto").read_text()
    # one module, the cube half then the vector half, meeting at the pipe
    assert "func.func @main_incore_0_aic(" in pto and "func.func @main_incore_0_aiv(" in pto
    cube, vector = pto.split("func.func @main_incore_0_aiv(")
    assert "pto.tpop_from_aiv" in cube and "pto.tpush_to_aiv" in cube and "loc=vec" not in cube
    assert "pto.tpush_to_aic" in vector and "pto.tpop_from_aic" in vector
    assert "tmatmul" not in vector and "loc=acc" not in vector
    with ChipWorker() as w:
        compiled(randn(M, K, seed=1), randn(K, N, seed=2), randn(M, N, seed=3))
        rec = w.last_run.tasks
    assert [t.core_type for t in rec] == ["mix"] and rec[0].status == 0


def test_a_scalar_read_on_one_core_is_refused_on_the_other(tmp_path):
    @pl.program
    class ScalarAcross:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, idx: pl.Tensor[[8, 8], pl.INT32], a: pl.Tensor[[32, 32], pl.FP32],
                 b: pl.Tensor[[32, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(idx, [0, 0], [8, 8])
                k = pl.tile.read(t, [0, 0])                  # read on the vector core
                w = pl.slice(b, [32, 32], [0, k])             # ... used for the cube's load
                out = pl.assemble(out, pl.matmul(pl.add(a, 1.0), w), [0, 0])
            return out

    with pytest.raises(E.CodegenError, match="read from a vector tile and used by cube work") as ei:
        ir.compile(ScalarAcross, output_dir=tmp_path)
    assert "test_prog_mixed.py" in str(ei.value)


# what earlier pypto refused as "no data path" now runs as a Group
@pl.jit
def exp_of_a_product(a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        left = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        right = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.exp(pl.matmul(left, right)), [0, 0], o)      # Acc -> Vec
    return o


@pl.jit
def square_of_a_vec_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.matmul(t, t), [0, 0], o)                      # Vec -> Mat -> Left/Right
    return o


@pl.program
class VecStraightToLeft:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32],
          o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        lhs = pl.move(pl.load(a, [0, 0], [64, 64]), target_memory=pl.Mem.Left)    # via Mat, across
        rhs = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        o = pl.store(pl.matmul(lhs, rhs), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        o = self.k(a, o)
        return o


def test_jit_kernels_that_mix_cube_and_vector_work():
    a, b = randn(64, 64, seed=1, scale=0.1), randn(64, 64, seed=2, scale=0.1)
    o = torch.zeros(64, 64)
    exp_of_a_product(a, b, o)
    close(o, torch.exp(a @ b), 1e-4, 1e-4)
    o2 = torch.zeros(64, 64)
    square_of_a_vec_tile(a, o2)
    close(o2, a @ a, 1e-4, 1e-4)


def test_an_incore_kernel_moving_a_vec_tile_to_left(tmp_path):
    a, o = randn(64, 64, seed=4), torch.zeros(64, 64)
    ir.compile(VecStraightToLeft, output_dir=tmp_path)(a, o)
    close(o, a @ a, 1e-4, 1e-4)


@pl.program
class MatToVec:
    """A matmul result inserted (TINSERT NZ) into a Mat tile, which then crosses to the
    vector core as a whole (Mat -> Vec) to be stored: the reference's assemble example."""
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 32], pl.FP32], a: pl.Tensor[[32, 16], pl.FP32],
          b: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        target = pl.load(x, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        lhs = pl.move(pl.load(a, [0, 0], [32, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rhs = pl.move(pl.load(b, [0, 0], [16, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        target = pl.tile.assemble(target, pl.matmul(lhs, rhs), [0, 16])
        y = pl.store(pl.exp(pl.move(target, target_memory=pl.Mem.Vec)), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32], a: pl.Tensor[[32, 16], pl.FP32],
             b: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        y = self.k(x, a, b, y)
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_mat_tile_moved_to_vec_crosses_to_the_vector_core(tmp_path, platform):
    x, a, b = randn(32, 32, seed=5, scale=0.5), randn(32, 16, seed=6, scale=0.5), randn(16, 16, seed=7, scale=0.5)
    y = torch.zeros(32, 32)
    compiled = ir.compile(MatToVec, output_dir=tmp_path, platform=platform)
    compiled(x, a, b, y)
    want = x.clone()
    want[:, 16:] = a @ b
    close(y, torch.exp(want), 1e-4, 1e-4)
    pto = next(tmp_path.rglob("k.pto")).read_text()
    assert "pto.tpush_to_aiv" in pto and "loc=mat" in pto.split("pto.tpush_to_aiv", 1)[1].split("\n", 1)[0]


# ----------------------------------------------------------------------------- pl.split
def split_program(mode, slots=None):
    opts = [pl.split(mode)] + ([pl.cross_core_slot(slot_num=slots)] if slots else [])

    @pl.program
    class Split:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                 c: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=opts):
                for j in pl.range(0, N // NB):
                    c_prev = pl.slice(c, [M, NB], [0, j * NB])
                    a1 = pl.mul(pl.add(a, 1.0), 0.5)                     # halves -> cube
                    b_chunk = pl.slice(b, [K, NB], [0, j * NB])
                    p = pl.matmul(a1, b_chunk)                            # cube -> halves
                    c = pl.assemble(c, pl.add(c_prev, pl.exp(pl.mul(p, 0.01))), [0, j * NB])
            return c
    return Split


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode, slots", [(pl.SplitMode.UP_DOWN, None), (pl.SplitMode.LEFT_RIGHT, 4)],
                         ids=["up_down", "left_right_4_slots"])
def test_split_vector_work_over_two_aivs(tmp_path, platform, mode, slots):
    a, b, c = randn(M, K, seed=1), randn(K, N, seed=2), randn(M, N, seed=3)
    want = c + torch.exp(((a + 1) * 0.5) @ b * 0.01)
    ir.compile(split_program(mode, slots), output_dir=tmp_path, platform=platform)(a, b, c)
    close(c, want, 1e-4, 1e-4)
    pto = (tmp_path / "ptoas" / "main_incore_0.pto").read_text()
    cube, vector = pto.split("func.func @main_incore_0_aiv(")
    half = "rows=16, cols=64" if mode is pl.SplitMode.UP_DOWN else "rows=32, cols=32"
    # each AIV holds half of every vector tile and knows which half it is
    assert "%__pypto_spmd_subblock_idx: i32" in vector and f"loc=vec, dtype=f32, {half}" in vector
    assert "rows=32, cols=64" not in vector.replace("partition", "")
    assert f"{{split = {mode.value}" in cube and "loc=mat, dtype=f32, rows=32, cols=64" in cube
    assert (f"slot_num = {slots}" in pto) == bool(slots)


def test_split_is_printed_and_read_back_in_the_dumps(tmp_path):
    ir.compile(split_program(pl.SplitMode.UP_DOWN, 3), output_dir=tmp_path, dump_passes=True)
    front = (tmp_path / "passes_dump" / "00_frontend.py").read_text()
    assert "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=3)]" in front
    assert pl.parse(front, filename="<dump>") is not None
    outlined = next((tmp_path / "passes_dump").glob("*_after_OutlineIncoreScopes.py")).read_text()
    assert 'attrs={"slot_num": 3, "split": 1}' in outlined or 'attrs={"split": 1, "slot_num": 3}' in outlined


def test_split_refuses_work_that_needs_whole_tiles(tmp_path):
    @pl.program
    class ColumnSums:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[1, 32], pl.FP32]]) -> pl.Tensor[[1, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                p = pl.matmul(a, b)
                s = pl.col_sum(pl.add(p, 1.0))       # sums over all rows: not inside one half
                out = pl.assemble(out, s, [0, 0])
            return out

    with pytest.raises(E.NotBuiltError, match="tile.col_sum in the vector half of a pl.split") as ei:
        ir.compile(ColumnSums, output_dir=tmp_path)
    assert "test_prog_mixed.py" in str(ei.value)


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT], ids=["up_down", "left_right"])
def test_a_vector_kernel_split_over_two_aivs(tmp_path, mode):
    @pl.program
    class VectorOnly:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[64, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
                out = pl.assemble(out, pl.abs(pl.sub(a, 0.5)), [0, 0])
            return out

    a, out = randn(64, 128, seed=7), torch.zeros(64, 128)
    compiled = ir.compile(VectorOnly, output_dir=tmp_path)
    with ChipWorker() as w:
        compiled(a, out)
        rec = w.last_run.tasks
    close(out, (a - 0.5).abs(), 1e-6, 1e-6)
    pto = (tmp_path / "ptoas" / "main_incore_0.pto").read_text()
    half = "rows=32, cols=128" if mode is pl.SplitMode.UP_DOWN else "rows=64, cols=64"
    assert f"pypto.split = {mode.value}" in pto and half in pto and "%__pypto_spmd_subblock_idx" in pto
    assert [t.core_type for t in rec] == ["aiv"]


@pl.program
class RowNormalize:
    """2 x / row_sum(x) with the reciprocal taken on a [1, 32] row (the rms_norm column
    trick): under UP_DOWN each AIV's [16, 1] half of the sums becomes its [1, 16] half of
    the row, and back."""
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            sums = pl.row_sum(x)                                          # [32, 1]
            inv_row = pl.mul(pl.recip(pl.reshape(sums, [1, 32])), 2.0)    # [1, 32]
            inv = pl.reshape(inv_row, [32, 1])
            y = pl.assemble(y, pl.row_expand_mul(x, inv), [0, 0])
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_reshape_moves_the_split_to_the_other_axis(tmp_path, platform):
    x = randn(32, 64, seed=8).abs() + 0.5
    y = torch.zeros(32, 64)
    ir.compile(RowNormalize, output_dir=tmp_path, platform=platform)(x, y)
    close(y, 2.0 * x / x.sum(dim=1, keepdim=True), 1e-5, 1e-5)
    pto = (tmp_path / "ptoas" / "main_incore_0.pto").read_text()
    # each AIV holds half of the sums, of the row made from them and of the column back
    assert "rows=16, cols=1" in pto and "rows=1, cols=16" in pto and "rows=32, cols=1," not in pto


def test_only_elementwise_work_follows_a_reshape_that_moved_the_split(tmp_path):
    @pl.program
    class RowOfSums:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[32, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[1, 1], pl.FP32]]) -> pl.Tensor[[1, 1], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                row = pl.reshape(pl.row_sum(x), [1, 32])
                y = pl.assemble(y, pl.row_sum(row), [0, 0])   # would add the other AIV's half too
            return y

    with pytest.raises(E.NotBuiltError, match="a reshape moved to dim 1") as ei:
        ir.compile(RowOfSums, output_dir=tmp_path)
    assert "test_prog_mixed.py" in str(ei.value)


def test_a_split_of_cube_work_alone_is_refused(tmp_path):
    @pl.program
    class CubeOnly:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[32, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
                out = pl.assemble(out, pl.matmul(a, a), [0, 0])
            return out

    with pytest.raises(E.NotBuiltError, match="has only cube work"):
        ir.compile(CubeOnly, output_dir=tmp_path)


def test_optimizations_must_be_known_entries():
    with pytest.raises(E.ParserError, match="slot_num is the positive depth") as ei:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, a: pl.Tensor[[32, 32], pl.FP32],
                     out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=0)]):
                    out = pl.assemble(out, pl.exp(a), [0, 0])
                return out
    assert "pl.cross_core_slot(slot_num=4)" in ei.value.hint
