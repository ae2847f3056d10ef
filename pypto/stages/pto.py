"""pto: one kernel (a program holding just that function) -> its .pto text."""
from __future__ import annotations

from pypto.codegen.pto import generate_kernel
from pypto.stages.text import parse_bytes


def pto_stage(inputs: dict, options: dict) -> dict:
    prog = parse_bytes(inputs["kernel"])
    text = generate_kernel(prog, options["kernel"], arch=options["arch"],
                           emit_loc=options["emit_loc"], memory_planner=options["memory_planner"])
    return {"pto": text.encode("utf-8")}
