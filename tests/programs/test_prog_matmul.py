"""Cube matmul on a2a3sim: 64x64 through Mat/Left/Right/Acc, a K loop with matmul_acc
(chunks of 32 carried explicitly in examples/matmul_acc.py, chunks of 64 carried by
rebinding here), and a tensor-level pl.matmul inside pl.at."""
import pytest
import torch

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn


def test_matmul_example():
    check_example("matmul")


def test_matmul_acc_example_k_chunks_of_32():
    check_example("matmul_acc")


@pl.jit
def matmul_k64(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
        for k in pl.range(1, 2):
            ta = pl.load(a, [0, k * 64], [64, 64], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [k * 64, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul_acc(acc, pl.move(ta, target_memory=pl.Mem.Left),
                                pl.move(tb, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def matmul_tensor(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


def test_k_loop_chunks_of_64_rebinding_the_accumulator():
    a, b = randn(64, 128, seed=40), randn(128, 64, seed=41)
    c = torch.zeros(64, 64)
    matmul_k64(a, b, c, config=CFG)
    close(c, a @ b, 1e-4, 1e-4)


def test_tensor_level_matmul():
    a, b = randn(64, 64, seed=42), randn(64, 64, seed=43)
    c = torch.zeros(64, 64)
    matmul_tensor(a, b, c, config=CFG)
    close(c, a @ b, 1e-4, 1e-4)


@pl.jit
def k_chunked_projection(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The projections of PyPTO's Qwen3 decode: an accumulator made with
    pl.create_tensor, set by pl.matmul on the first K chunk and grown by pl.matmul_acc
    on the others, inside a pipelined loop."""
    for n0 in pl.parallel(0, 128, 64):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj"):
            acc = pl.create_tensor([16, 64], dtype=pl.FP32)
            for kb in pl.pipeline(0, 4, stage=2):
                k0 = kb * 64
                ta = x[:, k0:k0 + 64]
                tb = w[k0:k0 + 64, n0:n0 + 64]
                if k0 == 0:
                    acc = pl.matmul(ta, tb, out_dtype=pl.FP32)
                else:
                    acc = pl.matmul_acc(acc, ta, tb)
            out = pl.assemble(out, acc, [0, n0])
    return out


def test_an_accumulator_made_by_create_tensor_and_set_in_the_first_iteration(tmp_path):
    g = torch.Generator().manual_seed(11)
    x, w = torch.randn(16, 256, generator=g).half(), torch.randn(256, 128, generator=g).half()
    out = torch.zeros(16, 128)
    k_chunked_projection(x, w, out)
    assert torch.allclose(out, x.float() @ w.float(), rtol=1e-3, atol=1e-3)
    # a cube kernel only: the unused on-chip copy of the created tensor is gone
    prog = k_chunked_projection.lower(x, w, out)
    assert prog.functions["proj"].func_type is pl.FunctionType.AIC


@pl.jit
def add_then_matmul_transposed(a: pl.Tensor, b0: pl.Tensor, b1: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        bt = pl.add(b0, b1)                                   # computed in the kernel, [N, K]
        c = pl.assemble(c, pl.matmul(a, bt, b_trans=True, out_dtype=pl.FP32), [0, 0])
    return c


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_computed_operand_is_transposed_before_the_cube_reads_it(platform):
    """b_trans=True on a tile the kernel computes (no transposed load can stand in): the
    vector side transposes it, then it moves to the cube."""
    from pypto.runtime import RunConfig
    a, b0, b1 = randn(16, 64, seed=60), randn(128, 64, seed=61), randn(128, 64, seed=62)
    c = torch.zeros(16, 128)
    add_then_matmul_transposed(a, b0, b1, c, config=RunConfig(platform=platform))
    close(c, a @ (b0 + b1).T, 1e-4, 1e-4)


@pl.jit
def matmul_narrowed_transposed(x: pl.Tensor[[16, 128], pl.FP32], w: pl.Tensor[[32, 128], pl.FP32],
                               out: pl.Out[pl.Tensor[[16, 24], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        w_s = pl.slice(w, [32, 128], [0, 0], valid_shape=[24, 128])     # rows 24.. not read
        acc = pl.matmul(x, w_s, b_trans=True, out_dtype=pl.FP32)
        out[0:16, 0:24] = pl.mul(pl.mul(acc, 1.0)[0:16, 0:24], 2.0)
    return out


def test_a_narrowed_slice_is_read_transposed_for_the_cube():
    x, w = randn(16, 128, seed=63), randn(32, 128, seed=64)
    w[24:] = float("nan")                                   # outside the valid rows
    out = torch.zeros(16, 24)
    matmul_narrowed_transposed(x, w, out)
    close(out, 2 * (x @ w[:24].T), 1e-4, 1e-4)


@pl.jit
def int8_matmul_narrow_n(a: pl.Tensor[[32, 64], pl.INT8], b: pl.Tensor[[64, 48], pl.INT8],
                         c: pl.Out[pl.Tensor[[32, 48], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.matmul(a, b, out_dtype=pl.INT32), [0, 0])
    return c


@pl.jit
def int8_split_k_narrow_n(a: pl.Tensor[[272, 256], pl.INT8], b: pl.Tensor[[256, 144], pl.INT8],
                          c: pl.Out[pl.Tensor[[272, 144], pl.INT32]]):
    for _ in pl.spmd(1):
        acc = pl.create_tensor([272, 144], dtype=pl.INT32)
        for kb in pl.pipeline(0, 2, stage=2):
            k0 = kb * 128
            if k0 == 0:
                acc = pl.matmul(a[0:272, k0:k0 + 128], b[k0:k0 + 128, 0:144], out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, a[0:272, k0:k0 + 128], b[k0:k0 + 128, 0:144])
        c[0:272, 0:144] = acc
    return c


def _int8(rows, cols, seed):
    return torch.randint(-8, 8, (rows, cols), generator=torch.Generator().manual_seed(seed),
                         dtype=torch.int8)


def test_an_int8_operand_whose_columns_are_not_whole_fractals_is_padded_in_mat():
    """[64, 48] int8 in Mat is 1.5 fractals wide (32 bytes each): it is allocated as
    [64, 64] with [64, 48] holding data; the result is exact."""
    a, b = _int8(32, 64, 70), _int8(64, 48, 71)
    c = torch.zeros(32, 48, dtype=torch.int32)
    int8_matmul_narrow_n(a, b, c)
    assert torch.equal(c, a.int() @ b.int())


def test_a_split_k_accumulator_blocked_over_narrow_int8_columns():
    """The [272, 144] int32 accumulator does not fit L0C: each output block takes its
    columns of B straight from Mat into L0B (a [128, 48] int8 window is not whole Mat
    fractals, so it cannot be a view of B's Mat tile)."""
    a, b = _int8(272, 256, 72), _int8(256, 144, 73)
    c = torch.zeros(272, 144, dtype=torch.int32)
    int8_split_k_narrow_n(a, b, c)
    assert torch.equal(c, a.int() @ b.int())


def _batch_program(B, M, K, N, b_trans):
    bshape = [B, N, K] if b_trans else [B, K, N]

    @pl.program
    class BatchNotInL1:
        @pl.function(type=pl.FunctionType.InCore)
        def bmm(self, a: pl.Tensor[[B, M, K], pl.FP32], b: pl.Tensor[bshape, pl.FP32],
                c: pl.Out[pl.Tensor[[B, M, N], pl.FP32]]) -> pl.Tensor[[B, M, N], pl.FP32]:
            cm = pl.matmul(a, b, b_trans=b_trans, out_dtype=pl.FP32)
            return pl.assemble(c, cm, offset=[0, 0, 0])

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[B, M, K], pl.FP32], b: pl.Tensor[bshape, pl.FP32],
                 c: pl.Out[pl.Tensor[[B, M, N], pl.FP32]]) -> pl.Tensor[[B, M, N], pl.FP32]:
            c = self.bmm(a, b, c)
            return c
    return BatchNotInL1


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("b_trans", [True, False])
def test_a_batch_matmul_whose_operands_overflow_l1_runs_batch_by_batch(tmp_path, platform, b_trans):
    """[4, 64, 128] x [4, 512, 128]^T: 1.4 MB of operands for a 512 KB L1. Each batch (and
    each block of its columns while one batch is still too much) is loaded, multiplied and
    stored on its own; the Acc reused between them starts fresh each time."""
    from pypto import ir
    from pypto.runtime import RunConfig
    B, M, K, N = 4, 64, 128, 512
    prog = _batch_program(B, M, K, N, b_trans)
    compiled = ir.compile(prog, output_dir=tmp_path / "out", platform=platform)
    a = randn(B, M, K, seed=80)
    b = randn(*((B, N, K) if b_trans else (B, K, N)), seed=81)
    c = torch.zeros(B, M, N)
    compiled(a, b, c, config=RunConfig(platform=platform))
    close(c, a @ (b.transpose(-2, -1) if b_trans else b), 1e-4, 1e-4)
    text = (tmp_path / "out" / "passes_dump").glob("*FlattenTileNdTo2D*")
    assert any("[1, 64, 128]" in p.read_text() for p in text)      # one batch of A at a time
