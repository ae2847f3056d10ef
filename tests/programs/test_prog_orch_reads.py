"""The orchestration reads tensor elements (pl.tensor.read on the host) and makes views
(pl.slice): config values as loop bounds and kernel scalars, an element a kernel wrote
(read once that kernel is done), both runtimes, and a kernel's scalar argument converted
to its parameter's dtype (an int64 flag passed as a bool), as the reference's
paged-attention programs do."""
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime.errors import OrchestrationError

from prog_helpers import close, randn

RUNTIMES = ("tensormap_and_ringbuffer", "host_build_graph")


@pl.function(type=pl.FunctionType.InCore)
def scale_rows(x: pl.Tensor[[16, 64], pl.FP32], s: pl.Scalar[pl.FP32], neg: pl.Scalar[pl.BOOL],
               y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 64])
    if neg:
        r = pl.yield_(pl.neg(pl.muls(t, s)))
    else:
        r = pl.yield_(pl.muls(t, s))
    y = pl.store(r, [0, 0], y)
    return y


@pl.program
class ConfigDriven:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[2], pl.INT64],
             scales: pl.Tensor[[4], pl.FP32],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        n = pl.tensor.read(cfg, [0])
        flag = pl.tensor.read(cfg, [1])
        for i in pl.range(n):
            s: pl.Scalar[pl.FP32] = pl.tensor.read(scales, [i])
            xi = pl.slice(x, [16, 64], [i * 16, 0])
            yi = pl.slice(y, [16, 64], [i * 16, 0])
            yi = scale_rows(xi, s, flag, yi)
        return y


def _want(x, cfg, sc):
    want = torch.zeros(64, 64)
    for i in range(int(cfg[0])):
        rows = x[i * 16:(i + 1) * 16] * sc[i]
        want[i * 16:(i + 1) * 16] = -rows if cfg[1] else rows
    return want


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_config_read_on_the_host_drives_loops_views_and_kernel_scalars(tmp_path, runtime):
    c = ir.compile(ConfigDriven, output_dir=str(tmp_path / "p"), platform="a2a3sim", runtime=runtime)
    orch = next((tmp_path / "p" / "orchestration").glob("*.cpp")).read_text()
    assert "api->read_scalar(" in orch and "api->view(" in orch
    x, sc = randn(64, 64, seed=5), torch.tensor([1.0, 2.0, 3.0, 4.0])
    for cfg in ([3, 1], [4, 0], [1, 1]):       # new values each call: nothing stale replayed
        cfg = torch.tensor(cfg, dtype=torch.int64)
        y = torch.zeros(64, 64)
        c(x, cfg, sc, y)
        close(y, _want(x, cfg, sc), 0, 0)


@pl.function(type=pl.FunctionType.InCore)
def count_positive(x: pl.Tensor[[16, 64], pl.FP32],
                   cnt: pl.Out[pl.Tensor[[1], pl.INT32]]) -> pl.Tensor[[1], pl.INT32]:
    n: pl.Scalar[pl.INT32] = 0
    for r in pl.range(16):
        v = pl.tensor.read(x, [r, 0])
        if v > 0.0:
            m = pl.yield_(n + 1)
        else:
            m = pl.yield_(n)
        n = m
    cnt = pl.tensor.write(cnt, [0], n)
    return cnt


@pl.function(type=pl.FunctionType.InCore)
def copy_rows(x: pl.Tensor[[16, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
    y = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], y)
    return y


@pl.program
class ReadsAKernelsResult:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        cnt = pl.create_tensor([1], dtype=pl.INT32)
        cnt = count_positive(x, cnt)
        n = pl.tensor.read(cnt, [0])          # waits for count_positive
        for i in pl.range(n // 4):
            yi = pl.slice(y, [16, 64], [i * 16, 0])
            yi = copy_rows(x, yi)
        return y


def test_a_read_of_what_a_kernel_wrote_waits_for_that_kernel(tmp_path):
    c = ir.compile(ReadsAKernelsResult, output_dir=str(tmp_path / "p"), platform="a2a3sim")
    x = randn(16, 64, seed=6)
    x[:, 0] = torch.tensor([1.0 if i < 11 else -1.0 for i in range(16)])   # 11 rows positive
    y = torch.zeros(64, 64)
    c(x, y)
    want = torch.zeros(64, 64)
    for i in range(11 // 4):
        want[i * 16:(i + 1) * 16] = x
    close(y, want, 0, 0)


def test_host_build_graph_refuses_to_read_what_a_kernel_writes(tmp_path):
    c = ir.compile(ReadsAKernelsResult, output_dir=str(tmp_path / "p"), platform="a2a3sim",
                   runtime="host_build_graph")
    with pytest.raises(OrchestrationError, match="tensormap_and_ringbuffer"):
        c(randn(16, 64, seed=7), torch.zeros(64, 64))


def test_a_read_outside_the_tensor_stops_the_run_with_its_reason(tmp_path):
    c = ir.compile(ConfigDriven, output_dir=str(tmp_path / "p"), platform="a2a3sim")
    cfg = torch.tensor([5, 0], dtype=torch.int64)         # scales has 4 entries
    with pytest.raises(OrchestrationError, match=r"index \[4\] is outside"):
        c(randn(64, 64), cfg, torch.ones(4), torch.zeros(64, 64))


@pl.function(type=pl.FunctionType.InCore)
def gather_rows(table: pl.Tensor[[8], pl.INT32], n: pl.Scalar[pl.INDEX],
                src: pl.Tensor[[64, 32], pl.FP32],
                dst: pl.Out[pl.Tensor[[8, 32], pl.FP32]]) -> pl.Tensor[[8, 32], pl.FP32]:
    for k in pl.range(n):                        # only the first n entries of the window
        r = pl.tensor.read(table, [k])
        row = pl.load(src, [r, 0], [1, 32])
        dst = pl.store(row, [k, 0], dst)
    return dst


R = pl.dynamic("R")


@pl.function(type=pl.FunctionType.InCore)
def copy_first(a: pl.Tensor[[R, 32], pl.FP32],
               b: pl.Out[pl.Tensor[[8, 32], pl.FP32]]) -> pl.Tensor[[8, 32], pl.FP32]:
    for k in pl.range(a.shape[0]):
        b = pl.store(pl.load(a, [k, 0], [1, 32]), [k, 0], b)
    return b


@pl.function(type=pl.FunctionType.InCore)
def copy_eight(a: pl.Tensor[[8, 32], pl.FP32],
               b: pl.Out[pl.Tensor[[8, 32], pl.FP32]]) -> pl.Tensor[[8, 32], pl.FP32]:
    b = pl.store(pl.load(a, [0, 0], [8, 32]), [0, 0], b)
    return b


@pl.program
class RuntimeShapes:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[64, 32], pl.FP32], table: pl.Tensor[[12], pl.INT32],
             cfg: pl.Tensor[[2], pl.INT64],
             out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        start = pl.tensor.read(cfg, [0])
        n = pl.tensor.read(cfg, [1])
        rows = n + 0
        picked: pl.Tensor[[8, 32], pl.FP32] = pl.create_tensor([8, 32], dtype=pl.FP32)
        window = pl.slice(table, [8], [start])   # may run past the table's end
        picked = gather_rows(window, n, src, picked)
        part: pl.Tensor[[rows, 32], pl.FP32] = pl.slice(picked, [rows, 32], [0, 0])
        dst = pl.slice(out, [8, 32], [0, 0])
        dst = copy_first(part, dst)
        return out


@pl.program
class TooSmallAView:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, src: pl.Tensor[[64, 32], pl.FP32], cfg: pl.Tensor[[1], pl.INT64],
             out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]) -> pl.Tensor[[8, 32], pl.FP32]:
        n = pl.tensor.read(cfg, [0])
        part = pl.slice(src, [n, 32], [0, 0])
        out = copy_eight(part, out)              # the kernel reads 8 rows of it
        return out


def test_extents_computed_at_run_time_and_a_window_past_the_end(tmp_path):
    import pypto.ir.nodes as N
    main = RuntimeShapes.get("main")
    part = next(s.var for s in main.body if isinstance(s, N.Assign) and s.var.name == "part")
    assert part.type.shape == (N.DynDim("rows"), 32)       # named after its variable
    c = ir.compile(RuntimeShapes, output_dir=str(tmp_path / "p"), platform="a2a3sim")
    src = randn(64, 32, seed=8)
    table = torch.tensor([5, 9, 63, 0, 17, 2, 40, 33, 1, 7, 11, 20], dtype=torch.int32)
    out = torch.zeros(16, 32)
    c(src, table, torch.tensor([8, 3], dtype=torch.int64), out)   # window [8, 16) of 12 entries
    want = torch.zeros(16, 32)
    want[:3] = src[table[8:11].long()]
    close(out[:3], want[:3], 0, 0)


def test_a_view_smaller_than_the_kernel_reads_stops_the_run(tmp_path):
    from pypto.runtime.errors import KernelExecutionError
    c = ir.compile(TooSmallAView, output_dir=str(tmp_path / "p"), platform="a2a3sim")
    out = torch.zeros(8, 32)
    with pytest.raises(KernelExecutionError, match=r"extent 8 but .* has only 3"):
        c(randn(64, 32), torch.tensor([3], dtype=torch.int64), out)
    c(src := randn(64, 32, seed=9), torch.tensor([8], dtype=torch.int64), out)
    close(out, src[:8], 0, 0)


Q = pl.dynamic("Q")


@pl.function(type=pl.FunctionType.InCore)
def add_2d(a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
           c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
    c = pl.store(pl.add(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], c)
    return c


@pl.program
class Reshaped:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[Q], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a2 = pl.reshape(a, [16, 32])                 # a view: the same elements, no copy
        c = add_2d(a2, b, c)
        return c


@pl.program
class ReshapedWindow:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        half = pl.slice(a, [16, 32], [0, 0])         # rows with gaps between them
        flat = pl.reshape(half, [512])
        back = pl.reshape(flat, [16, 32])
        c = add_2d(back, b, c)
        return c


def test_an_orchestration_reshapes_a_contiguous_tensor(tmp_path):
    c = ir.compile(Reshaped, output_dir=str(tmp_path / "r"), platform="a2a3sim")
    a, b = randn(512, seed=10), randn(16, 32, seed=11)
    out = torch.zeros(16, 32)
    c(a, b, out)
    close(out, a.reshape(16, 32) + b, 0, 0)
    with pytest.raises(OrchestrationError, match=r"has 500 elements, not the 512"):
        c(randn(500), b, out)                        # the count is checked when it runs


def test_a_window_with_gaps_is_not_reshaped(tmp_path):
    c = ir.compile(ReshapedWindow, output_dir=str(tmp_path / "w"), platform="a2a3sim")
    with pytest.raises(OrchestrationError, match=r"reshape: .* window with gaps"):
        c(randn(16, 64), randn(16, 32), torch.zeros(16, 32))
