"""The tile-level add written as a @pl.program class with an Orchestration method,
compiled with ir.compile."""
import pypto.language as pl


@pl.program
class TileAdd:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
             c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [128, 128])
            tb = pl.load(b, [0, 0], [128, 128])
            tc = pl.add(ta, tb)
            c = pl.store(tc, [0, 0], c)
        return c


PROGRAM = TileAdd


def inputs():
    import torch
    g = torch.Generator().manual_seed(2)
    return [torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g),
            torch.zeros(128, 128)]


def expected(a, b, c):
    return {2: a + b}
