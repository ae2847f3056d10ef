"""SPMD launches (issue 12.2): `with pl.spmd(n)` around kernel calls, `for i in pl.spmd(n)`
regions, pl.spmd_submit; each launch runs as n blocks on the simulated cores, a block
learns its index and the count from pl.tile.get_block_idx / get_block_num (hidden
kernel arguments), sync_start releases all blocks at once (tests/runtime/test_scheduling.py
shows blocks that wait for each other meeting); the numbers match torch."""
import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker, RunConfig

from prog_helpers import close, randn

ROWS, COLS, TILE = 512, 64, 64


@pl.function(type=pl.FunctionType.InCore)
def strided_scale(x: pl.Tensor[[ROWS, COLS], pl.FP32], s: pl.Scalar[pl.FP32],
                  y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
    me = pl.tile.get_block_idx()
    n = pl.tile.get_block_num()
    for r in pl.range(me, ROWS // TILE, n):        # block b takes tiles b, b+n, ...
        t = pl.load(x, [r * TILE, 0], [TILE, COLS])
        y = pl.store(pl.muls(t, s), [r * TILE, 0], y)
    return y


@pl.program
class Scoped:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32], mid: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
             y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        with pl.spmd(3):                             # 8 tiles over 3 blocks
            mid = strided_scale(x, 2.0, mid)
        with pl.spmd(core_num=4, sync_start=True) as t:
            y = strided_scale(mid, 3.0, y)
        return y


@pl.program
class Looped:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        for b in pl.spmd(ROWS // TILE, name_hint="rows"):     # one block per tile
            t = pl.load(x, [b * TILE, 0], [TILE, COLS])
            y = pl.store(pl.exp(t), [b * TILE, 0], y)
        return y


@pl.program
class Submitted:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32], mid: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
             y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        with pl.manual_scope():
            mid, t1 = pl.spmd_submit(strided_scale, x, 5.0, mid, core_num=2)
            y, _ = pl.spmd_submit(strided_scale, mid, 0.5, y, core_num=8, deps=[t1])
        return y


def _run(prog, tmp_path, *args):
    c = ir.compile(prog, output_dir=str(tmp_path / prog.name), platform="a2a3sim")
    with ChipWorker(RunConfig(platform="a2a3sim", enable_dep_gen=True)) as w:
        c(*args)
        return c, w.last_run.tasks


def test_a_scope_runs_each_launch_as_its_blocks(tmp_path):
    x = randn(ROWS, COLS, seed=1)
    mid, y = torch.zeros(ROWS, COLS), torch.zeros(ROWS, COLS)
    c, tasks = _run(Scoped, tmp_path, x, mid, y)
    close(y, 6 * x, 1e-6, 1e-6)
    assert len(tasks) == 2 and tasks[1].deps == (tasks[0].task_id,)
    pto = next((tmp_path / "Scoped" / "ptoas").glob("strided_scale.pto")).read_text()
    assert "%__pypto_spmd_block_idx: i32, %__pypto_spmd_block_num: i32" in pto


def test_a_loop_form_region_gets_its_block_index(tmp_path):
    x = randn(ROWS, COLS, seed=2)
    y = torch.zeros(ROWS, COLS)
    c, tasks = _run(Looped, tmp_path, x, y)
    close(y, torch.exp(x), 1e-6, 1e-6)
    assert [t.kernel for t in tasks] == ["rows"]


def test_spmd_submit_in_a_manual_scope(tmp_path):
    x = randn(ROWS, COLS, seed=3)
    c, tasks = _run(Submitted, tmp_path, x, torch.zeros(ROWS, COLS), y := torch.zeros(ROWS, COLS))
    close(y, 2.5 * x, 1e-6, 1e-6)
    assert tasks[1].deps == (tasks[0].task_id,)


def test_a_block_index_outside_an_spmd_launch_is_zero_of_one(tmp_path):
    @pl.program
    class Plain:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
                 y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            y = strided_scale(x, 4.0, y)          # one block: it takes every tile
            return y

    x = randn(ROWS, COLS, seed=4)
    c, tasks = _run(Plain, tmp_path, x, y := torch.zeros(ROWS, COLS))
    close(y, 4 * x, 1e-6, 1e-6)


def test_spmd_needs_a_kernel_launch_and_a_count():
    with pytest.raises(E.ParserError, match=r"launches nothing"):
        @pl.program
        class Empty:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
                with pl.spmd(2):
                    n = 3
                return x
    with pytest.raises(E.ParserError, match=r"pl.spmd_submit needs core_num="):
        @pl.program
        class NoCount:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
                     y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
                y, _ = pl.spmd_submit(strided_scale, x, 1.0, y)
                return y


def test_a_pipeline_loop_runs_its_iterations_in_order(tmp_path):
    @pl.program
    class Piped:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
                 y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                acc = pl.load(x, [0, 0], [TILE, COLS])
                for r in pl.pipeline(1, ROWS // TILE, stage=2):
                    acc = pl.add(acc, pl.load(x, [r * TILE, 0], [TILE, COLS]))
                y = pl.store(acc, [0, 0], y)
            return y

    x = randn(ROWS, COLS, seed=5)
    c = ir.compile(Piped, output_dir=str(tmp_path / "p"), platform="a2a3sim")
    c(x, y := torch.zeros(ROWS, COLS))
    close(y[:TILE], x.reshape(-1, TILE, COLS).sum(0), 1e-5, 1e-5)
    with pytest.raises(E.ParserError, match=r"pl.pipeline needs stage="):
        pl.parse("import pypto.language as pl\n@pl.program\nclass Q:\n"
                 "    @pl.function(type=pl.FunctionType.InCore)\n"
                 "    def k(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:\n"
                 "        for i in pl.pipeline(4):\n            pass\n        return x\n")


def test_an_spmd_region_in_an_opaque_function(tmp_path):
    @pl.program
    class Opaque:
        @pl.function                       # becomes the orchestration once its region is outlined
        def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
                 y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            for b in pl.spmd(ROWS // TILE):
                t = pl.load(x, [b * TILE, 0], [TILE, COLS])
                y = pl.store(pl.neg(t), [b * TILE, 0], y)
            return y

    x = randn(ROWS, COLS, seed=6)
    c = ir.compile(Opaque, output_dir=str(tmp_path / "o"), platform="a2a3sim")
    c(x, y := torch.zeros(ROWS, COLS))
    close(y, -x, 0, 0)


NB = 4


@pl.function(type=pl.FunctionType.InCore)
def rotate(x: pl.Tensor[[NB * 16, 64], pl.FP32], part: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]],
           y: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]]) -> pl.Tensor[[NB * 16, 64], pl.FP32]:
    me = pl.tile.get_block_idx()
    t = pl.load(x, [me * 16, 0], [16, 64])
    part = pl.store(pl.muls(t, 2.0), [me * 16, 0], part)
    pl.system.syncall(core_type="aiv_only")          # every block's part is written past here
    u = pl.load(part, [((me + 1) % NB) * 16, 0], [16, 64])
    y = pl.store(u, [me * 16, 0], y)
    return y


@pl.function(type=pl.FunctionType.InCore)
def rotate_soft(x: pl.Tensor[[NB * 16, 64], pl.FP32], ws: pl.Tensor[[4], pl.INT32],
                part: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]],
                y: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]]) -> pl.Tensor[[NB * 16, 64], pl.FP32]:
    me = pl.tile.get_block_idx()
    t = pl.load(x, [me * 16, 0], [16, 64])
    part = pl.store(pl.muls(t, 2.0), [me * 16, 0], part)
    pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores=NB)
    u = pl.load(part, [((me + 1) % NB) * 16, 0], [16, 64])
    y = pl.store(u, [me * 16, 0], y)
    return y


@pl.program
class Barrier:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[NB * 16, 64], pl.FP32], ws: pl.Tensor[[4], pl.INT32],
             part: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]],
             y: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]],
             y2: pl.Out[pl.Tensor[[NB * 16, 64], pl.FP32]]) -> pl.Tensor[[NB * 16, 64], pl.FP32]:
        with pl.spmd(NB):                            # no sync_start: the syncall asks for it
            y = rotate(x, part, y)
        with pl.spmd(NB):
            y2 = rotate_soft(x, ws, part, y2)
        return y2


def test_blocks_meet_at_a_syncall_hard_and_soft(tmp_path):
    x = randn(NB * 16, 64, seed=7)
    ws = torch.zeros(4, dtype=torch.int32)
    part, y, y2 = torch.zeros(NB * 16, 64), torch.zeros(NB * 16, 64), torch.zeros(NB * 16, 64)
    c, tasks = _run(Barrier, tmp_path, x, ws, part, y, y2)
    want = torch.roll(2 * x, shifts=-16, dims=0)          # block b reads block b+1's part
    close(y, want, 0, 0)
    close(y2, want, 0, 0)
    pto = (tmp_path / "Barrier" / "ptoas" / "rotate.pto").read_text()
    assert "pto.syncall ins(%__pypto_spmd_sync, %__pypto_spmd_block_num : i64, i32)" in pto


@pl.program
class MixedBarrier:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[NB * 16, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             ws: pl.Tensor[[16], pl.INT32],
             out: pl.Out[pl.Tensor[[NB * 16, 32], pl.FP32]]) -> pl.Tensor[[NB * 16, 32], pl.FP32]:
        for blk in pl.spmd(NB, name_hint="mixed_barrier"):
            a_blk = pl.slice(a, [16, 32], [blk * 16, 0])
            lhs = pl.mul(a_blk, 2.0)                 # vector work feeding the cube
            pl.system.syncall(mode="soft", core_type="mix", gm_workspace=ws, used_cores=NB * 3)
            c = pl.matmul(lhs, b)
            out = pl.assemble(out, pl.add(c, 1.0), [blk * 16, 0])
        return out


def test_a_mixed_soft_barrier_counts_an_aic_and_both_aivs_per_block(tmp_path):
    """A soft syncall in a mixed kernel meets used_cores = blocks x (1 AIC + 2 AIVs): the
    vector half of an unsplit core group arrives for both its AIV lanes (they run it alike)."""
    a, b = randn(NB * 16, 32, seed=8), randn(32, 32, seed=9)
    ws, out = torch.zeros(16, dtype=torch.int32), torch.zeros(NB * 16, 32)
    c = ir.compile(MixedBarrier, output_dir=str(tmp_path / "m"), platform="a2a3sim")
    c(a, b, ws, out)
    close(out, (2 * a) @ b + 1, 1e-4, 1e-4)
    pto = (tmp_path / "m" / "ptoas" / "mixed_barrier.pto").read_text()
    aic, aiv = pto.split("func.func @mixed_barrier_aiv(")
    assert "pto.syncall ins(" in aic and "lanes" not in aic.split("pto.syncall")[1].split("\n")[0]
    assert "{lanes = 2}" in aiv.split("pto.syncall")[1].split("\n")[0]


def test_a_soft_syncall_needs_its_workspace():
    with pytest.raises(E.TypeCheckError, match=r"gm_workspace="):
        @pl.function(type=pl.FunctionType.InCore)
        def bad(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            pl.system.syncall(mode="soft", used_cores=2)
            return x


@pl.program
class InACluster:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        with pl.cluster(name_hint="scale"):           # one launch on the cores of a core group
            with pl.spmd(4):
                y = strided_scale(x, 1.5, y)
        return y


def test_a_cluster_of_one_launch(tmp_path):
    x, y = randn(ROWS, COLS, seed=3), torch.zeros(ROWS, COLS)
    ir.compile(InACluster, output_dir=tmp_path)(x, y)
    close(y, x * 1.5, 1e-6, 1e-6)


def test_a_cluster_of_several_launches_is_not_built():
    with pytest.raises(E.NotBuiltError, match="pl.cluster around 2 kernel launches"):
        @pl.program
        class TwoInACluster:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32], mid: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
                     y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
                with pl.cluster():
                    mid = strided_scale(x, 2.0, mid)
                    y = strided_scale(mid, 2.0, y)
                return y
