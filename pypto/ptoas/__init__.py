"""pypto.ptoas: our PTO assembler. .pto text (MLIR, pto dialect) -> C++ against pto_sim.hpp.

    compile_pto(text, arch="a2a3", level="level3") -> PtoasResult(.cpp, .pass_dumps)

Passes: parse -> verify -> plan memory (level2 only) -> emit. `pypto.cxx.build_kernel` turns the
C++ into a kernel shared object with the system compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .arch import get_arch
from .emit import emit, kernel_info
from .errors import PtoasError
from .parser import parse
from .plan import plan
from .printer import print_module
from .verify import verify

__all__ = ["compile_pto", "PtoasResult", "PtoasError", "LEVELS"]

LEVELS = ("level1", "level2", "level3")


@dataclass
class PtoasResult:
    cpp: str
    pass_dumps: dict[str, str] = field(default_factory=dict)
    kernel_info: dict = field(default_factory=dict)


def compile_pto(text: str, *, arch: str = "a2a3", level: str = "level3", dump_passes: bool = False,
                source_name: str = "<pto>") -> PtoasResult:
    """Parse, verify, plan (level2) and emit one .pto module. Pure: text in, text out.

    arch: "a2a3" (also "a3") or "a5"; it overrides the module's pto.target_arch like
    ptoas's --pto-arch. level3 requires addr on every alloc_tile; level1/level2 forbid it
    and ptoas plans memory. Raises PtoasError located at the offending op.
    """
    target = get_arch(arch)
    if level not in LEVELS:
        raise ValueError(f"unknown pto level '{level}': use one of {', '.join(LEVELS)}")
    dumps: dict[str, str] = {}
    module = parse(text, source_name)
    if dump_passes:
        dumps["01_parse"] = print_module(module)
    usage = verify(module, target, level, source_name)
    if dump_passes:
        header = [f"arch {target.name}, {level}"]
        header += [f"@{f}: " + (", ".join(f"{s} {b} B" for s, b in sorted(u.items())) or "no addressed tiles")
                   for f, u in usage.items()]
        dumps["02_verify"] = print_module(module, header=header)
    if level != "level3":
        usage, notes = plan(module, target, source_name)
        if dump_passes:
            header = [f"@{f}: " + (", ".join(f"{s} {b}/{target.capacity[s]} B" for s, b in sorted(u.items()))
                                   or "no tiles") for f, u in usage.items()]
            dumps["03_plan_memory"] = print_module(module, notes, header)
    cpp = emit(module, target, usage, level=level, source_name=source_name)
    if dump_passes:
        dumps["04_emit"] = cpp
    return PtoasResult(cpp=cpp, pass_dumps=dumps, kernel_info=kernel_info(module, target, usage))
