"""The pypto compile flow as build steps: one pure stage function per stage, and the
builders that lay a program's steps out as data.

This is the only module of `pipeline` that knows the compiler. Stage functions take
and return bytes (canonical texts and binaries), never objects, so every result can
be content-addressed and every step re-run alone.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from pypto_pipeline.graph import impl_digest

_ROOT = Path(__file__).resolve().parent.parent / "pypto"


# ----------------------------------------------------------------------------- impl digests
def _files(*globs) -> list[Path]:
    out = []
    for g in globs:
        out.extend(_glob(g))
    return out


@functools.lru_cache(maxsize=None)
def _glob(pattern: str) -> tuple[Path, ...]:
    return tuple(sorted(_ROOT.glob(pattern)))


@functools.lru_cache(maxsize=None)
def _file_digest(path: Path) -> str:
    """Each source file is read and hashed once per process, however many stages use it."""
    return f"{path.relative_to(_ROOT.parent) if path.is_relative_to(_ROOT.parent) else path.name}:" \
           + impl_digest(path)


def _impl(*parts) -> str:
    return impl_digest(*[_file_digest(p) if isinstance(p, Path) else p for p in parts])


# the IR, its printer and parser: every IR-to-IR stage reads and writes through them
_IR_FILES = ("dtype.py", "errors.py", "backend.py", "ir/nodes.py", "ir/ops.py", "ir/printer.py",
             "ir/visit.py", "ir/equal.py", "ir/layout.py", "language/**/*.py")


@functools.lru_cache(maxsize=None)
def stage_impl(stage: str, extra: str = "") -> str:
    """Digest of the code implementing a stage (cached per process)."""
    common = _files(*_IR_FILES) + [Path(__file__)]    # the stage functions below, too
    if stage == "pass":
        files = common + _files("passes/base.py", "passes/verify.py", "passes/__init__.py",
                                f"passes/{extra}.py", "diagnostics.py")
    elif stage == "specialize":
        files = common + _files("jit/specialize.py", "jit/analysis.py")
    elif stage == "frontend":
        files = common + _files("diagnostics.py")
    elif stage == "pto":
        files = common + _files("codegen/pto.py", "codegen/*.py")
    elif stage == "ptoas":
        from pypto.ptoas import IMPL_FILES
        files = [Path(p) for p in IMPL_FILES] + [Path(__file__)]
    elif stage == "kernel":
        from pypto.ptoas.build import toolchain_id
        return _impl(*_files("ptoas/build.py"), Path(__file__), toolchain_id())
    elif stage == "orchestration":
        from pypto.ptoas.build import toolchain_id
        return _impl(*(common + _files("codegen/*.py", "include/pypto_abi.h", "ptoas/build.py")),
                           toolchain_id())
    elif stage == "config":
        files = common + _files("codegen/config.py", "diagnostics.py")
    else:
        raise ValueError(f"unknown stage {stage}")
    return _impl(*files)


def preload() -> None:
    """Import every module the stage functions use, in this thread. Stage tasks run on
    worker threads; two threads importing modules that import each other can hit
    importlib's deadlock detection (_DeadlockError) if the first import happens there."""
    import pypto.codegen.config  # noqa: F401
    import pypto.codegen.host  # noqa: F401
    import pypto.codegen.orchestration  # noqa: F401
    import pypto.codegen.pto  # noqa: F401
    import pypto.diagnostics  # noqa: F401
    import pypto.ir.equal  # noqa: F401
    import pypto.jit.specialize  # noqa: F401
    import pypto.language  # noqa: F401
    import pypto.passes  # noqa: F401
    import pypto.passes.verify  # noqa: F401
    import pypto.ptoas  # noqa: F401
    import pypto.ptoas.build  # noqa: F401


# ----------------------------------------------------------------------------- stage functions
def _parse(data: bytes):
    from pypto.language import parse
    return parse(data.decode("utf-8"), filename="<ir>")


def _print(prog, explicit: bool = False) -> bytes:
    from pypto.ir.printer import print_program
    return print_program(prog, explicit=explicit).encode("utf-8")


def specialize_stage(inputs: dict, options: dict) -> dict:
    """@pl.jit source + argument metadata -> @pl.program source text."""
    from pypto.jit.specialize import specialize
    return {"program": specialize(json.loads(inputs["spec"])).encode("utf-8")}


def frontend_stage(inputs: dict, options: dict) -> dict:
    """Program source -> the canonical printed program (00_frontend.py)."""
    prog = _parse(inputs["program"])
    out = {"program": _print(prog)}
    if options.get("explicit"):
        out["dump"] = _print(prog, explicit=True)
    if "diag" in options:          # warnings on the program as written
        out["diagnostics"] = _warnings(prog, options["diag"])
    return out


def _warnings(prog, diag: dict) -> bytes:
    from pypto.diagnostics import render, warnings
    return render(warnings(prog, frozenset(diag["disabled"]))).encode("utf-8")


def _blocks(text: str) -> tuple[list[str], dict[str, str]]:
    """(dynamic-dim lines, function name -> its printed block) of a printed program.
    The printer prints each function on its own (names, indentation), so a block
    means the same in any program that holds it."""
    head, _, body = text.partition("\n@pl.program\nclass ")
    dyns = [ln for ln in head.splitlines() if " = pl.dynamic(" in ln]
    blocks = {}
    parts = body.split("\n    @pl.function")
    for part in parts[1:]:
        block = "    @pl.function" + part.rstrip("\n")
        name = block.split("\n    def ", 1)[1].split("(", 1)[0]
        blocks[name] = block
    return dyns, blocks


def _text_join(inputs: dict, order: list, name: str) -> bytes:
    dyns, blocks = set(), {}
    for fname in order:
        d, b = _blocks(inputs[f"fn:{fname}"].decode("utf-8"))
        dyns.update(d)
        blocks[fname] = b[fname]
    out = [f"# pypto.program: {name}", "import pypto.language as pl", ""]
    if dyns:
        out += sorted(dyns, key=lambda ln: ln.split(" = ", 1)[0]) + [""]
    out += ["@pl.program", f"class {name}:", "\n\n".join(blocks[f] for f in order)]
    return ("\n".join(out) + "\n").encode("utf-8")


def _join(inputs: dict, order: list, name: str, source: str):
    """One program from per-function results: function f is taken from input "fn:f"."""
    from pypto.ir.nodes import Program
    funcs = []
    for fname in order:
        part = _parse(inputs[f"fn:{fname}"])
        funcs.append(part.get(fname))
    return Program(name, funcs, source)


def pass_stage(inputs: dict, options: dict) -> dict:
    """One pass of the Default pipeline. Modes: "program" (the whole program in,
    the whole program out), "function" (only options["function"] is rewritten; the
    other functions are signature stubs it may call), "join" (per-function results
    in, whole program out; with no "pass" it only joins, for the dump)."""
    from pypto.backend import BackendType
    from pypto.ir.nodes import Program
    from pypto.passes import ALL_PASSES, run_pass
    from pypto.passes.base import PassOptions
    mode = options.get("mode", "program")
    if mode == "join" and options.get("pass") is None and not options.get("explicit") \
            and "diag" not in options:
        # only the whole program for the dump: splice the printed functions, no parse
        return {"program": _text_join(inputs, options["order"], options["program_name"])}
    if mode == "join":
        prog = _join(inputs, options["order"], options["program_name"], options["source"])
    else:
        prog = _parse(inputs["program"])
    if options.get("pass") is None:
        out = prog
    else:
        p = next(x for x in ALL_PASSES if x.name == options["pass"])
        # the pass sees exactly the options it reads (they are in its key); the rest default
        from dataclasses import fields
        kw = {f.name: options[f.name] for f in fields(PassOptions) if f.name in options}
        if "backend_type" in kw:
            kw["backend_type"] = BackendType(kw["backend_type"])
        opts = PassOptions(**kw)
        verify = options["verify"] != "none"
        done = list(options["done"])
        if mode == "function":
            fname = options["function"]
            one = run_pass(p, Program(prog.name, [prog.get(fname)], prog.source), opts, verify, done,
                           private=True)
            out = Program(prog.name, [one.functions[0] if f.name == fname else f
                                      for f in prog.functions], prog.source)
        else:
            out = run_pass(p, prog, opts, verify, done, private=True)
    text = _print(out)
    if options.get("verify") == "roundtrip":
        from pypto.ir.equal import assert_structural_equal
        from pypto.errors import VerificationError
        try:
            assert_structural_equal(out, _parse(text))
        except AssertionError as e:
            raise VerificationError(f"after pass {options.get('pass')}: the printed IR does not "
                                    f"parse back to the same program: {e}") from None
    res = {"program": text}
    if options.get("explicit"):
        res["dump"] = _print(out, explicit=True)
    if "diag" in options:          # post-pass warnings, on what this step rewrote
        fname = options.get("function")
        mine = Program(out.name, [out.get(fname)], out.source) if fname else out
        res["diagnostics"] = _warnings(mine, options["diag"])
    return res


def pto_stage(inputs: dict, options: dict) -> dict:
    """One kernel (a program holding just that function) -> its .pto text."""
    from pypto.codegen.pto import generate_kernel
    prog = _parse(inputs["kernel"])
    text = generate_kernel(prog, options["kernel"], arch=options["arch"],
                           emit_loc=options["emit_loc"], memory_planner=options["memory_planner"])
    return {"pto": text.encode("utf-8")}


def ptoas_stage(inputs: dict, options: dict) -> dict:
    """.pto -> C++ against the tile library (our ptoas)."""
    from pypto.ptoas import compile_pto
    res = compile_pto(inputs["pto"].decode("utf-8"), arch=options["arch"], level=options["level"],
                      dump_passes=options["dump"])
    out = {"cpp": res.cpp.encode("utf-8")}
    if options["dump"]:          # ptoas's own IR after each of its passes
        for name in ptoas_dump_names(options["level"]):
            out[f"pass_{name}"] = res.pass_dumps[name].encode("utf-8")
    return out


def ptoas_dump_names(level: str) -> list[str]:
    names = ["01_parse", "02_verify"] + (["03_plan_memory"] if level != "level3" else [])
    return names + ["04_emit"]


def kernel_stage(inputs: dict, options: dict) -> dict:
    """C++ -> a shared object for the simulator (system C++ compiler)."""
    from pypto.ptoas.build import build_kernel
    if options["platform"] not in ("a2a3sim", "a5sim"):
        from pypto.errors import CodegenError
        raise CodegenError(
            f"building device binaries for platform {options['platform']!r} needs the vendor "
            f"toolchain (ccec), which is not installed",
            hint="compile for a2a3sim or a5sim to run on the CPU simulator, or pass "
                 "skip_ptoas=True to stop at the .pto files")
    return {"so": build_kernel(inputs["cpp"].decode("utf-8"), arch=options["arch"],
                               core_type=options["core_type"])}


def orchestration_stage(inputs: dict, options: dict) -> dict:
    """The Orchestration function -> host C++ that submits kernels, and its build."""
    from pypto.codegen.orchestration import generate_orchestration
    from pypto.codegen.host import build_host
    prog = _parse(inputs["program"])
    cpp = generate_orchestration(prog, options["name"], dict(options["kernel_ids"]))
    return {"cpp": cpp.encode("utf-8"), "so": build_host(cpp)}


def config_stage(inputs: dict, options: dict) -> dict:
    """kernel_config.py and compiled_meta.json: what the runtime and from_dir read."""
    from pypto_cache import digest_bytes
    from pypto.codegen.config import compiled_meta_text, kernel_config_text
    prog = _parse(inputs["program"])
    out = {}
    if "diag" in options:          # perf hints (and post-pipeline warnings) on the final program
        from pypto.backend import BackendType
        from pypto.diagnostics import perf_hints, render
        final = _parse(inputs["final"])
        disabled = frozenset(options["diag"]["disabled"])
        out["perf_hints"] = render(perf_hints(final, BackendType(options["backend_type"]),
                                              disabled)).encode("utf-8")
        if options["diag"]["phase"] == "post_pipeline":
            out["diagnostics"] = _warnings(final, options["diag"])
    out["meta"] = compiled_meta_text(prog, options["orchestration"], options["platform"],
                                     options["backend_type"], options["runtime"]).encode("utf-8")
    if options["kernels"] is not None:
        kernels = []
        for k in options["kernels"]:
            kernels.append(dict(k, digest=digest_bytes(inputs[f"so:{k['name']}"])))
        out["config"] = kernel_config_text(prog, options["orchestration"], kernels,
                                           options["runtime"], options["platform"]).encode("utf-8")
    return out


# ----------------------------------------------------------------------------- step builders
STAGE_FNS = {"specialize": specialize_stage, "frontend": frontend_stage, "pass": pass_stage,
             "pto": pto_stage, "ptoas": ptoas_stage, "kernel": kernel_stage,
             "orchestration": orchestration_stage, "config": config_stage}
