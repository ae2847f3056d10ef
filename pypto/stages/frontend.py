"""frontend: program source -> the canonical printed program (00_frontend.py)."""
from __future__ import annotations

from pypto.stages.text import parse_bytes, print_bytes, remember, warnings_bytes


def frontend_stage(inputs: dict, options: dict) -> dict:
    prog = parse_bytes(inputs["program"])
    out = {"program": print_bytes(prog)}
    if options.get("explicit"):
        out["dump"] = print_bytes(prog, explicit=True)
    if "diag" in options:          # warnings on the program as written
        out["diagnostics"] = warnings_bytes(prog, options["diag"])
    remember(out["program"], prog)     # done with it: the first pass may take it
    return out
