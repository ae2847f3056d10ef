"""Partial cube results split between the two AIVs (issue 12.2): a kernel window whose box
overhangs a short tensor with only its valid part read (pl.slice(a, [16, K], [0, 0],
valid_shape=[5, K]) of a 5-row a), a tensor-level matmul of such operands (its result
valid to 5 rows, blocked in L0 when it does not fit), and each lane's part of it --
max(min(valid - lane * half, half), 0) rows under UP_DOWN, columns under LEFT_RIGHT --
both from an explicit pl.split_aiv region and from pl.split. A lane with nothing valid
stores nothing; rows outside the valid part keep what the output held."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir

from prog_helpers import close, randn

ROWS, COLS, K = 16, 256, 256
FILL = 7.0

REGION = """
import pypto.language as pl
ROWS = 16
COLS = 256
K = 256
HALF = 8

@pl.program
class Ragged:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{VM}, K], pl.BF16], w: pl.Tensor[[{VN}, K], pl.BF16],
             out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ragged"):
            a_t = pl.slice(a, [ROWS, K], [0, 0], valid_shape=[{VM}, K])
            w_t = pl.slice(w, [COLS, K], [0, 0], valid_shape=[{VN}, K])
            acc = pl.matmul(a_t, w_t, b_trans=True, out_dtype=pl.FP32)
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.{MODE}):
                shard = pl.aiv_shard(acc)
{BODY}
        return out
"""
BODIES = {
    "UP_DOWN": "                out[aiv_id * HALF : aiv_id * HALF + HALF, 0:COLS] = shard",
    "LEFT_RIGHT": "                out[0:ROWS, aiv_id * 128 : aiv_id * 128 + 128] = shard",
    # a vector op between the shard and its store carries the lane's extent along
    "exp": "                out[aiv_id * HALF : aiv_id * HALF + HALF, 0:COLS] = pl.exp(shard)",
    # the store in a branch: only lane 0 writes
    "if": "                if aiv_id == 0:\n                    out[0:HALF, 0:COLS] = shard",
}


def _run(src, vm, vn, tmp_path):
    # (roundtrip: each pass's printed IR parses back to the program it hands on, as a
    # step served from the store hands it to the next)
    c = ir.compile(pl.parse(src, filename="/u/ragged.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim",
                   verification_level="roundtrip")
    a = (randn(vm, K, seed=1) * 0.1).to(torch.bfloat16)
    w = (randn(vn, K, seed=2) * 0.1).to(torch.bfloat16)
    out = torch.full((ROWS, COLS), FILL)
    c(a, w, out)
    return a.float() @ w.float().T, out


@pytest.mark.parametrize("body, mode, vm, vn", [
    ("UP_DOWN", "UP_DOWN", 5, COLS),        # 5 rows: all on lane 0, none on lane 1
    ("UP_DOWN", "UP_DOWN", 13, COLS),       # 8 and 5
    ("UP_DOWN", "UP_DOWN", 5, 32),          # ragged rows and a narrowed column extent
    ("LEFT_RIGHT", "LEFT_RIGHT", ROWS, 200),  # 128 and 72
    ("exp", "UP_DOWN", 5, COLS),
    ("if", "UP_DOWN", 5, COLS),
])
def test_each_lane_stores_its_part_of_a_partial_cube_result(body, mode, vm, vn, tmp_path):
    src = REGION.format(VM=vm, VN=vn, MODE=mode, BODY=BODIES[body])
    product, out = _run(src, vm, vn, tmp_path)
    want = torch.full((ROWS, COLS), FILL)
    want[:vm, :vn] = torch.exp(product) if body == "exp" else product
    close(out, want, 1e-4, 1e-4)


SPLIT = """
import pypto.language as pl
ROWS = 16
COLS = 128
K = 128

@pl.program
class SplitTail:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{VM}, K], pl.BF16], w: pl.Tensor[[COLS, K], pl.BF16],
             extra: pl.Tensor[[ROWS, COLS], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
             out2: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="tail"):
            a_t = pl.slice(a, [ROWS, K], [0, 0], valid_shape=[{VM}, K])
            acc = pl.matmul(a_t, w[0:COLS, 0:K], b_trans=True, out_dtype=pl.FP32)
            out[:] = pl.exp(acc)
            out2[:] = pl.abs(extra)
        return out, out2
"""


@pytest.mark.parametrize("vm", [13, 3])
def test_pl_split_halves_a_partial_tile_by_its_valid_rows(vm, tmp_path):
    c = ir.compile(pl.parse(SPLIT.format(VM=vm), filename="/u/tail.py"), output_dir=str(tmp_path / "o"),
                   platform="a2a3sim", verification_level="roundtrip")
    a = (randn(vm, 128, seed=3) * 0.1).to(torch.bfloat16)
    w = (randn(128, 128, seed=4) * 0.1).to(torch.bfloat16)
    extra = randn(16, 128, seed=5)
    out, out2 = torch.full((16, 128), FILL), torch.zeros(16, 128)
    c(a, w, extra, out, out2)
    want = torch.full((16, 128), FILL)
    want[:vm] = torch.exp(a.float() @ w.float().T)
    close(out, want, 1e-4, 1e-4)
    close(out2, extra.abs(), 0, 0)
    pto = (tmp_path / "o" / "ptoas" / "tail.pto").read_text()
    aiv = pto[pto.index("func.func @tail_aiv("):]
    assert "{split = 1}" in aiv.split("pto.tpop_from_aic")[1].split("\n")[0]


def _kernel(body: str, a_rows: int = 5) -> str:
    return f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{a_rows}, 64], pl.FP32], q: pl.Tensor[[16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
{body}
        return out
"""


def test_an_overhanging_window_needs_its_valid_part_inside_the_tensor():
    with pytest.raises(E.TypeCheckError, match=r"extent 16 of dim 0 is larger than the tensor's 5") as e:
        pl.parse(_kernel("            t = pl.slice(a, [16, 64], [0, 0])"), filename="/u/over.py")
    assert e.value.span.line == 10 and "valid_shape=" in str(e.value)
    with pytest.raises(E.TypeCheckError, match=r"extent 6 of dim 0 is larger than the tensor's 5"):
        pl.parse(_kernel("            t = pl.slice(a, [16, 64], [0, 0], valid_shape=[6, 64])"), filename="/u/over.py")
    with pytest.raises(E.TypeCheckError, match=r"window \[2, 7\) of dim 0 lies outside"):
        pl.parse(_kernel("            t = pl.slice(a, [16, 64], [2, 0], valid_shape=[5, 64])"), filename="/u/over.py")


def test_a_matmul_of_partial_tensors_writes_the_product_of_their_valid_parts(tmp_path):
    src = _kernel("            t = pl.slice(a, [16, 64], [0, 0], valid_shape=[5, 64])\n"
                  "            out[0:16, 0:16] = pl.matmul(t, q, b_trans=True)")
    c = ir.compile(pl.parse(src, filename="/u/mm.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim",
                   verification_level="roundtrip")
    a, q, out = randn(5, 64, seed=6), randn(16, 64, seed=7), torch.full((16, 16), FILL)
    c(a, q, out)
    want = torch.full((16, 16), FILL)
    want[:5] = a @ q.T
    close(out, want, 1e-4, 1e-4)


def test_partial_lanes_do_not_rejoin_for_the_cube():
    body = """            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                lane = pl.slice(q, [8, 64], [aiv_id * 8, 0], valid_shape=[5, 64])
                g = pl.aic_gather(lane)
            out[0:16, 0:16] = pl.matmul(q, g, b_trans=True)"""
    with pytest.raises(E.NotBuiltError, match=r"aic_gather: a tensor with a valid shape smaller") as e:
        pl.parse(_kernel(body), filename="/u/gather.py")
    assert "pl.fillpad" in str(e.value)


def test_matmul_acc_accumulates_the_valid_part_of_partial_operands():
    """(the K-blocked loop AutoTileMatmulL0 writes for a partial left operand reads back
    from its text: its accumulator is valid to the product's part)"""
    from pypto import dtype as dt
    from pypto.ir import ops
    from pypto.ir.nodes import MemorySpace as M, TileType, Var
    left = Var("l", TileType((16, 128), dt.BF16, M.Left, None, (5, 128)), None)
    right = Var("r", TileType((128, 256), dt.BF16, M.Right), None)
    acc = Var("acc", TileType((16, 256), dt.FP32, M.Acc, None, (5, 256)), None)
    assert ops.infer_type("tile.matmul_acc", [acc, left, right], {}, None).valid == (5, 256)
    whole = Var("w", TileType((16, 256), dt.FP32, M.Acc), None)
    with pytest.raises(E.TypeCheckError, match=r"valid part \[16, 256\] is not that of"):
        ops.infer_type("tile.matmul_acc", [whole, left, right], {}, None)


ODD = """
import pypto.language as pl

@pl.program
class OddBox:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[{M}, 64], pl.BF16], w: pl.Tensor[[{N}, 64], pl.BF16],
             out: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="odd_box"):
            acc = pl.matmul(a[0:{M}, 0:64], w[0:{N}, 0:64], b_trans=True, out_dtype=pl.FP32)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.{MODE}):
                mine = pl.aiv_shard(acc)
                out[{WINDOW}] = {EXPR}
        return out
"""


@pytest.mark.parametrize("m, n, mode, expr", [
    (17, 128, "UP_DOWN", "mine"), (18, 128, "UP_DOWN", "pl.exp(mine)"), (3, 128, "UP_DOWN", "mine"),
    (16, 40, "LEFT_RIGHT", "mine")])
def test_a_cube_result_splits_at_the_ceil_half_of_its_extent(m, n, mode, expr, tmp_path):
    """17 rows split 9 / 8 (the tensor's ceil half, though its tile is a 32-row fractal
    box); 18 rows 9 / 9; 3 rows 2 / 1; 40 columns (a 48-column box) 20 / 20. Lane 1's
    window overhangs an odd tensor by a row it does not hold."""
    h = ((m if mode == "UP_DOWN" else n) + 1) // 2
    window = f"lane * {h} : lane * {h} + {h}, 0:{n}" if mode == "UP_DOWN" else f"0:{m}, lane * {h} : lane * {h} + {h}"
    src = ODD.format(M=m, N=n, MODE=mode, WINDOW=window, EXPR=expr)
    c = ir.compile(pl.parse(src, filename="/u/odd.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim",
                   verification_level="roundtrip")
    a = (randn(m, 64, seed=3) * 0.1).to(torch.bfloat16)
    w = (randn(n, 64, seed=4) * 0.1).to(torch.bfloat16)
    out = torch.full((m, n), FILL)
    c(a, w, out)
    want = a.float() @ w.float().T
    close(out, torch.exp(want) if "exp" in expr else want, 1e-4, 1e-4)
    pto = "".join(p.read_text() for p in (tmp_path / "o").rglob("*.pto"))
    assert pto.count("pto.tpush") == 1          # the cube result crosses once (no re-boxed copy)


def test_the_lanes_share_of_an_odd_or_larger_box():
    """The type rule: lane shares of h = ceil(n / 2), valid per lane unless both are full;
    a tile on a larger fractal box takes the tensor's split point as `half`."""
    from pypto import dtype as dt
    from pypto.ir import ops
    from pypto.ir.nodes import MemorySpace as M, TensorType, TileType, Var
    shard = lambda t, **kw: ops.infer_type(t[0], [Var("x", t[1], None)], {"split": 1, **kw}, None)  # noqa: E731
    odd = shard(("tensor.aiv_shard", TensorType((17, 128), dt.FP32)))
    assert (odd.shape, odd.valid) == ((9, 128), (None, 128))
    assert shard(("tensor.aiv_shard", TensorType((18, 128), dt.FP32))).shape == (9, 128)
    boxed = shard(("tile.aiv_shard", TileType((32, 128), dt.FP32, M.Acc, None, (17, 128))), half=9)
    assert (boxed.shape, boxed.valid) == ((9, 128), (None, 128))
    assert shard(("tile.aiv_shard", TileType((32, 128), dt.FP32, M.Acc, None, (18, 128))), half=9).valid is None
    with pytest.raises(E.TypeCheckError, match=r"two lanes of 9 do not hold the 20 valid rows"):
        shard(("tile.aiv_shard", TileType((32, 128), dt.FP32, M.Acc, None, (20, 128))), half=9)
