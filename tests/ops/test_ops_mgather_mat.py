"""pl.tile.mgather into Mat (issue 11.5): a matmul operand gathered straight from GM, rows
by a [1, R] INT32 index tensor or elements by an index tensor of the result's shape (staged
in a GM scratch tensor of the source's dtype, as the hardware does); read back through an
identity matmul. Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError

ROW = """
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, mem: pl.Tensor[[64, 32], pl.{DT}], idx: pl.Tensor[[1, 32], pl.INT32],
          eye: pl.Tensor[[32, 32], pl.{DT}], out: pl.Out[pl.Tensor[[32, 32], pl.{ACC}]]) -> pl.Tensor[[32, 32], pl.{ACC}]:
        g = pl.tile.mgather(mem, idx, coalesce="row", gather_oob="{OOB}", target_memory=pl.Mem.Mat)
        e = pl.load(eye, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        return pl.store(pl.matmul(e, g), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, mem: pl.Tensor[[64, 32], pl.{DT}], idx: pl.Tensor[[1, 32], pl.INT32],
             eye: pl.Tensor[[32, 32], pl.{DT}], out: pl.Out[pl.Tensor[[32, 32], pl.{ACC}]]) -> pl.Tensor[[32, 32], pl.{ACC}]:
        return self.k(mem, idx, eye, out)
"""
ELEM = """
import pypto.language as pl

@pl.program
class E:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, mem: pl.Tensor[[2048], pl.{DT}], idx: pl.Tensor[[32, 32], pl.INT32],
          scratch: pl.Tensor[[1024], pl.{DT}], eye: pl.Tensor[[32, 32], pl.{DT}],
          out: pl.Out[pl.Tensor[[32, 32], pl.{ACC}]]) -> pl.Tensor[[32, 32], pl.{ACC}]:
        g = pl.tile.mgather(mem, idx, coalesce="elem", gather_oob="{OOB}", target_memory=pl.Mem.Mat,
                            scratch=scratch)
        e = pl.load(eye, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        return pl.store(pl.matmul(e, g), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, mem: pl.Tensor[[2048], pl.{DT}], idx: pl.Tensor[[32, 32], pl.INT32],
             scratch: pl.Tensor[[1024], pl.{DT}], eye: pl.Tensor[[32, 32], pl.{DT}],
             out: pl.Out[pl.Tensor[[32, 32], pl.{ACC}]]) -> pl.Tensor[[32, 32], pl.{ACC}]:
        return self.k(mem, idx, scratch, eye, out)
"""
TORCH = {"FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32, "INT8": torch.int8}
ACC = {"INT8": ("INT32", torch.int32)}


def _picked(idx, n, oob):
    """The row / element each index reads: indices are unsigned 32-bit (-1 is past the end)."""
    u = idx.long() & 0xFFFFFFFF
    if oob == "clamp":
        return u.clamp(max=n - 1), None
    if oob == "wrap":
        return u.remainder(n), None
    if oob == "zero":
        return u.clamp(max=n - 1), u >= n
    return u, None


@pytest.mark.parametrize("dtype", ["FP16", "BF16", "FP32", "INT8"])
@pytest.mark.parametrize("mode, oob", [("row", "undefined"), ("elem", "undefined"), ("row", "wrap"),
                                       ("elem", "zero"), ("row", "clamp")])
def test_gathered_into_mat_feeds_the_cube(mode, oob, dtype, tmp_path, monkeypatch):
    acc, acc_t = ACC.get(dtype, ("FP32", torch.float32))
    src = (ROW if mode == "row" else ELEM).format(DT=dtype, ACC=acc, OOB=oob)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(src, filename="/u/g.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    torch.manual_seed(10)
    eye = torch.eye(32).to(TORCH[dtype])
    out = torch.zeros(32, 32, dtype=acc_t)
    span = 96 if oob != "undefined" else None        # some indices outside the tensor
    if mode == "row":
        mem = torch.randint(-20, 20, (64, 32)).to(TORCH[dtype])
        idx = torch.randint(-16 if span else 0, span or 64, (1, 32), dtype=torch.int32)
        run(mem, idx, eye, out)
        pick, zero = _picked(idx[0].long(), 64, oob)
        want = mem[pick].to(acc_t)
        if zero is not None:
            want[zero] = 0
    else:
        mem = torch.randint(-20, 20, (2048,)).to(TORCH[dtype])
        idx = torch.randint(-100 if span else 0, 2200 if span else 2048, (32, 32), dtype=torch.int32)
        scratch = torch.zeros(1024, dtype=TORCH[dtype])
        run(mem, idx, scratch, eye, out)
        pick, zero = _picked(idx.long(), 2048, oob)
        want = mem[pick].to(acc_t)
        if zero is not None:
            want[zero] = 0
        assert torch.equal(scratch.reshape(32, 32).to(acc_t), want)      # staged in GM on the way
    assert torch.equal(out, want)


def test_typed_errors():
    with pytest.raises(TypeCheckError, match=r"stages them in GM: pass scratch="):
        pl.parse(ELEM.format(DT="FP16", ACC="FP32", OOB="undefined").replace(",\n                            scratch=scratch", ""),
                 filename="/u/g.py")
    with pytest.raises(TypeCheckError, match=r"the scratch holds 1024 fp16 elements, got Tensor\[256\]"):
        pl.parse(ELEM.format(DT="FP16", ACC="FP32", OOB="undefined").replace("[1024]", "[256]"), filename="/u/g.py")
    with pytest.raises(TypeCheckError, match=r"valid_shape is \[rows, cols\] within the \[32, 32\] result"):
        pl.parse(ROW.format(DT="FP16", ACC="FP32", OOB="undefined").replace(
            "target_memory=pl.Mem.Mat)", "target_memory=pl.Mem.Mat, valid_shape=[8, 40])"), filename="/u/g.py")


PARTIAL = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, mem: pl.Tensor[[64, 32], pl.FP16], idx: pl.Tensor[[1, 32], pl.INT32],
          eye: pl.Tensor[[32, 32], pl.FP16], out: pl.InOut[pl.Tensor[[{OR}, 32], pl.FP32]]) -> pl.Tensor[[{OR}, 32], pl.FP32]:
        g = pl.tile.mgather(mem, idx, coalesce="row", target_memory=pl.Mem.Mat, valid_shape=[{VR}, {VC}])
        e = pl.load(eye, [0, 0], [32, 32], valid_shape=[32, {VR}], target_memory=pl.Mem.Mat)
        prod = pl.matmul(e, g)
        return pl.store(pl.tile.slice(prod, [{OR}, 32], [0, 0]), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, mem: pl.Tensor[[64, 32], pl.FP16], idx: pl.Tensor[[1, 32], pl.INT32],
             eye: pl.Tensor[[32, 32], pl.FP16], out: pl.InOut[pl.Tensor[[{OR}, 32], pl.FP32]]) -> pl.Tensor[[{OR}, 32], pl.FP32]:
        return self.k(mem, idx, eye, out)
"""


@pytest.mark.parametrize("vr, vc", [(16, 32), (32, 21), (16, 21)])
def test_a_partial_gather_through_a_partial_product(vr, vc, tmp_path, monkeypatch):
    """Only the valid part is gathered; the cube multiplies the valid parts (K = the valid
    rows), and a window of the product keeps what of it is valid."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(PARTIAL.format(VR=vr, VC=vc, OR=vr), filename="/u/p.py"),
                     output_dir=tmp_path / "out", platform="a2a3sim")
    torch.manual_seed(11)
    mem = torch.randint(-20, 20, (64, 32)).half()
    idx = torch.randint(0, 64, (1, 32), dtype=torch.int32)
    out = torch.full((vr, 32), 7.0)
    run(mem, idx, torch.eye(32).half(), out)
    want = torch.full((vr, 32), 7.0)                # outside the valid part: untouched
    want[:, :vc] = mem[idx[0, :vr].long(), :vc].float()
    assert torch.equal(out, want)
