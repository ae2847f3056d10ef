"""DoubleBufferAcc (l0c_double_buffer, or a loop's `pipeline_double_buffer_c` attribute): a
loop computing a fresh Acc tile per iteration is unrolled by 2 and its two halves use two
Acc buffers at different addresses."""
import re
import shutil

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir.nodes import Assign, For, MemorySpace as M, PtrType
from pypto.ir.visit import walk
from pypto.passes import pipeline
from pypto.passes.base import PassOptions

from pass_helpers import before, calls, fn, roundtrip, run, upto

NAME = "DoubleBufferAcc"
ON = PassOptions(l0c_double_buffer=True)


def nblocks(trips=4):
    @pl.program
    class NBlocks:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 256], pl.FP16],
              out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]) -> pl.Tensor[[64, 256], pl.FP32]:
            ta = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Left)
            for j in pl.range(trips):
                tb = pl.load(b, [0, j * 64], [64, 64], target_memory=pl.Mem.Mat)
                c = pl.matmul(ta, pl.move(tb, target_memory=pl.Mem.Right))
                out = pl.store(c, [0, j * 64], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 256], pl.FP16],
                 out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]) -> pl.Tensor[[64, 256], pl.FP32]:
            out = self.k(a, b, out)
            return out
    return NBlocks


def _acc_allocs(f):
    return [s for s in f.body if isinstance(s, Assign) and isinstance(s.var.type, PtrType)
            and s.value.kwargs["target_memory"] is M.Acc]


def test_pipeline_always_has_the_pass():
    # (a loop may ask for two accumulators itself: the pass runs without the option too)
    for opts in (PassOptions(), ON):
        names = [p.name for p in pipeline(opts)]
        assert names.index(NAME) + 1 == names.index("InitMemRef")


ASKS = """
import pypto.language as pl

@pl.program
class Asks:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 320], pl.FP16],
          out: pl.Out[pl.Tensor[[64, 320], pl.FP32]], n: pl.INDEX) -> pl.Tensor[[64, 320], pl.FP32]:
        ta = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        for j in pl.pipeline({STOP}, stage=2, attrs={{"pipeline_double_buffer_c": True}}):
            tb = pl.load(b, [0, j * 64], [64, 64], target_memory=pl.Mem.Mat)
            {BODY}
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 320], pl.FP16],
             out: pl.Out[pl.Tensor[[64, 320], pl.FP32]], n: pl.INDEX) -> pl.Tensor[[64, 320], pl.FP32]:
        out = self.k(a, b, out, n)
        return out
"""
MATMUL = """c = pl.matmul(ta, pl.move(tb, target_memory=pl.Mem.Right))
            out = pl.store(c, [0, j * 64], out)"""


def asking(trips, dynamic=False, matmul=True):
    """A loop that asks for two accumulators with attrs={"pipeline_double_buffer_c": True}."""
    body = MATMUL if matmul else "out = pl.store(pl.cast(pl.load(b, [0, j * 64], [64, 64]), pl.FP32), [0, j * 64], out)"
    return pl.parse(ASKS.format(STOP="n" if dynamic else trips, BODY=body), filename="/u/asks.py")


def test_a_loop_that_asks_is_double_buffered_without_the_option():
    out = run(before(asking(4), NAME), NAME)
    k = fn(out, "k")
    (loop,) = [s for s in walk(k.body) if isinstance(s, For)]
    assert (loop.stop.value, loop.step.value, loop.stage) == (4, 2, 2)
    assert loop.attrs == {"pipeline_double_buffer_c": True}
    assert [c.attrs.get("acc_buffer") for c in calls(k, "tile.matmul")] == [0, 1]
    roundtrip(out)


def test_an_odd_loop_that_asks_runs_its_last_iteration_after_the_pairs():
    out = run(before(asking(5), NAME), NAME)
    k = fn(out, "k")
    (loop,) = [s for s in walk(k.body) if isinstance(s, For)]
    assert (loop.start.value, loop.stop.value, loop.step.value) == (0, 4, 2)
    assert [c.attrs.get("acc_buffer") for c in calls(k, "tile.matmul")] == [0, 1, None]
    last = calls(k, "tile.store")[-1]
    col = last.args[1].items[1]                        # the fifth block, at column 4 * 64
    assert (col.op, col.lhs.value, col.rhs.value) == ("*", 4, 64)
    roundtrip(out)


@pytest.mark.parametrize("kw, why", [({"dynamic": True}, "trip count is not a compile-time constant"),
                                     ({"matmul": False}, "no tile.matmul"),
                                     ({"trips": 1}, "fewer than two iterations")])
def test_a_loop_that_asks_and_cannot_have_it_is_an_error_at_its_line(kw, why):
    from pypto.errors import TypeCheckError
    args = {"trips": 4, **kw}
    trips = args.pop("trips")
    with pytest.raises(TypeCheckError, match=why) as e:
        run(before(asking(trips, **args), NAME), NAME)
    assert "pipeline_double_buffer_c" in str(e.value) and "asks.py:10" in str(e.value)


def test_loop_is_unrolled_by_two_with_tagged_matmuls():
    out = run(before(nblocks(), NAME, ON), NAME, opts=ON)
    k = fn(out, "k")
    (loop,) = [s for s in walk(k.body) if isinstance(s, For)]
    assert (loop.start.value, loop.stop.value, loop.step.value) == (0, 4, 2)
    assert [c.attrs.get("acc_buffer") for c in calls(k, "tile.matmul")] == [0, 1]
    assert len(calls(k, "tile.store")) == 2
    roundtrip(out)


def test_odd_trip_count_is_left_alone():
    prog = before(nblocks(3), NAME, ON)
    out = run(prog, NAME, opts=ON)
    assert out.as_python() == prog.as_python()


def test_two_acc_buffers_at_different_addresses():
    k = fn(upto(nblocks(), "AllocateMemoryAddr", ON), "k")
    allocs = _acc_allocs(k)
    assert len(allocs) == 2
    mm = calls(k, "tile.matmul")
    bases = [c.type.memref.base for c in mm]
    assert [b.name for b in bases] == [a.var.name for a in allocs]
    assert mm[0].type.memref.offset != mm[1].type.memref.offset
    roundtrip(upto(nblocks(), "AllocateMemoryAddr", ON))


def test_without_the_option_one_acc_buffer():
    k = fn(upto(nblocks(), "AllocateMemoryAddr"), "k")
    assert len(_acc_allocs(k)) == 1


def test_dsa_rp_planner_also_keeps_them_apart():
    opts = PassOptions(l0c_double_buffer=True, memory_planner="DSA_RP")
    k = fn(upto(nblocks(), "AllocateMemoryAddr", opts), "k")
    mm = calls(k, "tile.matmul")
    assert len(_acc_allocs(k)) == 2 and mm[0].type.memref.offset != mm[1].type.memref.offset


@pytest.fixture
def iso(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_compile_two_acc_tiles_in_pto_and_numerics(iso):
    torch = pytest.importorskip("torch")
    from pypto import ir
    compiled = ir.compile(nblocks(), output_dir=iso / "db", platform="a2a3sim",
                          enable_pypto_l0c_double_buffer=True)
    dumps = sorted((iso / "db" / "passes_dump").glob("*DoubleBufferAcc*"))
    assert dumps, sorted(p.name for p in (iso / "db" / "passes_dump").iterdir())
    pto = next((iso / "db").rglob("k.pto")).read_text()
    accs = [l for l in pto.splitlines() if "alloc_tile" in l and "loc=acc" in l]
    assert len(accs) == 2, accs
    addrs = {re.search(r"addr\s*=\s*([^,\s}>)]+)", l).group(1) for l in accs}
    assert len(addrs) == 2, accs
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 256)).astype(np.float16)
    out = torch.zeros(64, 256, dtype=torch.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    compiled(ta, tb, out)
    ref = ta.float() @ tb.float()
    assert torch.allclose(out, ref, atol=1e-2, rtol=1e-2)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.parametrize("trips", [4, 5])
def test_loops_that_ask_compute_what_torch_does(iso, trips):
    torch = pytest.importorskip("torch")
    from pypto import ir
    compiled = ir.compile(asking(trips), output_dir=iso / f"ask{trips}", platform="a2a3sim")
    torch.manual_seed(trips)
    a, b = torch.randn(64, 64).half(), torch.randn(64, 320).half()
    out = torch.zeros(64, 320)
    compiled(a, b, out, trips)
    want = torch.zeros(64, 320)
    want[:, :trips * 64] = a.float() @ b[:, :trips * 64].float()
    assert torch.allclose(out, want, atol=1e-2, rtol=1e-2)
