"""kernel_config.py and compiled_meta.json: what the runtime and CompiledProgram read.

`kernel_config.py` is Python whose three assignments are literals (the runtime reads
each right-hand side with `ast.literal_eval`, never executes the file):

    RUNTIME_CONFIG = {"runtime": ..., "platform": ..., "aicpu_thread_num": 0}
    ORCHESTRATION = {"name", "source", "binary", "function_name", "signature"[, "digest"]}
    KERNELS = [{"func_id", "name", "source", "binary", "core_type", "signature", "digest"}, ...]

`signature` lists tensor parameter directions only ("in"/"out"/"inout"); paths are
relative to the output directory; kernel digests (xxh3_128 hex of the .so bytes) are
passed in by the caller. `compiled_meta.json` (schema 1) describes the orchestration's
parameters for the caller side: name (without the SSA suffix), kind, direction, shape
(dynamic dims as -1) and dtype text, plus num_return_types, platform, backend_type and
runtime. Both texts are deterministic.
"""
from __future__ import annotations

import json
import re

from pypto import dtype as dt
from pypto.codegen.common import Names, fail, safe_file_name
from pypto.ir import ops
from pypto.ir.nodes import (CUBE_SPACES, DynDim, FunctionType, ParamDirection, Program,
                            ScalarType, TensorType, TileType)

ORCHESTRATION_ENTRY = "pypto_orchestration_entry"
SCHEMA = 1
_SIG = {ParamDirection.In: "in", ParamDirection.Out: "out", ParamDirection.InOut: "inout"}
_KERNEL_KEYS = ("func_id", "name", "source", "binary", "core_type", "signature", "digest")
_ORCH_KEYS = ("name", "source", "binary", "function_name", "signature", "digest")
_SSA_SUFFIX = re.compile(r"__[A-Za-z]+_v\d+$")


def signature(func) -> list[str]:
    """Directions of a function's tensor parameters, in order."""
    return [_SIG[p.direction] for p in func.params if isinstance(p.var.type, TensorType)]


def core_type(func) -> str:
    """"aic" for cube kernels (AIC, or InCore using cube memory), "mix" for a Group (a
    mixed kernel: an AIC and its AIVs launched together), else "aiv"."""
    if func.func_type is FunctionType.Group:
        return "mix"
    if func.func_type is FunctionType.AIC:
        return "aic"
    if func.func_type is FunctionType.AIV:
        return "aiv"
    from pypto.ir.nodes import Assign, Call
    from pypto.ir.visit import walk
    for s in walk(func.body):
        if isinstance(s, Assign):
            t = s.var.type
            if isinstance(t, TileType) and t.memory_space in CUBE_SPACES:
                return "aic"
            if isinstance(s.value, Call) and s.value.op in ops.CUBE_OPS:
                return "aic"
    return "aiv"


def assign_kernel_ids(program: Program) -> dict[str, int]:
    """func_id per kernel function, in program order."""
    return {f.name: i for i, f in enumerate(f for f in program.functions if f.is_launched)}


def default_kernel_entries(program: Program, kernel_ids: dict[str, int] | None = None) -> list[dict]:
    """KERNELS entries (without digests) with the conventional paths."""
    ids = kernel_ids if kernel_ids is not None else assign_kernel_ids(program)
    out = []
    for name, fid in sorted(ids.items(), key=lambda kv: kv[1]):
        f = program.get(name)
        if f is None:
            fail(f"kernel {name!r} is not in program {program.name!r}", None)
        ct = core_type(f)
        safe = safe_file_name(name)
        out.append({"func_id": fid, "name": name, "source": f"ptoas/{safe}.cpp",
                    "binary": f"kernels/{ct}/{safe}.so", "core_type": ct})
    return out


def kernel_config_text(program: Program, orch_name: str, kernels: list[dict],
                       runtime: str = "tensormap_and_ringbuffer", platform: str = "a2a3sim", *,
                       aicpu_thread_num: int = 0, orchestration_digest: str | None = None,
                       orchestration_source: str | None = None,
                       orchestration_binary: str | None = None) -> str:
    """The text of kernel_config.py.

    `kernels`: one dict per kernel with at least func_id, name and digest (source, binary,
    core_type and signature are derived from the program when missing)."""
    orch = program.get(orch_name)
    if orch is None or orch.func_type is not FunctionType.Orchestration:
        fail(f"program {program.name!r} has no Orchestration function {orch_name!r}", None)
    filled = []
    for k in kernels:
        f = program.get(k["name"])
        if f is None or not f.is_launched:
            fail(f"KERNELS entry {k['name']!r} is not a kernel of program {program.name!r}", None)
        filled.append(dict(k, core_type=k.get("core_type") or core_type(f),
                           signature=list(k["signature"]) if k.get("signature") is not None
                           else signature(f)))
    return format_kernel_config(program.name, orch_name, signature(orch), filled, runtime, platform,
                                aicpu_thread_num=aicpu_thread_num,
                                orchestration_digest=orchestration_digest,
                                orchestration_source=orchestration_source,
                                orchestration_binary=orchestration_binary)


def format_kernel_config(program_name: str, orch_name: str, orch_signature: list[str],
                         kernels: list[dict], runtime: str = "tensormap_and_ringbuffer",
                         platform: str = "a2a3sim", *, aicpu_thread_num: int = 0,
                         orchestration_digest: str | None = None,
                         orchestration_source: str | None = None,
                         orchestration_binary: str | None = None) -> str:
    """kernel_config.py from plain data: each kernel dict has func_id, name, core_type
    and signature (source, binary and digest optional)."""
    safe = safe_file_name(orch_name)
    orch_entry = {"name": orch_name,
                  "source": orchestration_source or f"orchestration/{safe}.cpp",
                  "binary": orchestration_binary or f"orchestration/{safe}.so",
                  "function_name": ORCHESTRATION_ENTRY,
                  "signature": list(orch_signature)}
    if orchestration_digest:
        orch_entry["digest"] = orchestration_digest
    entries = []
    for k in sorted(kernels, key=lambda k: int(k["func_id"])):
        ct = k["core_type"]
        ks = safe_file_name(k["name"])
        e = {"func_id": int(k["func_id"]), "name": k["name"],
             "source": k.get("source") or f"ptoas/{ks}.cpp",
             "binary": k.get("binary") or f"kernels/{ct}/{ks}.so",
             "core_type": ct,
             "signature": list(k["signature"])}
        if k.get("digest"):
            e["digest"] = k["digest"]
        extra = sorted(set(k) - set(_KERNEL_KEYS))
        for key in extra:
            e[key] = k[key]
        entries.append(e)
    rc = {"runtime": _text(runtime), "platform": _text(platform),
          "aicpu_thread_num": int(aicpu_thread_num)}
    lines = [f"# kernel_config.py for program {program_name!r}, generated by pypto. Do not edit.",
             "# The runtime reads each assignment with ast.literal_eval; it never runs this file.",
             f"RUNTIME_CONFIG = {_lit(rc)}",
             f"ORCHESTRATION = {_lit(orch_entry)}",
             "KERNELS = ["]
    lines += [f"    {_lit(e)}," for e in entries]
    lines.append("]")
    return "\n".join(lines) + "\n"


def meta_params(orch) -> list[dict]:
    """compiled_meta.json's description of the orchestration's parameters."""
    params = []
    names = Names()
    for p in orch.params:
        t = p.var.type
        name = names.fresh(_SSA_SUFFIX.sub("", p.var.name) or p.var.name)
        if isinstance(t, TensorType):
            params.append({"name": name, "kind": "tensor", "direction": p.direction.value,
                           "shape": [-1 if isinstance(d, DynDim) else int(d) for d in t.shape],
                           "dtype": t.dtype.text})
        elif isinstance(t, ScalarType):
            params.append({"name": name, "kind": "scalar", "direction": p.direction.value,
                           "shape": [], "dtype": t.dtype.text})
        else:
            fail(f"orchestration parameter {p.var.name!r} is neither tensor nor scalar", orch.span)
    return params


def compiled_meta(program: Program, orch_name: str, platform: str, backend_type,
                  runtime: str) -> dict:
    orch = program.get(orch_name) if orch_name else None
    if orch_name and (orch is None or orch.func_type is not FunctionType.Orchestration):
        fail(f"program {program.name!r} has no Orchestration function {orch_name!r}", None)
    return meta_doc(meta_params(orch) if orch is not None else [],
                    len(orch.return_types) if orch is not None else 0,
                    platform, backend_type, runtime)


def meta_doc(params: list[dict], num_return_types: int, platform: str, backend_type,
             runtime: str) -> dict:
    return {"schema": SCHEMA, "params": params,
            "num_return_types": num_return_types,
            "platform": _text(platform),
            "backend_type": _text(backend_type),
            "runtime": _text(runtime)}


def compiled_meta_text(program: Program, orch_name: str, platform: str, backend_type,
                       runtime: str) -> str:
    """The text of compiled_meta.json (keys sorted, 2-space indent)."""
    return meta_json(compiled_meta(program, orch_name, platform, backend_type, runtime))


def meta_json(meta: dict) -> str:
    return json.dumps(meta, indent=2, sort_keys=True) + "\n"


def _text(v):
    """An enum member as its value (RuntimeKind, BackendType), anything else unchanged."""
    return getattr(v, "value", v)


def _lit(v) -> str:
    """A Python literal for JSON-like data, in a stable spelling."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_lit(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_lit(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} into kernel_config.py")
