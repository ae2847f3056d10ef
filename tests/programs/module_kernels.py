"""Kernels defined at module level (not in a @pl.program), for
test_prog_module_functions: programs elsewhere call them by name, as the reference's
paged-attention tests call the example's kernel_* functions."""
import pypto.language as pl

N = 32


@pl.function(type=pl.FunctionType.InCore)
def scaled_add(a: pl.Tensor[[N, N], pl.FP32], b: pl.Tensor[[N, N], pl.FP32],
               out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
    ta = pl.load(a, [0, 0], [N, N])
    tb = pl.load(b, [0, 0], [N, N])
    out = pl.store(pl.add(pl.muls(ta, 2.0), tb), [0, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def row_exp(a: pl.Tensor[[N, N], pl.FP32], lo: pl.Scalar[pl.FP32],
            out: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
    t = pl.load(a, [0, 0], [N, N])
    out = pl.store(pl.exp(pl.maximum(t, lo)), [0, 0], out)
    return out
