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


def run_and_check(mod, output_dir, rtol=1e-5, atol=1e-5) -> None:
    """Run the compiled program on the simulator and compare with torch."""
    import torch
    from pypto.runtime import CompiledProgram
    compiled = CompiledProgram(output_dir)
    args = mod.inputs()
    want = mod.expected(*[a.clone() for a in args])
    compiled(*args)
    for i, ref in want.items():
        if not torch.allclose(args[i], ref, rtol=rtol, atol=atol):
            err = (args[i] - ref).abs().max().item()
            raise AssertionError(f"{mod.__name__}: output {i} differs from torch (max abs err {err})")
