"""The FFN as a @pl.program: InCore methods for the kernels, an Orchestration method
calling them with self.kernel(...), compiled with ir.compile."""
import pypto.language as pl


@pl.program
class FFN:
    @pl.function(type=pl.FunctionType.InCore)
    def matmul(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
               c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left), pl.move(tb, target_memory=pl.Mem.Right))
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.InCore)
    def silu(self, x: pl.Tensor[[64, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [64, 64])
        y = pl.store(pl.mul(t, pl.recip(pl.add(pl.exp(pl.neg(t)), 1.0))), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, hidden: pl.Tensor[[64, 64], pl.FP32], w_up: pl.Tensor[[64, 64], pl.FP32],
             w_down: pl.Tensor[[64, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        up = pl.create_tensor([64, 64], dtype=pl.FP32)
        up = self.matmul(hidden, w_up, up)
        act = pl.create_tensor([64, 64], dtype=pl.FP32)
        act = self.silu(up, act)
        out = self.matmul(act, w_down, out)
        return out


PROGRAM = FFN
RTOL, ATOL = 1e-4, 1e-4


def inputs():
    import torch
    g = torch.Generator().manual_seed(19)
    return [torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g) * 0.125,
            torch.randn(64, 64, generator=g) * 0.125, torch.zeros(64, 64)]


def expected(hidden, w_up, w_down, out):
    import torch
    return {3: torch.nn.functional.silu(hidden @ w_up) @ w_down}
