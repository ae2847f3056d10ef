"""Activations built from elementwise tile ops on 32x128 tiles: SiLU x*recip(1+exp(-x)),
GELU in its tanh form (tanh built from exp), and the gated SwiGLU / GeGLU."""
import pypto.language as pl

from examples._spec import TensorSpec

SQRT_2_OVER_PI = 0.7978845608028654


@pl.jit
def activations(x: pl.Tensor, gate: pl.Tensor, silu: pl.Out[pl.Tensor], gelu: pl.Out[pl.Tensor],
                swiglu: pl.Out[pl.Tensor], geglu: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 128])
        g = pl.load(gate, [0, 0], [32, 128])
        # SiLU(x) = x * sigmoid(x)
        pl.store(pl.mul(t, pl.recip(pl.add(pl.exp(pl.mul(t, -1.0)), 1.0))), [0, 0], silu)
        # GELU(x) = 0.5 x (1 + tanh(z)), z = sqrt(2/pi) (x + 0.044715 x^3), tanh(z) = 1 - 2 / (exp(2z) + 1)
        z = pl.mul(pl.add(t, pl.mul(pl.mul(pl.mul(t, t), t), 0.044715)), SQRT_2_OVER_PI)
        th = pl.add(pl.mul(pl.recip(pl.add(pl.exp(pl.mul(z, 2.0)), 1.0)), -2.0), 1.0)
        pl.store(pl.mul(pl.mul(t, 0.5), pl.add(th, 1.0)), [0, 0], gelu)
        # SwiGLU(x, g) = SiLU(g) * x
        sg = pl.mul(g, pl.recip(pl.add(pl.exp(pl.neg(g)), 1.0)))
        pl.store(pl.mul(sg, t), [0, 0], swiglu)
        # GeGLU(x, g) = GELU(g) * x
        zg = pl.mul(pl.add(g, pl.mul(pl.mul(pl.mul(g, g), g), 0.044715)), SQRT_2_OVER_PI)
        thg = pl.add(pl.mul(pl.recip(pl.add(pl.exp(pl.mul(zg, 2.0)), 1.0)), -2.0), 1.0)
        pl.store(pl.mul(pl.mul(pl.mul(g, 0.5), pl.add(thg, 1.0)), t), [0, 0], geglu)
    return silu, gelu, swiglu, geglu


ENTRY = activations
SAMPLE = (TensorSpec((32, 128), pl.FP32),) * 6
RTOL, ATOL = 1e-4, 1e-4        # GELU's tanh through exp


def inputs():
    import torch
    g = torch.Generator().manual_seed(11)
    return [torch.randn(32, 128, generator=g) * 2, torch.randn(32, 128, generator=g) * 2] + \
        [torch.zeros(32, 128) for _ in range(4)]


def expected(x, gate, *outs):
    import torch.nn.functional as F
    return {2: F.silu(x), 3: F.gelu(x, approximate="tanh"), 4: F.silu(gate) * x,
            5: F.gelu(gate, approximate="tanh") * x}
