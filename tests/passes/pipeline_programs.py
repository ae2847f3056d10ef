"""The end-to-end programs of the pipeline tests, written as a user would."""
import pypto.language as pl


def quickstart():
    @pl.program
    class Quickstart:
        @pl.function
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out
    return Quickstart


def softmax():
    @pl.program
    class Softmax:
        @pl.function
        def softmax(self, x: pl.Tensor[[64, 64], pl.FP32],
                    y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [64, 64])
                scratch = pl.create_tile([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
                m = pl.row_max(t, scratch)
                e = pl.exp(pl.row_expand_sub(t, m))
                s = pl.row_sum(e, scratch)
                pl.store(pl.row_expand_div(e, s), [0, 0], y)
            return y
    return Softmax


def matmul_k():
    @pl.program
    class MatmulK:
        @pl.function
        def matmul(self, a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[128, 64], pl.FP16],
                   c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                ta = pl.load(a, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
                tb = pl.load(b, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left),
                                pl.move(tb, target_memory=pl.Mem.Right))
                for k, (acc_in,) in pl.range(1, 4, init_values=(acc,)):
                    ta_k = pl.load(a, [0, k * 32], [64, 32], target_memory=pl.Mem.Mat)
                    tb_k = pl.load(b, [k * 32, 0], [32, 64], target_memory=pl.Mem.Mat)
                    nxt = pl.matmul_acc(acc_in, ta_k, tb_k)
                    acc_out = pl.yield_(nxt)
                pl.store(acc_out, [0, 0], c)
            return c
    return MatmulK


def two_kernels():
    @pl.program
    class TwoKernels:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
            with pl.at(level=pl.Level.CORE_GROUP):
                tmp[:] = pl.add(a, b)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
                out[:] = pl.mul(tmp, 2.0)
            return out
    return TwoKernels


ALL = [quickstart, softmax, matmul_k, two_kernels]
