"""The operator page's dtypes come from the type rules themselves (pypto/ir/ops/probe.py)
and its 'computes in' column from InferTileMemorySpace's placement tables."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.ops.indexing import GATHER_DTYPES
from pypto.ir.ops.probe import accepts, placement

FLOATS = {dt.FP32, dt.FP16, dt.BF16}


def test_the_probe_reports_what_the_rules_take():
    assert set(accepts("tile.exp")) == FLOATS
    assert not FLOATS & set(accepts("tile.and_")) and dt.INT32 in accepts("tile.and_")
    assert accepts("tile.sort32") == (dt.FP32,)
    assert set(accepts("tile.gather")) == set(GATHER_DTYPES)
    assert set(accepts("tile.matmul")) == {dt.FP32, dt.FP16, dt.BF16, dt.INT8}
    assert dt.FP8E4M3FN in accepts("tile.load") and dt.FP8E4M3FN not in accepts("tile.add")
    assert accepts("array.create") is None          # not a tile or tensor op: not probed


def test_placement_follows_the_memory_space_pass():
    assert placement("tile.matmul") == "Left x Right -> Acc"
    assert placement("tile.matmul_bias") == "Left x Right x Bias -> Acc"
    assert placement("tile.add") == "Vec"
    assert placement("tile.slice") == "its source's"
    assert placement("tile.assemble") == "the target's"
    assert placement("tensor.add") == "tensors"
