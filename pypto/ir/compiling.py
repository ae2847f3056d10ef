"""`ir.compile`: validate the parameters, then hand the program to the build graph.

This module only normalises options; every stage runs as a task of `pipeline`
(imported lazily, so importing the compiler stays cheap).
"""
from __future__ import annotations

import os
from pathlib import Path

from pypto.backend import BackendType, chip, backend_for_platform
from pypto.errors import PyptoError
from pypto.ir.options import (DiagnosticPhase, MemoryPlanner, OptimizationStrategy,
                              PassDumpLevel, RuntimeKind, VerificationLevel, coerce)


class UnsupportedOptionError(ValueError):
    """A parameter value this build of pypto does not implement yet."""


def _truthy(env: str, default: bool) -> bool:
    v = os.environ.get(env)
    if v is None or v.strip() == "":
        return default
    return v.strip().lower() not in ("0", "false", "no", "off")


def default_output_dir(name: str) -> Path:
    """`<base>/<name>_<YYYYmmdd_HHMMSS>`; a clash in the same second gets `_2`, `_3`...
    claimed atomically with mkdir, so concurrent compiles never share a directory."""
    base = Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")
    import datetime
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    base.mkdir(parents=True, exist_ok=True)
    k = 1
    while True:
        d = base / (f"{name}_{stamp}" if k == 1 else f"{name}_{stamp}_{k}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            k += 1


def build_options(*, strategy=OptimizationStrategy.Default, dump_passes=True,
                  backend_type=BackendType.Ascend910B, platform=None, skip_ptoas=False,
                  verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
                  memory_planner=None, enable_pypto_l0c_double_buffer=None, profiling=False,
                  distributed_config=None, analyze_auto_scopes_for_deps=False,
                  emit_source_loc=None, dump_ptoas_passes=False, runtime=None):
    """Normalise ir.compile's options into the graph's BuildOptions."""
    from pypto_pipeline.options import BuildOptions
    from pypto.passes import selected
    coerce(OptimizationStrategy, strategy, "strategy")
    if isinstance(dump_passes, bool):
        dump = PassDumpLevel.CONCISE if dump_passes else PassDumpLevel.NONE
    else:
        dump = coerce(PassDumpLevel, dump_passes, "dump_passes")
    if platform is not None:
        coerce(BackendType, backend_type, "backend_type")
        backend = backend_for_platform(platform)
    else:
        backend = coerce(BackendType, backend_type, "backend_type")
        platform = "a5sim" if backend is BackendType.Ascend950 else "a2a3sim"
    if verification_level is None:
        env = os.environ.get("PYPTO_VERIFY_LEVEL", "").strip().lower()
        verification_level = env if env in ("none", "basic", "roundtrip") else "basic"
    verify = coerce(VerificationLevel, verification_level, "verification_level")
    planner = coerce(MemoryPlanner, memory_planner or MemoryPlanner.PYPTO, "memory_planner")
    if diagnostic_phase is None:
        env = os.environ.get("PYPTO_WARNING_LEVEL", "").strip().lower()
        diagnostic_phase = env if env in ("none", "post_pass", "post_pipeline") else "pre_pipeline"
    phase = coerce(DiagnosticPhase, diagnostic_phase, "diagnostic_phase")
    from pypto.ir.options import DEFAULT_DISABLED, HINTS, WARNINGS
    if disabled_diagnostics is None:
        disabled = set(DEFAULT_DISABLED)
    else:
        disabled = set()
        for d in disabled_diagnostics:
            name = getattr(d, "name", d)
            if name not in WARNINGS + HINTS:
                raise ValueError(f"disabled_diagnostics: unknown check {name!r}; checks are "
                                 f"{', '.join(WARNINGS + HINTS)}")
            disabled.add(name)
    profiling = bool(profiling) or _truthy("PYPTO_COMPILE_PROFILING", False)
    if distributed_config is not None:
        raise ValueError("distributed_config compiles a HOST-level program: a @pl.jit.host function, or a "
                         "@pl.program with a @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)")
    if os.environ.get("PYPTO_EXECUTOR", "").strip():
        from pypto_pipeline.executor import settings    # ExecutorError: what to fix
        settings()
    rt = coerce(RuntimeKind, runtime or RuntimeKind.TENSORMAP_AND_RINGBUFFER, "runtime")
    emit_loc = _truthy("PYPTO_EMIT_PTO_LOC", True) if emit_source_loc is None else bool(emit_source_loc)
    l0c_double_buffer = bool(enable_pypto_l0c_double_buffer)
    from pypto_pipeline.stages import pass_reads     # kept with the impl index: no pass imported
    reads = pass_reads()
    passes = tuple((p.name, p.module_name, reads[p.name])
                   for p in selected(planner.value, l0c_double_buffer))
    return BuildOptions(platform=platform, backend_type=backend.value, arch=chip(backend).arch,
                        dump=dump.name.lower(), skip_ptoas=bool(skip_ptoas), verify=verify.value,
                        memory_planner=planner.value, emit_loc=emit_loc,
                        dump_ptoas_passes=bool(dump_ptoas_passes), profiling=bool(profiling),
                        diag_phase=phase.value, disabled=tuple(sorted(disabled)),
                        analyze_auto_scopes_for_deps=bool(analyze_auto_scopes_for_deps),
                        l0c_double_buffer=l0c_double_buffer, runtime=rt.value, passes=passes)


def compile(program, *, output_dir=None, strategy=OptimizationStrategy.Default, dump_passes=True,
            backend_type=BackendType.Ascend910B, platform=None, skip_ptoas=False,
            verification_level=None, diagnostic_phase=None, disabled_diagnostics=None,
            memory_planner=None, enable_pypto_l0c_double_buffer=None, profiling=False,
            distributed_config=None, analyze_auto_scopes_for_deps=False, emit_source_loc=None,
            dump_ptoas_passes=False, runtime=None):
    """Compile an `ir.Program` through the build graph; returns a CompiledProgram."""
    from pypto.ir.nodes import Program
    if not isinstance(program, Program):
        raise TypeError(f"ir.compile expects an ir.Program (a @pl.program class), got "
                        f"{type(program).__name__}; for a @pl.jit function call .compile(...)")
    if any(f.is_host for f in program.functions):       # the HOST level: a program per rank
        from pypto.ir.distributed_compile import compile_program
        from pypto.ir.distributed_compiled_program import DistributedConfig
        dcfg = distributed_config if distributed_config is not None else DistributedConfig()
        if not isinstance(dcfg, DistributedConfig):
            raise TypeError(f"distributed_config must be a DistributedConfig, got {type(dcfg).__name__}")
        options = dict(strategy=strategy, dump_passes=dump_passes, backend_type=backend_type,
                       skip_ptoas=skip_ptoas, verification_level=verification_level,
                       diagnostic_phase=diagnostic_phase, disabled_diagnostics=disabled_diagnostics,
                       memory_planner=memory_planner, enable_pypto_l0c_double_buffer=enable_pypto_l0c_double_buffer,
                       profiling=profiling, analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps,
                       emit_source_loc=emit_source_loc, dump_ptoas_passes=dump_ptoas_passes, runtime=runtime)
        plat = build_options(platform=platform, backend_type=backend_type).platform
        return compile_program(program, distributed_config=dcfg, platform=plat, output_dir=output_dir,
                               options=options)
    if distributed_config is not None:
        raise ValueError("distributed_config compiles a program with a HOST-level orchestrator "
                         "(@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)); this one has none")
    name, source, opts, _ = _program_input(
        program, strategy=strategy, dump_passes=dump_passes, backend_type=backend_type,
        platform=platform, skip_ptoas=skip_ptoas, verification_level=verification_level,
        diagnostic_phase=diagnostic_phase, disabled_diagnostics=disabled_diagnostics,
        memory_planner=memory_planner, enable_pypto_l0c_double_buffer=enable_pypto_l0c_double_buffer,
        profiling=profiling, distributed_config=distributed_config,
        analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps,
        emit_source_loc=emit_source_loc, dump_ptoas_passes=dump_ptoas_passes, runtime=runtime)
    return _run(name, source, opts, output_dir, program=program, from_spec=False)


def _check_identifier(name, what: str) -> None:
    """Program and function names become Python identifiers in the printed program,
    C symbols and parts of output paths: plain identifiers only (no '/', no '..')."""
    import keyword
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{what} is named {name!r}, which is not a Python identifier; names of "
                         f"programs and functions become symbols and parts of the output "
                         f"directory, so they must be plain identifiers such as 'my_kernel'")


def _lowered_by(program) -> str | None:
    """What shows that `program` already went through the pass pipeline, or None:
    InitMemRef gives every buffer a pl.MemRef and allocates on-chip memory with
    tile.alloc; running the pipeline again would allocate all of it a second time."""
    from pypto.ir.nodes import Call
    from pypto.ir.visit import stmt_exprs, walk, walk_expr
    for f in program.functions:
        for p in f.params:
            if getattr(p.var.type, "memref", None) is not None:
                return f"parameter {p.var.name!r} of {f.name!r} already has a pl.MemRef"
        for s in walk(f.body):
            for e in stmt_exprs(s):
                for x in walk_expr(e):
                    if isinstance(x, Call) and x.op == "tile.alloc":
                        return f"{f.name!r} already allocates on-chip memory (pl.tile.alloc)"
                    if getattr(getattr(x, "type", None), "memref", None) is not None:
                        return f"a value in {f.name!r} already has a pl.MemRef"
    return None


def _caller_span():
    """The user's line that called into pypto (the first frame outside the package)."""
    import sys
    from pypto.errors import Span
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    while frame is not None:
        file = os.path.abspath(frame.f_code.co_filename)
        if not file.startswith(root + os.sep):
            return Span(os.path.basename(file), frame.f_lineno, 1)
        frame = frame.f_back
    return None


def _refuse_lowered(program) -> None:
    why = _lowered_by(program)
    if why is None:
        return
    from pypto.errors import LoweredProgramError
    err = LoweredProgramError(
        f"program {program.name!r} is already lowered ({why}): ir.compile runs the whole pass "
        f"pipeline on the program it is given, and on a lowered one it would place and "
        f"allocate every buffer a second time",
        _caller_span(),
        "compile the program before lowering: kernel.compile(*args, config=RunConfig(...)) "
        "for a @pl.jit function, or ir.compile(<the @pl.program class>); kernel.lower(...) "
        "returns the post-pass IR for reading, not for compiling again")
    raise err.with_traceback(None)


def _need_orchestration(program) -> None:
    """A runnable build launches its kernels from an orchestration function."""
    from pypto.errors import CodegenError
    from pypto.ir.nodes import FunctionType, InCoreScope
    from pypto.ir.visit import walk
    for f in program.functions:     # an Opaque function with pl.at regions becomes the orchestration
        if f.func_type is FunctionType.Orchestration or (
                f.func_type is FunctionType.Opaque and any(isinstance(s, InCoreScope) for s in walk(f.body))):
            return
    names = ", ".join(repr(f.name) for f in program.functions)
    first = program.functions[0] if program.functions else None
    raise CodegenError(
        f"program {program.name!r} has no orchestration function: nothing would launch its "
        f"functions ({names})", getattr(first, "span", None),
        "add an entry, @pl.function(type=pl.FunctionType.Orchestration) def main(self, ...), that "
        "calls the kernels; or compile with skip_ptoas=True to get only the .pto files"
    ).with_traceback(None)


def _user_error(fn):
    """User errors surface at the API call, without the build graph's frames: the
    message already names the user's file and line."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except PyptoError as e:
            raise e.with_traceback(None) from None
    return wrapper


@_user_error
def _run(name, source: bytes, opts, output_dir, *, program, from_spec):
    from pypto_pipeline.served import serve
    from pypto.runtime.compiled import CompiledProgram
    out = Path(output_dir) if output_dir is not None else default_output_dir(name)
    out.mkdir(parents=True, exist_ok=True)
    result, damaged = serve(source, opts, out, from_spec=from_spec)   # unchanged: no graph
    if result is None:
        from pypto_pipeline.driver import build
        result = build(name, source, opts, out, from_spec=from_spec, damaged=damaged)
    if program is None and from_spec and result.frontend:   # @pl.jit: the specialised, pre-pass IR
        from pypto.language import parse
        program = parse(result.frontend, filename="<ir>")
    if opts.skip_ptoas:
        return SkippedPtoas(out, program, result)
    # the artifacts were just built, or checked against their digests: the metadata is
    # read when the program is first used
    return CompiledProgram(out, program=program, check=False)


class SkippedPtoas:
    """What compile(skip_ptoas=True) returns: the .pto files and metadata, nothing to run."""

    def __init__(self, output_dir: Path, program, build):
        self.output_dir = Path(output_dir).resolve()
        self.program = program
        self.pto_files = sorted((self.output_dir / "ptoas").glob("*.pto"))

    def __fspath__(self):
        return str(self.output_dir)

    def __call__(self, *a, **k):
        raise RuntimeError(f"{self.output_dir} was compiled with skip_ptoas=True: it has .pto files "
                           f"but no kernels to run; compile without skip_ptoas to run it")


# ----------------------------------------------------------------------------- @pl.jit entry points
def _config_kwargs(config) -> dict:
    """The compile options a RunConfig carries (SPEC §3)."""
    if config is None:
        return {}
    kw = {"platform": getattr(config, "platform", None) or "a2a3sim",
          "dump_passes": getattr(config, "dump_passes", False),
          "dump_ptoas_passes": getattr(config, "dump_ptoas_passes", False),
          "profiling": getattr(config, "compile_profiling", False),
          "diagnostic_phase": getattr(config, "diagnostic_phase", None),
          "disabled_diagnostics": getattr(config, "disabled_diagnostics", None),
          "analyze_auto_scopes_for_deps": getattr(config, "analyze_auto_scopes_for_deps", False),
          "memory_planner": getattr(config, "memory_planner", None),
          "distributed_config": getattr(config, "distributed_config", None),
          "runtime": getattr(config, "runtime", None)}
    strategy = getattr(config, "strategy", None)
    if strategy is not None:
        kw["strategy"] = strategy
    return kw


def compile_program_for(program, config=None):
    """ir.compile of a @pl.program with the compile options a RunConfig carries (what
    pypto.runtime.run does with a Program); its save_kernels_dir is the output dir."""
    from pypto.runtime.config import RunConfig
    config = config if config is not None else RunConfig()
    out = getattr(config, "save_kernels_dir", None)
    kw = _config_kwargs(config)
    if getattr(config, "backend_type", None) is not None:
        kw["backend_type"] = config.backend_type
    return compile(program, output_dir=out, **kw)


def compile_jit(spec: dict, *, config=None):
    """Compile a @pl.jit specialization: the graph starts at the specialize stage."""
    import json
    kw = _config_kwargs(config)
    out = getattr(config, "save_kernels_dir", None) if config is not None else None
    opts = build_options(**kw)
    source = json.dumps(spec, sort_keys=True).encode("utf-8")
    return _run(spec["program"], source, opts, out, program=None, from_spec=True)


@_user_error
def lower_jit(spec: dict, *, config=None):
    """Specialize and run the passes in memory; returns the post-pass Program and writes
    nothing (no artifacts, no passes_dump, no cache entries)."""
    from pypto.backend import BackendType as BT
    from pypto.jit.specialize import specialize
    from pypto.language import parse
    from pypto.passes import run_pipeline
    from pypto.passes.base import PassOptions
    opts = build_options(**_config_kwargs(config))
    prog = parse(specialize(spec), filename="<jit>")
    return run_pipeline(prog, PassOptions(backend_type=BT(opts.backend_type),
                                          memory_planner=opts.memory_planner,
                                          l0c_double_buffer=opts.l0c_double_buffer),
                        verify=opts.verify != "none")


@_user_error
def graph_input(entry, **options):
    """(name, graph input bytes, BuildOptions, starts at specialize?) of a @pl.program or a
    fully annotated @pl.jit entry, checked as ir.compile and .compile() check them: what
    the CLI, a project's dodo.py and the pytest helper lay the graph out from."""
    import json
    from pypto.ir.nodes import Program
    from pypto.jit.decorator import JITFunction
    if isinstance(entry, JITFunction):
        spec = entry.spec()
        return (spec["program"], json.dumps(spec, sort_keys=True).encode("utf-8"),
                build_options(**options), True)
    if not isinstance(entry, Program):
        raise TypeError(f"expected a @pl.program class or a @pl.jit function, got "
                        f"{type(entry).__name__}")
    return _program_input(entry, **options)


def _external_stamp(program) -> bytes:
    """A comment line per hand-written kernel with the digest of its files (its entry and
    what it includes): the compile's input, so an edit to one of them is a new compile,
    not one served whole from the store. (The kernel's own build reads the files.)"""
    lines = []
    for f in program.functions:
        path = f.attrs.get("external_source")
        if path is not None:
            from pypto.external_kernel import sources
            from pypto_cache import digest_bytes
            digest = digest_bytes(b"".join(rel.encode() + b"\0" + data + b"\0" for rel, data in sources(path)))
            lines.append(f"# external kernel {f.name}: {digest}\n")
    return "".join(lines).encode("utf-8")


def _program_input(program, **options):
    """ir.compile's checks of a program, its options, and its printed text."""
    from pypto.ir.printer import print_program
    _check_identifier(program.name, "the program")
    for f in program.functions:
        _check_identifier(f.name, f"function of program {program.name!r}")
    text = print_program(program).encode("utf-8")
    if b"pl.MemRef(" in text or b"tile.alloc(" in text:   # what a lowered program prints
        _refuse_lowered(program)
    text += _external_stamp(program)
    opts = build_options(**options)
    if not opts.skip_ptoas:
        _need_orchestration(program)
    # the graph's frontend parses exactly this text: in this process it may take a copy
    # of the program instead (an unused entry is dropped when the compile ends)
    from pypto.stages.text import remember_copy
    remember_copy(text, program)
    return program.name, text, opts, False
