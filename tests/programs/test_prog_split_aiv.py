"""`for aiv_id in pl.split_aiv(2, mode=...)` (issue 12.2): a region each of the core group's
two AIVs runs as its own lane, aiv_id its index; pl.aiv_shard brings a cube result into
the region (each lane its half under UP_DOWN / LEFT_RIGHT, the whole under NONE) and
pl.aic_gather takes the lanes' parts back to the cube. Both AIVs are simulated, each on its
own thread; every result is checked against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import close, randn

N = 64
SHARD = """
import pypto.language as pl
N = 64

@pl.program
class Shard:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
             out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="qk"):
            a_l = pl.move(pl.load(a, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            qk = pl.matmul(a_l, b_r)
            for i in pl.range(2):
                for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.{MODE}):
                    h = pl.aiv_shard(qk)
                    s = pl.adds(pl.muls(h, 2.0), i)
                    {STORE}
        return out
"""
STORES = {"UP_DOWN": "out = pl.store(s, [aiv_id * (N // 2), 0], out)",
          "LEFT_RIGHT": "out = pl.store(s, [0, aiv_id * (N // 2)], out)",
          # whole tiles on both lanes; each stores its own half of the rows
          "NONE": "out = pl.store(pl.slice(s, [N // 2, N], [aiv_id * (N // 2), 0]), [aiv_id * (N // 2), 0], out)"}


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT", "NONE"])
def test_each_lane_takes_its_part_of_a_cube_result(mode, tmp_path):
    prog = pl.parse(SHARD.format(MODE=mode, STORE=STORES[mode]), filename="/u/shard.py")
    c = ir.compile(prog, output_dir=str(tmp_path / "o"), platform="a2a3sim")
    a, b, out = randn(N, N, seed=1), randn(N, N, seed=2), torch.zeros(N, N)
    c(a, b, out)
    close(out, 2 * (a @ b) + 1, 1e-4, 1e-4)             # (the second iteration's)
    pto = (tmp_path / "o" / "ptoas" / "qk_0.pto").read_text()
    aiv = pto[pto.index("func.func @qk_0_aiv("):]
    assert "pypto.aiv_lanes = 2" in aiv and "%__pypto_spmd_subblock_idx" in aiv
    want = {"UP_DOWN": "{split = 1}", "LEFT_RIGHT": "{split = 2}", "NONE": "{lanes = 2}"}[mode]
    assert want in aiv.split("pto.tpop_from_aic")[1].split("\n")[0]


GATHER = """
import pypto.language as pl
N = 64

@pl.program
class Gather:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
             w: pl.Tensor[[N, N], pl.FP32], out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="two_mm"):
            a_l = pl.move(pl.load(a, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            s = pl.matmul(a_l, b_r)
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.{MODE}):
                p = pl.exp(pl.muls(pl.aiv_shard(s), 0.01))
                g = pl.aic_gather(p)
            w_r = pl.move(pl.load(w, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            out = pl.store(pl.matmul(pl.move(g, target_memory=pl.Mem.Left), w_r), [0, 0], out)
        return out
"""


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT", "NONE"])
def test_the_lanes_parts_rejoin_for_the_cube(mode, tmp_path):
    prog = pl.parse(GATHER.format(MODE=mode), filename="/u/gather.py")
    c = ir.compile(prog, output_dir=str(tmp_path / "o"), platform="a2a3sim")
    a, b, w, out = randn(N, N, seed=3), randn(N, N, seed=4), randn(N, N, seed=5), torch.zeros(N, N)
    c(a, b, w, out)
    close(out, torch.exp((a @ b) * 0.01) @ w, 1e-3, 1e-3)


LANES = """
import pypto.language as pl

@pl.program
class Lanes:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[4, 64], pl.FP32], y: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                for r in pl.range(aiv_id, 4, 2):           # lane 0 the even rows, lane 1 the odd
                    t = pl.load(x, [r, 0], [1, 64])
                    y = pl.store(pl.adds(t, aiv_id + 1), [r, 0], y)
        return y
"""


def test_a_vector_kernel_with_a_region_runs_both_lanes(tmp_path):
    c = ir.compile(pl.parse(LANES, filename="/u/lanes.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim")
    x, y = randn(4, 64, seed=6), torch.zeros(4, 64)
    c(x, y)
    close(y, x + torch.tensor([[1.0], [2.0], [1.0], [2.0]]), 1e-6, 1e-6)


def test_a_crossing_outside_a_region_and_bad_regions_are_refused():
    outside = SHARD.format(MODE="UP_DOWN", STORE=STORES["UP_DOWN"]).replace(
        "            for i in pl.range(2):\n", "            h0 = pl.aiv_shard(qk)\n            for i in pl.range(2):\n")
    with pytest.raises(E.TypeCheckError, match=r"pl.aiv_shard crosses into or out of a pl.split_aiv region") as e:
        pl.parse(outside, filename="/u/shard.py")
    assert e.value.span.line == 14
    four = SHARD.format(MODE="UP_DOWN", STORE=STORES["UP_DOWN"]).replace("pl.split_aiv(2,", "pl.split_aiv(4,")
    with pytest.raises(E.ParserError, match=r"two AIV lanes"):
        pl.parse(four, filename="/u/shard.py")
    nested = SHARD.format(MODE="UP_DOWN", STORE=STORES["UP_DOWN"]).replace(
        "                    h = pl.aiv_shard(qk)\n",
        "                    for j in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n                        pass\n"
        "                    h = pl.aiv_shard(qk)\n")
    with pytest.raises(E.ParserError, match=r"do not nest"):
        pl.parse(nested, filename="/u/shard.py")
    both = SHARD.format(MODE="UP_DOWN", STORE=STORES["UP_DOWN"]).replace(
        'name_hint="qk")', 'name_hint="qk", optimizations=[pl.split(pl.SplitMode.UP_DOWN)])')
    with pytest.raises(E.CodegenError, match=r"pl.split_aiv regions and pl.split"):
        ir.compile(pl.parse(both, filename="/u/shard.py"), platform="a2a3sim", skip_ptoas=True)


TENSOR_FORM = """
import pypto.language as pl
N = 64

@pl.program
class TensorForm:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32], q: pl.Tensor[[16, N], pl.FP32],
             out: pl.Out[pl.Tensor[[N, N], pl.FP32]], o2: pl.Out[pl.Tensor[[16, N], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="shard"):
            acc = pl.matmul(a, b)                       # tensor values: their tiles come later
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                h = pl.aiv_shard(acc)
                out[aiv_id * (N // 2):aiv_id * (N // 2) + N // 2, 0:N] = pl.muls(h, 2.0)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gather"):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                part = pl.full([N // 2, N], dtype=pl.FP32, value=1.0)
                g = pl.aic_gather(pl.adds(part, aiv_id))
            o2[0:16, 0:N] = pl.matmul(q, g)
        return out, o2
"""


def test_the_crossings_take_tensor_values_too(tmp_path):
    c = ir.compile(pl.parse(TENSOR_FORM, filename="/u/tensor_form.py"), output_dir=str(tmp_path / "o"),
                   platform="a2a3sim")
    a, b, q = randn(N, N, seed=7), randn(N, N, seed=8), randn(16, N, seed=9)
    out, o2 = torch.zeros(N, N), torch.zeros(16, N)
    c(a, b, q, out, o2)
    close(out, 2 * (a @ b), 1e-4, 1e-4)
    g = torch.cat([torch.ones(N // 2, N), 2 * torch.ones(N // 2, N)])     # 1 + aiv_id
    close(o2, q @ g, 1e-4, 1e-4)


B_TRANS = """
import pypto.language as pl
R = {R}
K = {K}

@pl.program
class BTrans:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, kv: pl.Tensor[[R, K], pl.{DT}], q: pl.Tensor[[16, K], pl.{DT}],
             out: pl.Out[pl.Tensor[[16, R], pl.FP32]]) -> pl.Tensor[[16, R], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="qk"):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                part = pl.muls(pl.slice(kv, [R // 2, K], [aiv_id * (R // 2), 0]), 2.0)
                g = pl.aic_gather(part)
            out[0:16, 0:R] = pl.matmul(q, g, b_trans=True, out_dtype=pl.FP32)   # the cube reads g transposed
        return out
"""


@pytest.mark.parametrize("r, k, dtype", [(32, 64, "FP32"),      # whole in L0B: one transposed move
                                         (128, 512, "BF16")])   # 128 KB: L0 blocks, each read transposed
def test_the_cube_reads_a_gathered_tile_transposed(r, k, dtype, tmp_path):
    src = B_TRANS.format(R=r, K=k, DT=dtype)
    c = ir.compile(pl.parse(src, filename="/u/btrans.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim")
    tdt = torch.float32 if dtype == "FP32" else torch.bfloat16
    kv, q, out = randn(r, k, seed=10).to(tdt), randn(16, k, seed=11).to(tdt), torch.zeros(16, r)
    c(kv, q, out)
    close(out, q.float() @ (2 * kv.float()).T, 1e-2, 1e-2)
    pto = (tmp_path / "o" / "ptoas" / "qk.pto").read_text()
    assert "{transpose = true}" in pto[pto.index("@qk_aic("):pto.index("@qk_aiv(")]


def test_a_transposed_move_reads_mat_only():
    src = """
import pypto.language as pl

@pl.program
class Bad:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 16])
        l = pl.move(t, target_memory=pl.Mem.Left, transpose=True)
        return out
"""
    with pytest.raises(E.TypeCheckError, match=r"move\(transpose=True\) reads a 2-D Mat tile") as e:
        pl.parse(src, filename="/u/bad.py")
    assert e.value.span.line == 9
