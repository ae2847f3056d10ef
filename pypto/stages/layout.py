"""layout: one function of the final program -> what the backend's steps are laid
out from. One step per function, so after an edit only the functions it changed are
laid out again and nothing parses the whole final program.

Outputs: `layout` (JSON: name, kernel?, core, orchestration?, the directions of its
tensor parameters; for the orchestration its parameters as compiled_meta.json
describes them), `kernel` (the kernel
alone as a program: the pto step's input; empty for other functions), `sig` (what
the orchestration and config see of it: a kernel's signature, the orchestration in
full; empty otherwise), and its perf hints and post-pipeline warnings when asked.
"""
from __future__ import annotations

import json

from pypto.backend import BackendType
from pypto.codegen.config import core_type, meta_params, signature
from pypto.diagnostics import perf_hints, render
from pypto.ir.nodes import FunctionType, Program, ScalarType, TensorType
from pypto.stages.text import parse_bytes, print_bytes, remember, warnings_bytes


def layout_stage(inputs: dict, options: dict) -> dict:
    part = parse_bytes(inputs["program"])
    f = part.get(options["function"])
    # a hand-written Group's kernel is its members' bodies: they come with it
    members = [parse_bytes(inputs[f"member:{m}"]).get(m) for m in f.attrs.get("members", ())]
    alone = Program(part.name, [f, *members], part.source)
    orch = f.func_type is FunctionType.Orchestration
    info = {"name": f.name, "kernel": f.is_launched, "orchestration": orch,
            "core": core_type(f) if f.is_launched else "aiv",
            "signature": signature(f)}
    if orch:                       # what compiled_meta.json says of the caller's side
        info.update(params=meta_params(f), num_return_types=len(f.return_types))
    external = f.attrs.get("external_source")
    if external is not None:       # a hand-written kernel: built from its C++, not from IR
        info.update(external=external, tensors=sum(isinstance(p.var.type, TensorType) for p in f.params),
                    scalars=sum(isinstance(p.var.type, ScalarType) for p in f.params))
    out = {"layout": json.dumps(info, sort_keys=True).encode("utf-8"),
           "kernel": print_bytes(alone) if f.is_launched and external is None else b"",
           "sig": (print_bytes(Program(part.name, [f.signature_only()], part.source)) if f.is_launched
                   else print_bytes(alone) if orch else b"")}
    if "diag" in options:
        diag = options["diag"]
        out["perf_hints"] = render(perf_hints(alone, BackendType(options["backend_type"]),
                                              frozenset(diag["disabled"]))).encode("utf-8")
        if diag["phase"] == "post_pipeline":
            out["diagnostics"] = warnings_bytes(alone, diag)
    if f.is_launched and external is None:   # read-only from here on: the pto step may take it unparsed
        remember(out["kernel"], alone)
    return out
