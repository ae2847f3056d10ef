"""What dodo.py and the tests do with an example: its graph input, and running it."""
from __future__ import annotations

import importlib
import json


def load(name: str):
    return importlib.import_module(f"examples.{name}")


def source(mod) -> tuple[bytes, bool]:
    """(graph input, starts at specialize?) for an example module."""
    if hasattr(mod, "ENTRY"):
        spec = mod.ENTRY.spec(*mod.SAMPLE)
        return json.dumps(spec, sort_keys=True).encode("utf-8"), True
    from pypto.ir.printer import print_program
    return print_program(mod.PROGRAM).encode("utf-8"), False


def run_and_check(mod, output_dir, rtol=None, atol=None) -> None:
    """Run the compiled program on the simulator and compare with torch (tolerances: the
    example's RTOL / ATOL, else 1e-5)."""
    from pypto.runtime import CompiledProgram
    check(mod, CompiledProgram(output_dir), rtol, atol)


def check(mod, run, rtol=None, atol=None) -> None:
    """Call `run(*mod.inputs())` (a CompiledProgram, or a @pl.jit entry with its config)
    and compare the outputs `mod.expected` names with torch."""
    import torch
    rtol = getattr(mod, "RTOL", 1e-5) if rtol is None else rtol
    atol = getattr(mod, "ATOL", 1e-5) if atol is None else atol
    args = mod.inputs()
    want = mod.expected(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    run(*args)
    for i, ref in want.items():
        got = args[i]
        if got.dtype != ref.dtype:
            raise AssertionError(f"{mod.__name__}: output {i} is {got.dtype}, torch gives {ref.dtype}")
        if not torch.allclose(got.float(), ref.float(), rtol=rtol, atol=atol):
            err = (got.float() - ref.float()).abs().max().item()
            raise AssertionError(f"{mod.__name__}: output {i} differs from torch (max abs err {err})")
