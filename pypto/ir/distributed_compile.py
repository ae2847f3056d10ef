"""ir.compile of a @pl.program with HOST-level functions (the class form of the HOST
level):

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(self, a, b, f):             # host Python: launches, windows, sub-workers
        out = self.chip_orch(a, b, f)         # an Orchestration of the program, on a rank
        self.inspect_result(out)              # a HOST SubWorker: runs on the host after it
        return out

The HOST orchestrator is traced as the @pl.jit.host form is (pypto.language.host_trace),
its parameters stand-ins for the host tensors (TensorRef: their shapes are the
annotations'). Each Orchestration it launches is compiled, with the functions it reaches,
as a program of its own through the build graph; SubWorker calls become steps of the host
plan (a `...` body: a callback bound at prepare(callbacks=...); a concrete body runs as
written, given the tensors)."""
from __future__ import annotations

from pathlib import Path

from pypto.errors import NotBuiltError
from pypto.ir.distributed_compiled_program import host_function
from pypto.ir.host_plan import HostProgramError, build
from pypto.ir.nodes import Call, Function, FunctionType, Program, Role, TensorType
from pypto.ir.visit import stmt_exprs, walk, walk_expr
from pypto.language.host_trace import Callback, HostTrace, Launch, TensorRef, caller_line, tracing


def host_python(program: Program, f: Function, with_self: bool):
    """The Python function of a HOST function: the decorated one (live), else made from its
    source text."""
    live = getattr(program, "host_python", {}).get(f.name)
    if live is not None:
        return live
    return host_function(f.name, (["self"] if with_self else []) + [p.var.name for p in f.params],
                         f.attrs.get("python_body", "..."))


def sub_workers(program: Program) -> list[dict]:
    return [{"name": f.name, "abstract": f.requires_runtime_binding, "params": [p.var.name for p in f.params],
             "python_body": f.attrs.get("python_body", "...")}
            for f in program.functions if f.is_host and f.role is Role.SubWorker]


def reached(program: Program, root: str) -> Program:
    """The functions `root` reaches by calls (in the program's order): a program of its own."""
    names = {f.name for f in program.functions}
    keep, todo = {root}, [root]
    while todo:
        f = program.get(todo.pop())
        for s in walk(f.body):
            for e in stmt_exprs(s):
                for c in walk_expr(e):
                    callee = c.op[1:] if isinstance(c, Call) and c.op.startswith("@") else None
                    if callee in names and callee not in keep:     # (a call of a function: "@name")
                        keep.add(callee)
                        todo.append(callee)
    return Program(program.name, [f for f in program.functions if f.name in keep], program.source)


class _Self:
    """`self` of the traced HOST orchestrator: the program's functions as launches and steps."""

    def __init__(self, program: Program, trace: HostTrace):
        self._program, self._trace = program, trace

    def __getattr__(self, name):
        f = self._program.get(name)
        if f is None:
            raise AttributeError(f"the program has no function {name!r}")
        trace = self._trace
        if f.is_host and f.role is Role.SubWorker:
            def call(*args):
                trace.callbacks.append(Callback(name, args, len(trace.launches), caller_line(trace)))
            return call
        if f.func_type is not FunctionType.Orchestration:
            raise HostProgramError(f"{trace.filename}:{caller_line(trace)}: a HOST orchestrator launches the "
                                   f"program's Orchestration functions; {name!r} is {f.func_type.name}")

        def launch(*args, device=None):
            if device is None:          # no device=: the ranks in turn, in launch order
                device = trace.undirected % trace.world_size
                trace.undirected += 1
            trace.launches.append(Launch(device, name, args, {}, caller_line(trace)))
            outs = [a for a, p in zip(args, f.params) if p.direction.value != "In"]
            return outs[0] if len(outs) == 1 else tuple(outs) if outs else None
        return launch


def compile_program(program: Program, *, distributed_config, platform: str, output_dir, options: dict):
    from pypto.ir.compile_many import program_request
    from pypto.runtime.config import RunConfig
    hosts = [f for f in program.functions if f.is_host and f.role is not Role.SubWorker]
    if len(hosts) != 1:
        raise HostProgramError(f"{program.name}: a distributed program has one HOST orchestrator "
                               f"(@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)), it has "
                               f"{len(hosts)}")
    host = hosts[0]
    params, refs = [], []
    for i, p in enumerate(host.params):
        t = p.var.type
        if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape[1:]):
            raise NotBuiltError(f"{host.name}: parameter {p.var.name!r} of a HOST orchestrator is a tensor whose "
                                f"dims past the first are static in this pypto (other dynamic shapes need the "
                                f"@pl.jit.host form, which sees the tensors)", host.span)
        # a dynamic leading dim (x: pl.Tensor[[NR, ...]], one row per rank) is the rank count
        shape = [d if isinstance(d, int) else distributed_config.world_size for d in t.shape]
        params.append({"name": p.var.name, "direction": p.direction.value, "shape": shape,
                       "dtype": t.dtype.name})
        refs.append(TensorRef(i, 0, tuple(shape), t.dtype))
    fn = host_python(program, host, with_self=True)
    filename = fn.__code__.co_filename
    trace = HostTrace(distributed_config.world_size, filename)
    with tracing(trace):
        fn(_Self(program, trace), *refs)
    out = Path(output_dir) if output_dir is not None else None
    if out is None:
        import time
        out = Path("build_output") / f"{program.name}_{time.strftime('%Y%m%d_%H%M%S')}"
    config = RunConfig(platform=platform, distributed_config=distributed_config,
                       dump_passes=options.get("dump_passes", True))

    def compiler(ln, args, where):
        return ln.function, ln.function, program_request(reached(program, ln.function), platform=platform,
                                                         **options)
    compiled = build(host.name, trace, tuple(refs), params, config, out, compiler, sub_workers(program))
    compiled.sub_worker_fns = {f.name: host_python(program, f, with_self=False) for f in program.functions
                               if f.is_host and f.role is Role.SubWorker and not f.requires_runtime_binding}
    compiled.program = program
    return compiled
