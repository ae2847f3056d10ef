"""AutoTileMatmulL0: matmuls too big for L0A / L0B / L0C run as blocks that fit; the blocks
go where the result is used (stored to GM, or assembled into a Mat tile the next matmul
reads). The block choice, what the pass leaves alone, and the numbers against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType, chip
from pypto.ir.nodes import Call, For, If, MemorySpace
from pypto.ir.visit import walk
from pypto.passes import l0_tile_chooser as l0
from pypto.passes.auto_tile_matmul_l0 import choose, k_only

A2 = chip(BackendType.Ascend910B).capacity
A5 = chip(BackendType.Ascend950).capacity


def test_the_tile_is_the_choosers_for_the_chips_buffers():
    for (m, n, k, nb, cap) in [(256, 256, 128, 4, A2), (256, 256, 32, 4, A2), (256, 64, 256, 2, A2),
                               (128, 128, 512, 2, A2), (512, 512, 512, 2, A5), (320, 320, 64, 4, A2)]:
        got = choose(m, n, k, nb, cap)
        want = l0.choose_l0_tile(l0.L0TileConfig(
            M=m, N=n, K=k, l0a_bytes=cap[MemorySpace.Left], l0b_bytes=cap[MemorySpace.Right],
            l0c_bytes=cap[MemorySpace.Acc], bytes_a=nb, bytes_b=nb, bytes_c=4, allow_a_stationary=True,
            allow_b_stationary=True, allow_k_boundary=True))
        assert (got.m, got.n, got.k, got.stationarity) == (want.m, want.n, want.k, want.stationarity)
        assert got.m * got.k * nb <= cap[MemorySpace.Left] and got.k * got.n * nb <= cap[MemorySpace.Right]
        assert got.m * got.n * 4 <= cap[MemorySpace.Acc] and got.m % 16 == got.n % 16 == got.k % 16 == 0
    # two accumulators only where asked (the DSA_RP / PTOAS planners, or the PyPTO flag)
    assert not choose(320, 320, 64, 4, A2).double_buffer_c
    assert choose(320, 320, 64, 4, A2, dbc=True).double_buffer_c
    # a result that stays whole: the largest K step whose blocks fit half of L0A / L0B
    assert k_only(128, 128, 512, 2, A2) == 128 and k_only(128, 128, 48, 2, A2) == 48
    assert k_only(16, 1152, 128, 1, A2) == 32                 # no K step fits half of L0B: all of it
    # 136 rows: 80-row tiles, the last one a partial tile of 56 (peeled after the loop)
    assert choose(136, 64, 64, 4, A2).m == 80


SRC = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
             e: pl.Tensor[[{N}, {E}], pl.{DT}], out: pl.Out[pl.Tensor[[{OM}, {ON}], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            {BODY}
        return out
"""
STORE = "out = pl.assemble(out, c, [0, 0])"
CHAIN = """cb = pl.cast(c, pl.{DT}, mode="rint")
            out = pl.assemble(out, pl.matmul(cb, e, out_dtype=pl.FP32), [0, 0])"""
TORCH = {"FP32": torch.float32, "BF16": torch.bfloat16, "FP16": torch.float16}


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("case", [
    ("store, split K", 256, 128, 256, "FP32", STORE),
    ("store, full K", 256, 32, 256, "FP32", STORE),
    ("chain, split K", 256, 192, 256, "BF16", CHAIN),
    ("chain, full K", 256, 32, 256, "BF16", CHAIN),
    ("fits L0C, split K", 128, 512, 128, "FP16", CHAIN),
], ids=lambda c: c[0] if isinstance(c, tuple) else c)
def test_oversized_matmuls_run_in_blocks(case, platform, tmp_path, monkeypatch):
    _, m, k, n, dtype, body = case
    chain = body is CHAIN
    src = SRC.format(M=m, K=k, N=n, E=64, DT=dtype, OM=m, ON=64 if chain else n, BODY=body.format(DT=dtype))
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(src, filename="/u/p.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform=platform)
    torch.manual_seed(6)
    # scaled by 1/sqrt(fan-in): the 16-bit intermediate stays O(1)
    a, b, e = (torch.randn(*s).div(s[0] ** 0.5).to(TORCH[dtype]) for s in ((m, k), (k, n), (n, 64)))
    out = torch.zeros(m, 64 if chain else n)
    run(a, b, e, out)
    c = a.float() @ b.float()
    want = (c.to(TORCH[dtype]).float() @ e.float()) if chain else c
    # (a chain rounds its intermediate to 16 bits: a sum order apart can round it a step apart)
    assert torch.allclose(out, want, rtol=1e-3 if chain else 2e-5, atol=1e-2 if chain else 1e-4)
    # every cube buffer the kernel uses fits: the planners would have refused otherwise
    low = ir.compile(prog, output_dir=tmp_path / "out2", platform=platform, skip_ptoas=True)
    assert low is not None


def _lowered(src, platform="a2a3sim"):
    from pypto.passes import run_pipeline
    from pypto.passes.base import PassOptions
    from pypto.backend import backend_for_platform
    return run_pipeline(pl.parse(src, filename="/u/p.py"), PassOptions(backend_type=backend_for_platform(platform)))


def test_what_the_blocked_kernel_looks_like():
    prog = _lowered(SRC.format(M=256, K=128, N=256, E=64, DT="FP32", OM=256, ON=256, BODY=STORE))
    k = next(f for f in prog.functions if f.name == "k")
    calls = [s.value for s in walk(k.body) if hasattr(s, "value") and isinstance(s.value, Call)]
    ops = [c.op for c in calls]
    assert "tile.move" not in ops                          # no whole operand goes to Left / Right
    # [128, 256] tiles, K in steps of 32: the first step starts the sum, the others add to it
    assert ops.count("tile.extract") == 2 and ops.count("tile.matmul") == 1 and ops.count("tile.matmul_acc") == 1
    loops = [s for s in walk(k.body) if isinstance(s, For)]
    assert len(loops) == 3                                 # rows, cols of tiles, and K steps
    k_loop = loops[-1]
    assert (k_loop.stage, k_loop.step.value, k_loop.stop.value) == (2, 32, 128)
    assert any(isinstance(s, If) for s in k_loop.body)     # ko == 0: matmul, else matmul_acc
    for c in calls:
        t = c.type
        if getattr(t, "memory_space", None) in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc):
            # one accumulator takes all of L0C; the operands two blocks each (the K pipeline)
            assert t.nbytes() <= A2[t.memory_space] // (1 if t.memory_space is MemorySpace.Acc else 2)


def test_matmuls_that_fit_are_left_alone():
    prog = _lowered(SRC.format(M=64, K=64, N=64, E=64, DT="FP32", OM=64, ON=64, BODY=STORE))
    k = next(f for f in prog.functions if f.name == "k")
    assert not [s for s in walk(k.body) if isinstance(s, For)]
    assert [s.value.op for s in walk(k.body) if hasattr(s, "value") and isinstance(s.value, Call)].count("tile.move") == 2


BIAS = """
import pypto.language as pl

@pl.program
class B:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
          bias: pl.Tensor[[1, {N}], pl.{ACC}], out: pl.Out[pl.Tensor[[{M}, {N}], pl.{ACC}]]) -> pl.Tensor[[{M}, {N}], pl.{ACC}]:
        a_mat = pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat)
        b_mat = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)
        bias_mat = pl.load(bias, [0, 0], [1, {N}], target_memory=pl.Mem.Mat)
        c = pl.tile.matmul_bias(a_mat, b_mat, {BIASARG})
        return pl.store(c, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
             bias: pl.Tensor[[1, {N}], pl.{ACC}], out: pl.Out[pl.Tensor[[{M}, {N}], pl.{ACC}]]) -> pl.Tensor[[{M}, {N}], pl.{ACC}]:
        return self.k(a, b, bias, out)
"""


@pytest.mark.parametrize("m, k, n, dtype, acc, bias_arg", [
    (256, 256, 512, "BF16", "FP32", "bias_mat"),                  # the bias split by column blocks
    (512, 64, 128, "BF16", "FP32", "pl.move(bias_mat, target_memory=pl.Mem.Bias)"),   # resident
    (128, 512, 256, "INT8", "INT32", "bias_mat"),
], ids=["bias split", "bias resident", "int8"])
def test_biased_matmuls_add_the_bias_once_per_block(m, k, n, dtype, acc, bias_arg, tmp_path, monkeypatch):
    src = BIAS.format(M=m, K=k, N=n, DT=dtype, ACC=acc, BIASARG=bias_arg)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/b.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    torch.manual_seed(8)
    if dtype == "INT8":
        a, b = torch.randint(-8, 8, (m, k), dtype=torch.int8), torch.randint(-8, 8, (k, n), dtype=torch.int8)
        bias = torch.randint(-100, 100, (1, n), dtype=torch.int32)
        want = a.int() @ b.int() + bias
    else:
        a, b = (torch.randn(m, k) / k ** 0.5).bfloat16(), torch.randn(k, n).bfloat16()
        bias = torch.randn(1, n)
        want = a.float() @ b.float() + bias
    out = torch.zeros(m, n, dtype=want.dtype)
    run(a, b, bias, out)
    assert torch.equal(out, want) if dtype == "INT8" else torch.allclose(out, want, rtol=1e-5, atol=1e-4)


def test_a_blocked_matmul_inside_a_loop(tmp_path, monkeypatch):
    """The blocks' stores thread the tensor the enclosing loop carries."""
    src = """
import pypto.language as pl

@pl.program
class L:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[128, 256], pl.FP32],
             out: pl.Out[pl.Tensor[[512, 256], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="lk"):
            for i in pl.range(2):
                c = pl.matmul(a[i * 256:i * 256 + 256, :], b, out_dtype=pl.FP32)
                out = pl.assemble(out, c, [i * 256, 0])
        return out
"""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/l.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    a, b, out = torch.randn(512, 128), torch.randn(128, 256), torch.zeros(512, 256)
    run(a, b, out)
    assert torch.allclose(out, a @ b, rtol=1e-5, atol=1e-4)


TILE = """
import pypto.language as pl

@pl.program
class T:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
          out: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        lm = pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat)
        rm = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)
        c = pl.tile.matmul(lm, rm)
        out = pl.store(c, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.{DT}], b: pl.Tensor[[{K}, {N}], pl.{DT}],
             out: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        return self.k(a, b, out)
"""


@pytest.mark.parametrize("planner", ["PYPTO", "DSA_RP", "PTOAS"])
@pytest.mark.parametrize("m, k, n, dtype, design", [
    (320, 64, 320, "FP32", "64x128 tiles, both edges peeled"),
    (272, 32, 416, "FP32", "48x256 tiles, odd inner trip count"),
    (16, 64, 256, "FP32", "one row of two column tiles"),
    (48, 352, 96, "BF16", "A held (DSA_RP / PTOAS)"),
    (64, 80, 256, "BF16", "B held (DSA_RP / PTOAS)"),
    (128, 160, 256, "BF16", "K not a multiple of the step: the last block peeled"),
], ids=lambda v: v if isinstance(v, str) and " " in v else None)
def test_every_design_point_computes_what_torch_does(planner, m, k, n, dtype, design, tmp_path, monkeypatch):
    """The chooser's tiles, the held operand, the two accumulators (not under PYPTO), the
    peeled edges and the peeled K block, each on every planner."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(TILE.format(M=m, K=k, N=n, DT=dtype), filename="/u/t.py")
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim", memory_planner=planner)
    torch.manual_seed(m + n)
    a, b = (torch.randn(m, k) / k ** 0.5).to(TORCH[dtype]), torch.randn(k, n).to(TORCH[dtype])
    out = torch.zeros(m, n)
    run(a, b, out)
    assert torch.allclose(out, a.float() @ b.float(), rtol=1e-4, atol=1e-4)


def _tiled(m, k, n, dtype, planner):
    from pypto.passes import by_name, run_pass
    from pypto.passes.base import PassOptions
    prog = pl.parse(TILE.format(M=m, K=k, N=n, DT=dtype), filename="/u/t.py")
    opts = PassOptions(memory_planner=planner)
    for name in ("ConvertToSSA", "ConvertTensorToTileOps", "FlattenTileNdTo2D", "InferTileMemorySpace",
                 "AutoTileMatmulL0"):
        prog = run_pass(by_name(name), prog, opts, verify=False)
    return next(f for f in prog.functions if f.name == "k")


def test_the_held_operand_is_extracted_once_per_outer_iteration():
    for (m, k, n), held in [((48, 352, 96), MemorySpace.Left), ((64, 80, 256), MemorySpace.Right)]:
        k_ = _tiled(m, k, n, "BF16", "DSA_RP")
        outer = next(s for s in k_.body if isinstance(s, For))
        ext = [s.value for s in outer.body if hasattr(s, "value") and isinstance(s.value, Call)]
        assert [c.kwargs["target_memory"] for c in ext] == [held]
        inner = next(s for s in outer.body if isinstance(s, For))
        assert inner.stage == 2 and inner.attrs == {"pipeline_double_buffer_c": True}
    # the PyPTO planner has one accumulator unless asked
    assert not any(s.attrs for s in walk(_tiled(48, 352, 96, "BF16", "PYPTO").body) if isinstance(s, For))


def test_a_k_block_the_step_does_not_divide_is_peeled():
    k_ = _tiled(128, 160, 256, "BF16", "PYPTO")
    (loop,) = [s for s in walk(k_.body) if isinstance(s, For)]
    step, stop = loop.step.value, loop.stop.value
    assert 160 % step and stop == 160 - 160 % step
    tail = [s.value for s in k_.body if hasattr(s, "value") and isinstance(s.value, Call)
            and s.value.op == "tile.matmul_acc"]
    assert len(tail) == 1 and tail[0].args[1].type.shape == (128, 160 % step)
