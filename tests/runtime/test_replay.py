"""Issue 15's fast paths keep results: TENSORMAP_AND_RINGBUFFER replays a recorded graph
(exact edges) from the third launch of a key; what an orchestration refused is never
replayed; compiled(...) outside a worker runs on one shared worker; the swimlane's time
split adds up."""
import pytest
import torch

from pypto.runtime import ChipWorker, RunConfig, current_worker, lanes, shared
from pypto.runtime.dfx import time_split

from runtime_helpers import tensor

ADD = [tensor("a", [16, 16]), tensor("b", [16, 16]), tensor("out", [16, 16], "Out")]
CHAIN = [tensor("a", [64, 32]), tensor("b", [64, 32]), tensor("out", [64, 32], "Out")]


def test_tensormap_replays_from_the_third_launch_with_every_edge(programs):
    c = programs("chain", CHAIN)                 # tmp = a + b, then out = tmp + b per row tile
    with ChipWorker(RunConfig()) as w:
        h = w.register(c)
        runs = []
        for i in range(4):
            a, b = torch.randn(64, 32), torch.randn(64, 32)
            out = torch.zeros(64, 32)
            _, rec = h.launch(a, b, out)
            torch.testing.assert_close(out, a + 2 * b)
            runs.append(rec)
        assert [r.replayed for r in runs] == [False, False, True, True]
        assert all(r.orchestration_start_ns for r in runs[:2]) and not runs[2].orchestration_start_ns
        assert w.stats["orchestration_runs"] == 2 and w.stats["graph_replays"] == 2
        # a replay waits for every producer, also those a live run found already done
        assert all(t.deps == (0,) for t in runs[3].tasks[1:])
        # another shape of binding (the same tensor twice: aliasing) is a key of its own
        a = torch.randn(64, 32)
        out = torch.zeros(64, 32)
        _, rec = h.launch(a, a, out)
        assert not rec.replayed
        torch.testing.assert_close(out, 3 * a)


def test_a_refused_orchestration_is_never_replayed(programs):
    c = programs("fail", [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")])
    with ChipWorker(RunConfig()) as w:
        for _ in range(3):
            with pytest.raises(Exception):
                c(torch.zeros(8, 8))
        assert w.stats["graph_replays"] == 0


def test_compiled_outside_a_worker_runs_on_the_shared_worker(programs):
    c = programs("add", ADD)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    assert current_worker() is None
    for _ in range(3):
        torch.testing.assert_close(c(a, b), a + b)
    w = shared.shared_worker(c.platform, c.runtime_name)
    assert not w.closed and w.stats["launches"] >= 3
    assert w.last_run.replayed                    # the third call of one key
    assert shared.shared_worker(c.platform, c.runtime_name) is w


def test_time_split_adds_up(programs):
    c = programs("chain", CHAIN)
    a, b = torch.randn(64, 32), torch.randn(64, 32)
    with ChipWorker(RunConfig(enable_chip_swimlane=1)) as w:
        c(a, b, torch.zeros(64, 32))
        rec = w.last_run
    split = time_split(rec)
    assert split["data_movement_measured"]
    assert split["kernel_ns"] == sum(t.duration_ns for t in rec.tasks)
    assert split["data_movement_ns"] + split["compute_ns"] == split["kernel_ns"]
    assert split["dispatch_ns"] + split["device_busy_ns"] == split["host_wall_ns"]
    # these hand-written kernels move no tiles (the compiled ones: test_runtime_dfx)
    assert all(t.move_ns == 0 for t in rec.tasks) and split["compute_ns"] == split["kernel_ns"]


def test_a_replay_with_the_same_tensors_goes_straight_to_the_kernel(programs, tmp_path):
    c = programs("add", ADD)
    a, b, out = torch.randn(16, 16), torch.randn(16, 16), torch.zeros(16, 16)
    with ChipWorker(RunConfig()) as w:
        h = w.register(c)
        for _ in range(5):
            a.copy_(torch.randn(16, 16))             # new data, the same tensors
            h(a, b, out)
            torch.testing.assert_close(out, a + b)
        assert h.plan is not None and w.last_run.replayed and len(w.last_run.tasks) == 1
        assert w.stats["launches"] == 5 and w.stats["graph_replays"] == 3
        a2 = torch.randn(16, 16)                      # another tensor: the full path
        torch.testing.assert_close(h(a2, b, out), a2 + b)
        torch.testing.assert_close(h(a, b, out), a + b)
        assert h(a, b) is not out                     # return style: outputs allocated
        cfg = RunConfig(enable_chip_swimlane=1, dfx_output_dir=str(tmp_path / "dfx"))
        _, rec = h.launch(a, b, out, config=cfg)      # a config: the full path, with its files
        assert rec.dfx_outputs
    assert h.plan is None


SPMD = """
import pypto.language as pl

@pl.program
class Spmd:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[256, 64], pl.FP32], y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        me = pl.tile.get_block_idx()
        n = pl.tile.get_block_num()
        for r in pl.range(me, 8, n):
            t = pl.load(x, [r * 32, 0], [32, 64])
            y = pl.store(pl.muls(t, 3.0), [r * 32, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[256, 64], pl.FP32], y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        with pl.spmd(3):
            y = self.scale(x, y)
        return y
"""


def test_an_spmd_replay_spreads_its_blocks_over_the_lanes(tmp_path):
    import pypto.language as pl
    from pypto import ir
    c = ir.compile(pl.parse(SPMD, filename="spmd_gen.py"), output_dir=tmp_path / "Spmd",
                   platform="a2a3sim", dump_passes=False)
    x, y = torch.randn(256, 64), torch.zeros(256, 64)
    with ChipWorker(RunConfig()) as w:
        h = w.register(c)
        for _ in range(5):
            x.copy_(torch.randn(256, 64))
            y.zero_()
            _, rec = h.launch(x, y)
            torch.testing.assert_close(y, 3 * x)
        assert h.plan is not None and rec.replayed
        assert (h.plan.lanes is not None) == lanes.available()      # the C lanes when built
        (task,) = rec.tasks
        assert len(task.blocks) == 3 and task.start_ns == min(s for s, _ in task.blocks)
        assert task.end_ns == max(e for _, e in task.blocks)
        # with the C lanes taken (or not built) the Python lanes run the blocks, claiming them
        # from one count: every block once
        h.plan.lanes = None
        for _ in range(3):
            x.copy_(torch.randn(256, 64))
            y.zero_()
            _, rec = h.launch(x, y)
            torch.testing.assert_close(y, 3 * x)
            (task,) = rec.tasks
            assert len(task.blocks) == 3 and all(0 < s <= e for s, e in task.blocks)
