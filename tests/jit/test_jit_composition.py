"""JIT composition (issue 12.1): @pl.jit.inline kernels imported from a package's other
modules (relative imports, module constants), a kernel's result rebound and passed on,
slice bounds affine in a loop variable, shapes from constant arithmetic."""
import torch

from jitpkg.config import COLS, PAD, ROWS
from jitpkg.model import model

from pypto.runtime import RunConfig


def test_a_model_composed_from_a_package_of_kernels():
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(ROWS, COLS, generator=g), torch.randn(1, COLS, generator=g)
    out = torch.full((PAD, COLS), 7.0)
    model(x, w, out, config=RunConfig(platform="a2a3sim"))
    want = torch.zeros(PAD, COLS)
    want[:ROWS] = x * w
    assert torch.allclose(out, want, atol=1e-6)
