"""The quickstart of the Compiling page, verbatim (platform a2a3sim), plus the
issue's checks: running it makes out == A + B, and so does calling add(...)."""
import pypto.language as pl
import torch
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
torch.manual_seed(0)
A = torch.randn(128, 128, dtype=torch.float32)
B = torch.randn(128, 128, dtype=torch.float32)

@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


out = torch.zeros(128, 128, dtype=torch.float32)
compiled = add.compile(A, B, out, config=CFG)

print("artifacts in:", compiled.output_dir)
assert compiled.platform == CFG.platform
assert compiled.param_names == ["a", "b", "out"]

compiled(A, B, out)
assert torch.allclose(out, A + B)
out2 = torch.zeros(128, 128, dtype=torch.float32)
add(A, B, out2, config=CFG)
assert torch.allclose(out2, A + B)
print("QUICKSTART OK")
