"""What the program tests share: the simulator config, running an example module from
examples/ the way `doit` checks it, and comparing with torch."""
from __future__ import annotations

import os
import re

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


def tagged_line(path, tag: str) -> int:
    """The line of `path` that ends with the comment `# <tag>` (where a bad program's
    mistake is)."""
    with open(path) as f:
        for i, ln in enumerate(f, 1):
            if ln.rstrip().endswith(f"# {tag}"):
                return i
    raise AssertionError(f"no line tagged {tag}")


def check_error(exc_info, cls, path, tag, hint_re, msg_re):
    """The typed error of a bad program: its class, the user's file:line (the tagged
    line of `path`, never the IR the graph re-reads), its message and its hint."""
    import pypto.errors as E
    e = exc_info.value
    assert type(e) is cls or (cls is E.ParserError and isinstance(e, cls)), f"{type(e).__name__}: {e}"
    assert isinstance(e, E.PyptoError)
    file, line = os.path.basename(path), tagged_line(path, tag)
    assert e.span is not None and (e.span.file, e.span.line) == (file, line), f"{e.span} != {file}:{line}"
    assert f"{file}:{line}:" in str(e) and "<ir>" not in str(e)
    assert re.search(msg_re, e.message, re.I), e.message
    assert e.hint and re.search(hint_re, e.hint, re.I), e.hint
    assert "\n  hint: " in str(e)
    assert e.__cause__ is None and e.__traceback__ is not None
