"""kernel: C++ -> a shared object for the simulator (system C++ compiler, against
the tile library headers: pypto/include/pto_sim.hpp)."""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.cxx import build_kernel

SIM_PLATFORMS = ("a2a3sim", "a5sim")


def kernel_stage(inputs: dict, options: dict) -> dict:
    if options["platform"] not in SIM_PLATFORMS:
        raise CodegenError(
            f"building device binaries for platform {options['platform']!r} needs the vendor "
            f"toolchain (ccec), which is not installed",
            hint="compile for a2a3sim or a5sim to run on the CPU simulator, or pass "
                 "skip_ptoas=True to stop at the .pto files")
    return {"so": build_kernel(inputs["cpp"].decode("utf-8"), arch=options["arch"],
                               core_type=options["core_type"])}
