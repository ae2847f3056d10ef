"""ptoas: .pto -> C++ against the tile library (our ptoas)."""
from __future__ import annotations

from pypto.ptoas import compile_pto


def ptoas_stage(inputs: dict, options: dict) -> dict:
    res = compile_pto(inputs["pto"].decode("utf-8"), arch=options["arch"], level=options["level"],
                      dump_passes=options["dump"])
    out = {"cpp": res.cpp.encode("utf-8")}
    for name, text in res.pass_dumps.items():     # ptoas's own IR after each of its passes
        out[f"pass_{name}"] = text.encode("utf-8")
    return out
