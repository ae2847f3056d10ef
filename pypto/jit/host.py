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

from pypto.ir.distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from pypto.ir.host_plan import HostProgramError, build, check_distinct, host_param
from pypto.language.host_trace import HostTrace, tracing

__all__ = ["HostFunction", "HostProgramError"]


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
        params = [host_param(name, p.annotation, v, self.fn.__name__)
                  for (name, p), v in zip(self.signature.parameters.items(), values)]
        check_distinct(values, params, self.fn.__name__)
        trace = HostTrace(dcfg.world_size, self.filename)
        with tracing(trace):
            self.fn(*values)
        out = Path(getattr(config, "save_kernels_dir", None) or
                   Path("build_output") / f"{self.fn.__name__}_{time.strftime('%Y%m%d_%H%M%S')}")
        return build(self.fn.__name__, trace, values, params, config, out, _jit_compiler(config))

    def _bound(self, args, kwargs) -> tuple:
        try:
            b = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}: {e}") from None
        b.apply_defaults()
        return tuple(b.arguments.values())




def _jit_compiler(config):
    """Launches of @pl.jit functions: a program per distinct specialization (the rank a
    run-time scalar where the callee annotates it as one, else a program per value)."""
    from pypto.ir.compile_many import jit_request
    from pypto.jit.decorator import RUNTIME, JITFunction, cache_key
    device_cfg = config.replace(distributed_config=None)

    def compiler(ln, args, where):
        f = ln.function
        if not isinstance(f, JITFunction) or f.kind != "orchestration":
            raise HostProgramError(f"{where}: a host function launches @pl.jit (per-device orchestration) "
                                   f"functions with device=r; {getattr(f, '__name__', f)!r} is not one")
        sample = tuple(RUNTIME if "scalar" in a else v for a, v in zip(args, ln.args))
        try:
            spec = f.spec(*sample, **ln.kwargs)
        except TypeError:
            spec = f.spec(*ln.args, **ln.kwargs)
        return cache_key(spec, device_cfg), f.__name__, jit_request(spec, device_cfg)
    return compiler
