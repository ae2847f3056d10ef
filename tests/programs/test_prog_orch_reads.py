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
