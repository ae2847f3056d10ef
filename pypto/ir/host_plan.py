"""The host plan of a HOST-level program: what a traced host orchestrator did (its
launches, window buffers and SubWorker calls; pypto.language.host_trace), as the data
`distributed_meta.json` holds and pypto.runtime.ranks runs.

Launch arguments are recorded as byte windows of a host parameter (a view x[r] of it), a
window buffer or a scalar, so the plan holds for any tensors of the same shapes. Each
distinct device program -- a compile request the caller's `compiler` makes (a @pl.jit
specialization, or a part of a @pl.program) -- builds once under next_levels/<name>/, all
of them and the plan itself (the `host` stage) as one build graph.
"""
from __future__ import annotations

import json
from pathlib import Path

from pypto.errors import PyptoError
from pypto.ir.distributed_compiled_program import META, SCHEMA, DistributedCompiledProgram, config_dict
from pypto.language.host_trace import HostTrace, TensorRef, Window


class HostProgramError(PyptoError, ValueError):
    """A host orchestrator that does not describe launches this pypto can run."""


def check_distinct(values: tuple, params: list, fname: str) -> None:
    """A launch argument is found by what it is a view of: each parameter its own tensor."""
    for i, v in enumerate(values):
        j = next((j for j in range(i) if values[j] is v), None)
        if j is not None:
            raise HostProgramError(f"{fname}: parameters '{params[j]['name']}' and '{params[i]['name']}' are "
                                   f"given the same tensor; give each its own")


def build(name: str, trace: HostTrace, values: tuple, params: list, config, out: Path, compiler,
          sub_workers: list | None = None) -> DistributedCompiledProgram:
    """compiler(launch, args, where) -> (key, the program's name, a compile Request
    (pypto.ir.compile_many)); sub_workers: [{name, abstract, params, python_body}] of the
    program. The distinct device programs and the host plan build as one graph: each
    program under next_levels/<name>/, the plan (the `host` stage, which reads their
    compiled_meta.json) last."""
    from pypto.ir.compile_many import build_together
    from pypto_pipeline.outputs import write_report
    dcfg = config.distributed_config
    if not trace.launches:
        raise HostProgramError(f"{name} launched nothing: call a per-device orchestration with device=r "
                               f"for each rank")
    programs: list[dict] = []
    requests: list = []
    by_key: dict = {}
    taken: dict[str, int] = {}
    launches = []
    for ln in trace.launches:
        where = f"{trace.filename}:{ln.line}"
        if not isinstance(ln.rank, int) or isinstance(ln.rank, bool) or not 0 <= ln.rank < dcfg.world_size:
            raise HostProgramError(f"{where}: device={ln.rank!r} is not a rank of this program "
                                   f"(0..{dcfg.world_size - 1})")
        args = [arg_entry(a, values, where) for a in ln.args]
        key, fname, request = compiler(ln, args, where)
        if key not in by_key:            # ranks running the same program share its build
            n = taken.get(fname, 0)
            taken[fname] = n + 1
            label = fname + (f"_{n}" if n else "")
            by_key[key] = len(programs)
            programs.append({"function": fname, "dir": f"next_levels/{label}"})
            requests.append((label, out / "next_levels" / label, request))
        launches.append({"rank": ln.rank, "device": dcfg.device_ids[ln.rank], "program": by_key[key],
                         "args": args, "line": ln.line})
    calls = [{"name": c.name, "after": c.after, "line": c.line,
              "args": [arg_entry(a, values, f"{trace.filename}:{c.line}") for a in c.args]}
             for c in trace.callbacks]
    windows, window_bytes = _window_layout(trace.windows)
    draft = {"schema": SCHEMA, "name": name, "platform": config.platform,
             "distributed_config": config_dict(dcfg), "params": params, "windows": windows,
             "window_bytes": window_bytes, "programs": programs, "launches": launches,
             "sub_workers": sub_workers or [], "sub_worker_calls": calls, "filename": trace.filename}
    level = _dump_level(getattr(config, "dump_passes", False))

    def host(store):
        from pypto_pipeline.together import host_step
        metas = [store.put_bytes((out / p["dir"] / "compiled_meta.json").read_bytes()) for p in programs]
        return [host_step(name, store.put_bytes(json.dumps(draft, sort_keys=True).encode()), metas, level, out)]
    got = build_together(requests, then=host)
    (out / "report").mkdir(parents=True, exist_ok=True)
    write_report(out, got.records)            # every task of the build, the host plan's too
    return DistributedCompiledProgram(out, json.loads((out / META).read_text()))


def complete(plan: dict, metas: list[dict]) -> dict:
    """The host plan, from the draft (what the trace said; completed in place): each
    device program's parameters and their directions (its compiled_meta.json); a host
    tensor a rank writes into is an output. (The `host` stage.)"""
    from pypto.runtime.tensors import parse_params
    filename = plan.pop("filename")
    for prog, meta in zip(plan["programs"], metas):
        ps = parse_params(meta["params"], prog["dir"])
        prog["params"], prog["directions"] = [p.name for p in ps], [p.direction for p in ps]
    for ln in plan["launches"]:
        prog = plan["programs"][ln["program"]]
        if len(prog["params"]) != len(ln["args"]):
            raise HostProgramError(f"{filename}:{ln['line']}: {prog['function']} is launched with {len(ln['args'])} "
                                   f"arguments; a launch passes every parameter ({', '.join(prog['params'])}), "
                                   f"outputs as views of host tensors")
        for a, d in zip(ln["args"], prog["directions"]):
            if "param" in a and d != "In" and plan["params"][a["param"]]["direction"] == "In":
                plan["params"][a["param"]]["direction"] = "InOut"
    return plan


def _dump_level(d) -> int:
    v = getattr(d, "value", d)
    return 0 if v in (None, False, 0) else 1 if v in (True, 1) else int(v)


def host_dump(plan: dict, explicit: bool) -> str:
    """The host orchestrator as traced: its window buffers (at EXPLICIT with their slots and
    each window argument with the buffer it views) and, per rank, its launches and the
    SubWorker calls between them."""
    dc = plan["distributed_config"]
    lines = [f"# host plan of {plan['name']}: {len(dc['device_ids'])} ranks on devices {dc['device_ids']}, "
             f"platform {plan['platform']}"]
    if plan["windows"]:
        lines.append(f"# pld.comm_domain: devices=all, slots=[{', '.join(w['name'] for w in plan['windows'])}]"
                     + (f", {plan['window_bytes']} bytes per rank" if explicit else ""))
    for w in plan["windows"]:
        slot = f"  # slot [{w['offset']}, {w['offset'] + w['nbytes']})" if explicit else ""
        lines.append(f"{w['name']} = pld.alloc_window_buffer({w['shape']}, dtype=pl.{w['dtype']}){slot}")
    names = [p["name"] for p in plan["params"]]

    def arg(a):
        if "scalar" in a:
            return repr(a["scalar"])
        if "window" in a:
            w = plan["windows"][a["window"]]
            marker = f', "window_buffer={w["name"]}"' if explicit else ""
            return f"pld.DistributedTensor[{a['shape']}, pl.{a['dtype']}{marker}]"
        return f"{names[a['param']]}[bytes {a['offset']}:{a['offset'] + a['nbytes']}]{a['shape']}"
    calls = {c["after"]: [] for c in plan.get("sub_worker_calls", [])}
    for c in plan.get("sub_worker_calls", []):
        calls[c["after"]].append(c)
    for i, ln in enumerate(plan["launches"] + [None]):
        for c in calls.get(i, []):
            lines.append(f"{c['name']}({', '.join(arg(a) for a in c['args'])})  # SubWorker, on the host")
        if ln is not None:
            prog = plan["programs"][ln["program"]]
            lines.append(f"{prog['function']}({', '.join(arg(a) for a in ln['args'])}, device={ln['rank']})"
                         f"  # {prog['dir']}")
    return "\n".join(lines) + "\n"


def host_param(name, ann, value, fname) -> dict:
    kind = getattr(ann, "kind", None)
    direction = "In"
    if kind in ("Out", "InOut"):
        direction, ann = kind, ann.args[0]
        kind = getattr(ann, "kind", None)
    shape, dtype = _shape_dtype(value)
    if shape is None:
        raise HostProgramError(f"{fname}: parameter '{name}' of a host function is a host tensor "
                               f"(torch.Tensor or numpy array), got {type(value).__name__}")
    if kind == "Tensor" and isinstance(ann.args[0], (list, tuple)) and list(ann.args[0]) != list(shape) \
            and all(isinstance(d, int) for d in ann.args[0]):
        raise HostProgramError(f"{fname}: parameter '{name}' is annotated {list(ann.args[0])}, got a tensor of "
                               f"shape {list(shape)}")
    return {"name": name, "direction": direction, "shape": list(shape), "dtype": dtype}


def _shape_dtype(v):
    from pypto.runtime.tensors import is_numpy_array, is_torch_tensor
    from pypto.runtime import dtypes
    if is_torch_tensor(v):
        d = dtypes.from_torch_dtype(v.dtype)
    elif is_numpy_array(v):
        d = dtypes.from_numpy_dtype(v.dtype)
    else:
        return None, None
    return tuple(v.shape), (d.name if d is not None else str(v.dtype))


def arg_entry(a, values: tuple, where: str) -> dict:
    """A launch argument: a window of a host parameter's bytes, or a scalar."""
    from pypto.runtime.tensors import is_torch_tensor
    if isinstance(a, TensorRef):
        return {"param": a.param, "offset": a.offset, "nbytes": a.nbytes, "shape": list(a.shape)}
    if isinstance(a, Window):
        if _nbytes(a.shape, a.dtype) > _nbytes(a.buffer.shape, a.buffer.dtype):
            raise HostProgramError(f"{where}: pld.window(..., {list(a.shape)}, dtype={a.dtype!r}) is larger "
                                   f"than its buffer ({list(a.buffer.shape)} {a.buffer.dtype!r})")
        return {"window": a.buffer.index, "shape": list(a.shape), "dtype": _dtype_name(a.dtype)}
    if isinstance(a, bool) or isinstance(a, (int, float)):
        return {"scalar": a}
    if is_torch_tensor(a):
        if not a.is_contiguous():
            raise HostProgramError(f"{where}: a launch argument must be a contiguous view of a host tensor "
                                   f"(x[r], x[r, 2:4]); this one is strided")
        for i, v in enumerate(values):          # the parameter itself (samples may share storage)
            if v is a:
                return {"param": i, "offset": 0, "nbytes": a.nbytes, "shape": list(a.shape)}
        for i, v in enumerate(values):
            if is_torch_tensor(v) and v.untyped_storage().data_ptr() == a.untyped_storage().data_ptr():
                off = a.data_ptr() - v.data_ptr()
                if 0 <= off and off + a.nbytes <= v.nbytes:
                    return {"param": i, "offset": off, "nbytes": a.nbytes, "shape": list(a.shape)}
        raise HostProgramError(f"{where}: a launch argument is a tensor that is not part of a host parameter",
                               hint="pass views of the @pl.jit.host function's tensors (x[r]); host "
                                    "intermediates are not built yet")
    raise HostProgramError(f"{where}: a launch argument is a {type(a).__name__}; device programs take views "
                           f"of host tensors and scalars")


def _dtype_name(d) -> str:
    return _dtype(d).name


WINDOW_ALIGN = 32            # each buffer's slot in a window is 32-byte aligned
WINDOW_FLOOR = 4096          # and a rank's window is whole 4 KiB pages, at least one


def _window_layout(buffers) -> tuple[list, int]:
    """Each window buffer's slot (offset, bytes) in a rank's window, in allocation order,
    and the size of one rank's window. Every rank's window has this layout, so a buffer
    sits at the same offset in every rank's copy."""
    out, off = [], 0
    for b in buffers:
        n = _nbytes(b.shape, b.dtype)
        out.append({"name": b.name, "shape": list(b.shape), "dtype": _dtype_name(b.dtype), "offset": off,
                    "nbytes": n, "line": b.line})
        off += -(-n // WINDOW_ALIGN) * WINDOW_ALIGN
    return out, max(WINDOW_FLOOR, -(-off // WINDOW_FLOOR) * WINDOW_FLOOR)


def _dtype(d):
    from pypto.dtype import DataType
    if not isinstance(d, DataType):
        raise HostProgramError(f"a window's dtype is a pl dtype (pl.FP32, pl.INT32), got {d!r}")
    return d


def _nbytes(shape, dtype) -> int:
    n = _dtype(dtype).nbytes
    for d in shape:
        n *= d
    return n
