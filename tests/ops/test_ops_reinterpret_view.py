"""pl.reinterpret_view (issue 11.3): a Vec tile's bytes read as another dtype (a treshape
view; the last dim scales by the size ratio). Checked bit for bit against torch.view."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class RV:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.FP32],
             o: pl.Out[pl.Tensor[[8, {N}], pl.{TO}]]) -> pl.Tensor[[8, {N}], pl.{TO}]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rv"):
            t = pl.load(x, [0, 0], [8, 16])
            o = pl.store(pl.reinterpret_view(t, pl.{TO}), [0, 0], o)
        return o
"""
TORCH = {"INT32": torch.int32, "INT16": torch.int16, "FP16": torch.float16, "UINT8": torch.uint8}


@pytest.mark.parametrize("to, n", [("INT32", 16), ("INT16", 32), ("FP16", 32), ("UINT8", 64)])
def test_the_bytes_are_read_as_another_dtype(to, n, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(N=n, TO=to), filename="/u/rv.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x = (torch.arange(128, dtype=torch.float32).reshape(8, 16) + 0.25) * torch.where(
        torch.arange(16) % 2 == 0, 1.0, -1.0)
    o = torch.zeros(8, n, dtype=TORCH[to])
    run(x, o)
    assert torch.equal(o, x.view(TORCH[to]))
    assert "pto.treshape" in (tmp_path / "out" / "ptoas" / "rv.pto").read_text()


def test_a_row_that_is_no_whole_number_of_the_new_dtype_is_a_typed_error():
    src = SRC.format(N=16, TO="INT32").replace(
        "pl.reinterpret_view(t, pl.INT32)",
        "pl.reinterpret_view(pl.row_sum(t, pl.create_tile([8, 16], dtype=pl.FP32)), pl.INT64)")
    with pytest.raises(TypeCheckError, match=r"reinterpret_view: a row of 1 fp32 \(4 bytes\) is not "
                                             r"a whole number of int64"):
        pl.parse(src, filename="/u/rv.py")


def test_a_partial_tile_says_it_is_not_built():
    src = SRC.format(N=16, TO="INT32").replace("pl.load(x, [0, 0], [8, 16])",
                                               "pl.load(x, [0, 0], [8, 16], valid_shape=[4, 16])")
    with pytest.raises(NotBuiltError, match=r"reinterpret_view: a tile with a valid shape"):
        pl.parse(src, filename="/u/rv.py")
