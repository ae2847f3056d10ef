"""A Group's automatic cross-core pipe is a ring of slot_num slots (2 unless
pl.cross_core_slot(slot_num=N) says) in the receiving core's space, each as large as
the largest tile it receives: the ring and the kernel's other tiles must fit there
together, or the compile names the ring, its bytes and the knob."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import close, randn

SRC = """
import pypto.language as pl
R = {R}

@pl.program
class Ring:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, kv: pl.Tensor[[R, 128], pl.BF16], q: pl.Tensor[[64, 128], pl.BF16],
             out: pl.Out[pl.Tensor[[64, R], pl.FP32]]) -> pl.Tensor[[64, R], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ring"{OPT}):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                part = pl.muls(pl.slice(kv, [R // 2, 128], [aiv_id * (R // 2), 0]), 2.0)
                g = pl.aic_gather(part)
            out[0:64, 0:R] = pl.matmul(q, g, b_trans=True, out_dtype=pl.FP32)
        return out
"""


def _src(rows: int, slots: int | None) -> str:
    opt = f", optimizations=[pl.cross_core_slot(slot_num={slots})]" if slots else ""
    return SRC.format(R=rows, OPT=opt)


@pytest.mark.parametrize("slots", [None, 3])
def test_a_ring_that_fits_runs(slots, tmp_path):
    c = ir.compile(pl.parse(_src(256, slots), filename="/u/ring.py"), output_dir=str(tmp_path / "o"),
                   platform="a2a3sim")
    kv, q = randn(256, 128, seed=1).to(torch.bfloat16), randn(64, 128, seed=2).to(torch.bfloat16)
    out = torch.zeros(64, 256)
    c(kv, q, out)
    close(out, q.float() @ (2 * kv.float()).T, 1e-2, 1e-2)


def test_a_ring_deeper_than_the_receiving_space_is_reported():
    # 512 x 128 bf16 = 131072 bytes a slot; 8 slots = 1 MiB of a2a3's 512 KiB Mat
    with pytest.raises(E.MemoryOverflowError) as e:
        ir.compile(pl.parse(_src(512, 8), filename="/u/ring.py"), platform="a2a3sim")
    msg = str(e.value)
    assert "cross-core pipe ring takes 1048576" in msg and "8 slots of 131072 bytes" in msg
    assert "bytes of Mat but a2a3 has 524288" in msg
    assert "pl.cross_core_slot(slot_num=N)" in e.value.hint
    assert e.value.span.file.endswith("ring.py")
