"""What the program tests share: the simulator config, running an example module from
examples/ the way `doit` checks it, and comparing with torch."""
from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig

from examples import harness

CFG = RunConfig(platform="a2a3sim")


def compile_example(name: str, out_dir=None):
    """The example's CompiledProgram: a @pl.jit entry compiled for its SAMPLE (pl.RUNTIME
    scalars stay runtime), or its @pl.program through ir.compile."""
    mod = harness.load(name)
    if hasattr(mod, "ENTRY"):
        args = [pl.RUNTIME if s is pl.RUNTIME else a for s, a in zip(mod.SAMPLE, mod.inputs())]
        return mod, mod.ENTRY.compile(*args, config=CFG)
    return mod, ir.compile(mod.PROGRAM, output_dir=out_dir, platform="a2a3sim")


def check_example(name: str, out_dir=None):
    mod, compiled = compile_example(name, out_dir)
    harness.check(mod, compiled)
    return compiled


def close(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float, what: str = "output"):
    assert got.dtype == want.dtype, f"{what}: {got.dtype} vs torch {want.dtype}"
    err = (got.float() - want.float()).abs().max().item()
    assert torch.allclose(got.float(), want.float(), rtol=rtol, atol=atol), f"{what}: max abs err {err}"


def randn(*shape, seed=0, scale=1.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(dtype)
