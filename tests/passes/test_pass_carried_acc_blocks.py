"""Split-K loops whose accumulator is carried by the loop (`acc = pl.matmul(...)` on the
first K block, `pl.matmul_acc(acc, ...)` on the others): AutoTileMatmulL0 K-splits a
matmul_acc whose operands do not fit L0A / L0B, and runs the whole loop once per block of
the result when the accumulator does not fit L0C. Integer accumulation is compared
exactly with torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType, chip
from pypto.ir.nodes import Call, For, MemorySpace, TileType
from pypto.ir.visit import walk
from pypto.passes.carried_acc_blocks import block_shape

A2 = chip(BackendType.Ascend910B).capacity

SRC = """
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{M}, {K}], pl.INT8], b: pl.Tensor[[{K}, {N}], pl.INT8],
             c: pl.Out[pl.Tensor[[{M}, {N}], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="splitk"):
            acc = pl.create_tensor([{M}, {N}], dtype=pl.INT32)
            for kb in pl.range({K} // {KT}):
                k0 = kb * {KT}
                at = a[0:{M}, k0:k0 + {KT}]
                bt = b[k0:k0 + {KT}, 0:{N}]
                if k0 == 0:
                    acc = pl.matmul(at, bt, out_dtype=pl.INT32)
                else:
                    acc = pl.matmul_acc(acc, at, bt)
            {TAIL}
        return c
"""
STORE = "c[0:{M}, 0:{N}] = acc"


def _src(m, n, k, kt, tail=STORE):
    return SRC.format(M=m, N=n, K=k, KT=kt, TAIL=tail.format(M=m, N=n))


@pytest.mark.parametrize("m, n, k, kt", [
    (16, 1152, 1024, 128),     # the accumulator fits L0C; each K block's B is too large for L0B
    (256, 256, 256, 128),      # the accumulator (256 KiB) does not fit L0C: blocks of the result
    (512, 128, 384, 128),
], ids=["K-split matmul_acc", "result blocks", "row blocks"])
def test_split_k_loops_match_torch_exactly(m, n, k, kt, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(_src(m, n, k, kt), filename="/u/s.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    g = torch.Generator().manual_seed(9)
    a = torch.randint(-3, 4, (m, k), dtype=torch.int8, generator=g)
    b = torch.randint(-3, 4, (k, n), dtype=torch.int8, generator=g)
    out = torch.zeros(m, n, dtype=torch.int32)
    run(a, b, out)
    assert torch.equal(out, a.int() @ b.int())


def _kernel(src):
    from pypto.passes import run_pipeline
    from pypto.passes.base import PassOptions
    prog = run_pipeline(pl.parse(src, filename="/u/s.py"), PassOptions(backend_type=BackendType.Ascend910B))
    return next(f for f in prog.functions if f.name == "splitk")


def test_each_result_block_finishes_its_k_loop():
    k = _kernel(_src(256, 256, 256, 128))
    outer = [s for s in k.body if isinstance(s, For)]
    assert len(outer) == 1, "one grid of result blocks replaces the K loop"
    ops = [s.value.op for s in walk(k.body) if hasattr(s, "value") and isinstance(s.value, Call)]
    assert ops.count("tile.store") == 1 and ops.count("tile.slice") >= 2
    for s in walk(k.body):
        t = getattr(getattr(s, "var", None), "type", None)
        if isinstance(t, TileType) and t.memory_space in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc):
            assert t.nbytes() <= A2[t.memory_space] // 2, (s.var.name, t.shape)


def test_block_shape_keeps_whole_rows_when_it_can():
    assert block_shape(256, 256, A2[MemorySpace.Acc]) == (256, 64)
    assert block_shape(272, 144, A2[MemorySpace.Acc]) == (272, 48)
    assert block_shape(24, 64, A2[MemorySpace.Acc]) is None


def test_an_accumulator_read_otherwise_is_left_whole():
    """Reading the accumulator other than by accumulating into it (here: scaling it on
    the vector side each step) is not a split-K loop: the pass leaves it, and the
    planner's overflow error names the buffer."""
    src = _src(256, 256, 256, 128, tail="""c[0:{M}, 0:{N}] = pl.mul(acc, 2)""")
    from pypto.errors import MemoryOverflowError
    with pytest.raises(MemoryOverflowError, match=r"needs 262144 bytes of Acc but a2a3 has 131072"):
        _kernel(src)
