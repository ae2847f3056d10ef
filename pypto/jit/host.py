"""`@pl.jit.host`: the HOST level's orchestrator -- the control plane that launches one
device program per rank:

    @pl.jit.host
    def host(x: pl.Tensor[[N, R, C], pl.FP32], y: pl.Out[pl.Tensor[[N, R, C], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            per_rank(x[r], y[r], r, device=r)

`host.compile(x, y, config=RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1])))`
runs the body once as Python with the caller's tensors (pypto.language.host_trace): each
`@pl.jit` call with `device=r` becomes a launch on rank r whose tensor arguments are views
of the host tensors (recorded as byte windows of a parameter, so the plan holds for any
tensors of the same shapes) and whose scalars are values. Each distinct device program is
compiled once through the build graph, under `next_levels/`; the plan is written as
`distributed_meta.json`.
"""
from __future__ import annotations

import functools
import inspect
import time
from pathlib import Path

from pypto.errors import PyptoError
from pypto.ir.distributed_compiled_program import (SCHEMA, DistributedCompiledProgram, DistributedConfig,
                                                   config_dict, write_meta)
from pypto.language.host_trace import HostTrace, Launch, Window, tracing


class HostProgramError(PyptoError, ValueError):
    """A @pl.jit.host body that does not describe launches this pypto can run."""


class HostFunction:
    def __init__(self, fn, options: dict):
        if options:
            raise TypeError(f"@pl.jit.host takes no options here, got {sorted(options)}")
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.filename = inspect.getsourcefile(fn) or "<host>"
        try:
            self.signature = inspect.signature(fn, eval_str=True)
        except Exception:                # (an annotation that does not evaluate: directions inferred)
            self.signature = inspect.signature(fn)

    def __repr__(self) -> str:
        return f"<@pl.jit.host {self.fn.__qualname__}>"

    def __call__(self, *args, config=None, **kwargs):
        """Compile for config.distributed_config and run once on every rank."""
        compiled = self.compile(*args, config=config, **kwargs)
        return compiled(*self._bound(args, kwargs), config=config)

    def compile(self, *args, config=None, **kwargs) -> DistributedCompiledProgram:
        dcfg = getattr(config, "distributed_config", None)
        if dcfg is None:
            raise HostProgramError(f"{self.fn.__name__} is a @pl.jit.host function: it compiles for a set of "
                                   f"ranks", hint="pass config=RunConfig(platform=..., distributed_config="
                                   "DistributedConfig(device_ids=[0, 1]))")
        if not isinstance(dcfg, DistributedConfig):
            raise TypeError(f"RunConfig.distributed_config must be a DistributedConfig, got {type(dcfg).__name__}")
        values = self._bound(args, kwargs)
        params = [_param(name, p.annotation, v, self.fn.__name__)
                  for (name, p), v in zip(self.signature.parameters.items(), values)]
        for i, v in enumerate(values):       # (a launch argument is found by what it is a view of)
            j = next((j for j in range(i) if values[j] is v), None)
            if j is not None:
                raise HostProgramError(f"{self.fn.__name__}: parameters '{params[j]['name']}' and "
                                       f"'{params[i]['name']}' are given the same tensor; give each its own")
        trace = HostTrace(dcfg.world_size, self.filename)
        with tracing(trace):
            self.fn(*values)
        if not trace.launches:
            raise HostProgramError(f"{self.fn.__name__} launched nothing: call a @pl.jit function with "
                                   f"device=r for each rank")
        out = Path(getattr(config, "save_kernels_dir", None) or
                   Path("build_output") / f"{self.fn.__name__}_{time.strftime('%Y%m%d_%H%M%S')}")
        programs, launches = _compile_launches(trace, values, config, out)
        for ln in launches:             # a host tensor a rank writes into is an output
            for a, d in zip(ln["args"], programs[ln["program"]]["directions"]):
                if "param" in a and d != "In" and params[a["param"]]["direction"] == "In":
                    params[a["param"]]["direction"] = "InOut"
        windows, window_bytes = _window_layout(trace.windows)
        plan = {"schema": SCHEMA, "name": self.fn.__name__, "platform": config.platform,
                "distributed_config": config_dict(dcfg), "params": params, "windows": windows,
                "window_bytes": window_bytes, "programs": programs, "launches": launches}
        write_meta(out, plan)
        return DistributedCompiledProgram(out, plan)

    def _bound(self, args, kwargs) -> tuple:
        try:
            b = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}: {e}") from None
        b.apply_defaults()
        return tuple(b.arguments.values())


def _param(name, ann, value, fname) -> dict:
    kind = getattr(ann, "kind", None)
    direction = "In"
    if kind in ("Out", "InOut"):
        direction, ann = kind, ann.args[0]
        kind = getattr(ann, "kind", None)
    shape, dtype = _shape_dtype(value)
    if shape is None:
        raise HostProgramError(f"{fname}: parameter '{name}' of a @pl.jit.host function is a host tensor "
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


def _compile_launches(trace: HostTrace, values: tuple, config, out: Path):
    """Each launch's arguments as plan entries; each distinct device program compiled once."""
    from pypto.jit.decorator import RUNTIME, JITFunction
    dcfg = config.distributed_config
    device_cfg = config.replace(distributed_config=None)
    programs: list[dict] = []
    by_key: dict[str, int] = {}
    launches = []
    names: dict[str, int] = {}
    for ln in trace.launches:
        where = f"{trace.filename}:{ln.line}"
        f = ln.function
        if not isinstance(f, JITFunction) or f.kind != "orchestration":
            raise HostProgramError(f"{where}: a host function launches @pl.jit (per-device orchestration) "
                                   f"functions with device=r; {getattr(f, '__name__', f)!r} is not one")
        if not isinstance(ln.rank, int) or isinstance(ln.rank, bool) or not 0 <= ln.rank < dcfg.world_size:
            raise HostProgramError(f"{where}: device={ln.rank!r} is not a rank of this program "
                                   f"(0..{dcfg.world_size - 1})")
        args = [_arg(a, values, where) for a in ln.args]
        # scalars stay run-time values (one program for every rank) where the callee
        # annotates them as scalars; otherwise they specialize it (a program per value)
        sample = tuple(RUNTIME if "scalar" in a else v for a, v in zip(args, ln.args))
        try:
            key = f.cache_key(*sample, config=device_cfg, **ln.kwargs)
        except TypeError:
            sample = ln.args
            key = f.cache_key(*sample, config=device_cfg, **ln.kwargs)
        if key not in by_key:
            n = names.get(f.__name__, 0)
            names[f.__name__] = n + 1
            rel = f"next_levels/{f.__name__}" + (f"_{n}" if n else "")
            compiled = f.compile(*sample, config=device_cfg.replace(save_kernels_dir=str(out / rel)),
                                 **ln.kwargs)
            if len(compiled.params) != len(args):
                raise HostProgramError(f"{where}: {f.__name__} is launched with {len(args)} arguments; a "
                                       f"launch passes every parameter ({', '.join(p.name for p in compiled.params)}"
                                       f"), outputs as views of host tensors")
            by_key[key] = len(programs)
            programs.append({"function": f.__name__, "dir": rel,
                             "params": [p.name for p in compiled.params],
                             "directions": [p.direction for p in compiled.params]})
        launches.append({"rank": ln.rank, "device": dcfg.device_ids[ln.rank], "program": by_key[key],
                         "args": args, "line": ln.line})
    return programs, launches


def _arg(a, values: tuple, where: str) -> dict:
    """A launch argument: a window of a host parameter's bytes, or a scalar."""
    from pypto.runtime.tensors import is_torch_tensor
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
        out.append({"shape": list(b.shape), "dtype": _dtype_name(b.dtype), "offset": off, "nbytes": n,
                    "line": b.line})
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
