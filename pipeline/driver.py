"""Lay out and run the build graph of one program, into one output directory.

Phase 1 is the front of the flow (specialize, frontend, every pass); its last output
names the kernels, so phase 2 (pto, ptoas, kernel per kernel; orchestration; config)
is laid out from it. Both phases go through the same doit runner and the same store;
`report/tasks.json` records what ran and what came from the cache.
"""
from __future__ import annotations

import functools
import gc
import json
import os
import time
from pathlib import Path

from pypto_pipeline.graph import Ref, Step
from pypto_pipeline.options import Build, BuildOptions  # noqa: F401 - part of this module's API
from pypto_pipeline.outputs import (MANAGED_DIRS, MANAGED_FILES, finish,  # noqa: F401
                                    remove_stale, tasks_report, write_profile, write_report)
from pypto_pipeline.served import program_key, serve
from pypto_pipeline.stages import STAGE_FNS, preload, ptoas_dump_names, stage_impl
from pypto.passes import FUNCTION_LOCAL as _LOCAL


# impl digest -> (stage, extra): what report/explain.json breaks a code change down by
_IMPL_OF: dict[str, tuple[str, str]] = {}


def _step(name, stage, inputs, outputs, options, targets=None, executable=(), doc="", extra="",
          editable=()):
    impl = stage_impl(stage, extra)
    _IMPL_OF[impl] = (stage, extra)
    return Step(name=name, stage=stage, fn=STAGE_FNS[stage], impl=impl,
                options=options, inputs=inputs, outputs=tuple(outputs), targets=targets or {},
                executable=tuple(executable), editable=tuple(editable), doc=doc)


def executor():
    """The process's Dask executor when $PYPTO_EXECUTOR is set (pipeline/executor.py,
    imported only then), else None."""
    if not os.environ.get("PYPTO_EXECUTOR", "").strip():
        return None
    from pypto_pipeline.executor import from_env, on_worker
    return None if on_worker() else from_env(impl_check)     # a worker builds itself


def compile_out_there(programs: list[tuple]) -> list[dict | None]:
    """Whole compiles, all at once on the cluster: for each (name, source, opts,
    from_spec), {"worker", "records"} once a worker has built it (its results then in
    the remote cache: the compile here is served from there), or None where it did not
    (then it is built here, step by step on the cluster). Raises WorkerMismatch."""
    ex = executor()
    if ex is None or len(programs) < 2:
        return [None] * len(programs)
    from pypto_cache import digest_bytes
    calls = [(name, source, opts.as_dict(), from_spec,
              program_key(digest_bytes(source), opts, from_spec))
             for name, source, opts, from_spec in programs]
    done = ex.map(remote_compile, calls)
    for got in done:
        if got is not None and "refused" in got:
            from pypto_pipeline.run import WorkerMismatch
            raise WorkerMismatch(got["refused"])
    return [got if got is not None and "records" in got else None for got in done]


def remote_compile(name: str, source: bytes, options: dict, from_spec: bool,
                   pkey: str) -> dict:
    """What a worker runs for a whole compile: the build into a scratch folder with its
    own store, which publishes every result and the whole-compile entry to the remote
    cache; {"worker", "records"}, {"refused": why} when its code differs, or
    {"failed": why} when the program does not compile (the client then says why)."""
    import tempfile
    from pypto_cache import digest_bytes
    from pypto_pipeline.executor import address, worker_store
    where = address()
    opts = BuildOptions(**options)     # (immutable: it travels as its dict)
    mine = program_key(digest_bytes(source), opts, from_spec)
    if mine != pkey:
        return {"refused": f"worker {where} refuses to compile {name}: its pypto differs from "
                           f"the client's (whole-compile key {mine} on the worker, {pkey} on the "
                           f"client); install the same pypto on the workers and restart them, "
                           f"or unset PYPTO_EXECUTOR"}
    with tempfile.TemporaryDirectory(prefix="pypto-remote-") as scratch:
        # a store of its own in front of the remote: every result then comes from the
        # remote or is built and published to it -- one the worker's disk already held
        # would have been served from there, and the client would not find it in Redis
        from pypto_cache import Store
        remote = worker_store().remote
        if remote is not None:
            remote.forget_seen()     # what it saw there earlier may be gone (evicted, flushed)
        store = Store(Path(scratch) / "store", remote=remote)
        try:
            b = build(name, source, opts, Path(scratch) / "out", from_spec=from_spec, store=store)
        except Exception as exc:     # the program's own error: the client meets it again
            return {"failed": f"{type(exc).__name__}: {exc}"}
        records = [(r.name, r.stage, r.status, r.seconds) for r in b.records]
    return {"worker": where, "records": records}


def impl_check(step: Step):
    """How a worker recomputes `step`'s implementation digest with its own code."""
    what = _IMPL_OF.get(step.impl)
    from pypto_pipeline import stages      # the function itself, whatever this module binds
    return None if what is None else (stages.stage_impl, what)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def _pass_step(name, inputs, opts: BuildOptions, pname, module, reads, done, mode, extra, target):
    o = {"pass": pname, "verify": opts.verify, "done": list(done), "explicit": opts.dump == "explicit",
         "mode": mode, **extra}
    for r in reads:
        o[r] = getattr(opts, r)
    outputs = ["program", "dump"] if o["explicit"] else ["program"]
    if opts.diag_phase == "post_pass" and pname is not None:
        o["diag"] = _diag(opts)
        outputs.append("diagnostics")
    if pname is None:
        doc = f"the whole program after {done[-1]} (its dump)"
    else:
        doc = f"pass {pname}" + (f" on {extra['function']}" if "function" in extra else "")
    return _step(name, "pass", inputs, outputs, o, target, doc=doc, extra=module or "")


def _diag(opts: BuildOptions) -> dict:
    return {"phase": opts.diag_phase, "disabled": sorted(opts.disabled)}


def _dump_target(opts, out, n, pname):
    if opts.dump == "none":
        return {}
    key = "dump" if opts.dump == "explicit" else "program"
    fname = "00_frontend.py" if pname is None else f"{n:02d}_after_{pname}.py"
    return {key: str(out / "passes_dump" / fname)}


def _split(store, text: bytes):
    """Per-function inputs of function-local passes: each function in full, with the
    functions it calls as signature stubs (what its calls need), so a function's
    chain is keyed on its own body and its callees' signatures only."""
    from pypto.ir.nodes import Call, Program
    from pypto.ir.printer import print_program
    from pypto.ir.visit import stmt_exprs, walk, walk_expr
    from pypto.stages.text import function_blocks, parse_bytes, remember, single_function
    prog = parse_bytes(text)
    stubs = {f.name: f.signature_only() for f in prog.functions}
    calls = {f.name: {e.callee for s in walk(f.body) for x in stmt_exprs(s)
                      for e in walk_expr(x) if isinstance(e, Call) and e.callee}
             for f in prog.functions}
    called = set().union(*calls.values())
    # a function that calls nothing prints in its part exactly as in the whole program:
    # its part is cut from the text (no dynamic dims to sort out), not printed again
    dyns, blocks = function_blocks(text.decode("utf-8"))
    refs = {}
    for f in prog.functions:
        part = Program(prog.name, [f if g.name == f.name else stubs[g.name] for g in prog.functions
                                   if g.name == f.name or g.name in calls[f.name]], prog.source)
        if not calls[f.name] and not dyns and f.name in blocks:
            data = single_function(prog.name, blocks[f.name])
        else:
            data = print_program(part).encode("utf-8")
        refs[f.name] = Ref.blob(store.put_bytes(data))
        if not calls[f.name] and f.name not in called:
            remember(data, part)       # no other part shares its objects: its chain may take it
    return prog, refs


def pass_phases(opts: BuildOptions) -> list[int]:
    """For each pass of `opts.passes`, the phase of `plan` holding its steps and dump:
    every run of per-function passes starts a new phase (plan lays it out from the
    functions it sees); the whole-program passes after it stay in that phase."""
    phases, k = [], 0
    for i, p in enumerate(opts.passes):
        if p[0] in _LOCAL and (i == 0 or opts.passes[i - 1][0] not in _LOCAL):
            k += 1
        phases.append(k)
    return phases


def phase_count(opts: BuildOptions) -> int:
    """How many phases `plan` yields: the front, one per run of per-function passes,
    and the backend (the last, `phase_count(opts) - 1`)."""
    return (pass_phases(opts)[-1] if opts.passes else 0) + 2


def plan(prog: str, source: Ref, opts: BuildOptions, out: Path, store, from_spec: bool,
         read=None):
    """The graph of one program as a sequence of phases: a generator that yields the
    steps of each phase and is sent back their output digests. A phase ends where
    the next one needs to see a result (which functions exist) to lay itself out.
    `read(digest) -> bytes` reads a result of an earlier phase (the driver's heals a
    damaged one by rebuilding it)."""
    read = read or (lambda d: _read_or_fail(store, d))
    steps: list[Step] = []
    if from_spec:
        steps.append(_step(f"specialize:{prog}", "specialize", {"spec": source}, ["program"], {},
                           doc=f"{prog}: @pl.jit source + argument metadata -> @pl.program source"))
        source = Ref(f"specialize:{prog}", "program")
    explicit = opts.dump == "explicit"
    fopts, fouts = {"explicit": explicit}, ["program", "dump"] if explicit else ["program"]
    if opts.diag_phase in ("pre_pipeline", "post_pass"):
        fopts["diag"] = _diag(opts)
        fouts.append("diagnostics")
    steps.append(_step(f"frontend:{prog}", "frontend", {"program": source}, fouts, fopts,
                       _dump_target(opts, out, 0, None),
                       doc=f"{prog}: parse and print the program before any pass"))
    cur = Ref(f"frontend:{prog}", "program")       # the whole program, as it stands
    frontend = None
    last = None                        # (heads, order, program name) if it ends per function
    passes = list(opts.passes)
    done: list[str] = []
    i = 0
    while i < len(passes):
        if passes[i][0] not in _LOCAL:    # a whole-program pass: chain it in this phase
            pname, module, reads = passes[i]
            name = f"pass:{prog}:{i + 1:02d}_{pname}"
            steps.append(_pass_step(name, {"program": cur}, opts, pname, module, reads, done,
                                    "program", {}, _dump_target(opts, out, i + 1, pname)))
            done.append(pname)
            cur = Ref(name, "program")
            i += 1
            continue
        # per-function passes need to know the functions: run what is pending first
        if steps:
            digests = yield _Phase(steps, (cur.step, f"frontend:{prog}"))
            frontend = frontend or digests[f"frontend:{prog}"]["program"]
            steps = []
        text = read(cur.output if cur.step is None else digests[cur.step][cur.output])
        program, heads = _split(store, text)
        order = [f.name for f in program.functions]
        common = {"program_name": program.name, "source": program.source, "order": order}
        j = i
        while j < len(passes) and passes[j][0] in _LOCAL:
            pname, module, reads = passes[j]
            for f in order:
                step = _pass_step(f"pass:{prog}:{j + 1:02d}_{pname}:{_safe(f)}", {"program": heads[f]},
                                  opts, pname, module, reads, done, "function", {"function": f}, {})
                steps.append(step)
                heads[f] = Ref(step.name, "program")
            done.append(pname)
            if opts.dump != "none":      # the whole program after this pass, for its dump
                steps.append(_pass_step(f"pass:{prog}:{j + 1:02d}_{pname}",
                                        {f"fn:{f}": heads[f] for f in order}, opts, None, None, (),
                                        done, "join", common, _dump_target(opts, out, j + 1, pname)))
            j += 1
        joined = {f"fn:{f}": heads[f] for f in order}
        if j < len(passes):              # the next whole-program pass joins the functions
            pname, module, reads = passes[j]
            name = f"pass:{prog}:{j + 1:02d}_{pname}"
            steps.append(_pass_step(name, joined, opts, pname, module, reads, done, "join", common,
                                    _dump_target(opts, out, j + 1, pname)))
            done.append(pname)
            i = j + 1
        else:                            # the pipeline ends with per-function passes
            name = f"pass:{prog}:{j:02d}_{passes[j - 1][0]}"
            last = (heads, order, program.name, _groups(program))
            i = j
        cur = Ref(name, "program")
    if last is None:                     # it ends with a whole-program pass: split it first
        digests = yield _Phase(steps, (cur.step, f"frontend:{prog}"))
        frontend = frontend or digests[f"frontend:{prog}"]["program"]
        program, heads = _split(store, read(digests[cur.step][cur.output]))
        last, steps = (heads, [f.name for f in program.functions], program.name, _groups(program)), []
    heads, order, pname, groups = last
    lay = [layout_step(prog, f, heads[f], opts, {m: heads[m] for m in groups.get(f, ())}) for f in order]
    digests = yield _Phase(steps + lay, tuple(s.name for s in lay) + (f"frontend:{prog}",))
    frontend = frontend or digests[f"frontend:{prog}"]["program"]
    functions = []
    for s in lay:
        info = json.loads(read(digests[s.name]["layout"]))
        functions.append(dict(info, kernel_text=digests[s.name]["kernel"], sig=digests[s.name]["sig"]))
    back, meta = back_steps(prog, pname, functions, opts, out, store, read)
    yield _Phase(back, None)
    return dict(meta, frontend=frontend)


def _groups(program) -> dict[str, list[str]]:
    """Hand-written Groups and their AIC / AIV members (whose bodies the group's kernel is)."""
    return {f.name: list(f.attrs["members"]) for f in program.functions if f.attrs.get("members")}


def layout_step(prog: str, f: str, head: Ref, opts: BuildOptions, members: dict | None = None) -> Step:
    options: dict = {"function": f}
    outs = ["layout", "kernel", "sig"]
    if opts.diag_phase != "none":
        options.update(diag=_diag(opts), backend_type=opts.backend_type)
        outs += ["perf_hints"] + (["diagnostics"] if opts.diag_phase == "post_pipeline" else [])
    inputs = {"program": head, **{f"member:{m}": r for m, r in (members or {}).items()}}
    return _step(f"layout:{prog}:{_safe(f)}", "layout", inputs, outs, options,
                 doc=f"{prog}: what the backend needs of {f} (kernel text, signature, hints)")


class _Phase(list):
    """The steps of one phase; `exits` names the steps whose results the plan reads
    to lay out the next phase (None: the last phase, nothing is read after it)."""

    def __init__(self, steps, exits):
        super().__init__(steps)
        self.exits = None if exits is None else tuple(e for e in exits if e)


def needed(steps: list[Step], wanted) -> list[Step]:
    """The steps `wanted` (names) depend on, themselves included, in the given order."""
    by_name = {s.name: s for s in steps}
    keep, todo = set(), [w for w in wanted if w in by_name]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        todo.extend(r.step for r in by_name[name].inputs.values()
                    if r.step is not None and r.step in by_name)
    return [s for s in steps if s.name in keep]


def _read_or_fail(store, digest: str) -> bytes:
    data = store.get_bytes(digest)
    if data is None:
        from pypto_pipeline.run import StepFailed
        raise StepFailed(f"object {digest} of an earlier phase is missing or damaged in the "
                         f"store; run the build again to rebuild it")
    return data


def back_steps(prog: str, name: str, functions: list[dict], opts: BuildOptions, out: Path,
               store, read) -> tuple[list[Step], dict]:
    """Per kernel pto -> ptoas -> kernel; the orchestration; config. `functions`: the
    final program's functions in order, as their layout steps describe them (with the
    digests of their kernel text and signature); each kernel's steps read only its
    own text, the orchestration and config only the signatures."""
    from pypto.stages.text import join_functions
    steps: list[Step] = []
    kernels = [f for f in functions if f["kernel"]]
    orch = [f for f in functions if f["orchestration"]]
    kernel_ids = {k["name"]: i for i, k in enumerate(kernels)}
    info = []
    for k in kernels:
        core, kname = k["core"], k["name"]
        kn = _safe(kname)
        if k.get("external"):                 # a hand-written kernel: its C++ is the source
            info.append({"func_id": kernel_ids[kname], "name": kname, "core_type": core,
                         "source": k["external"], "binary": f"kernels/{core}/{kn}.so",
                         "signature": k["signature"]})
            if not opts.skip_ptoas:
                steps.append(extern_step(prog, k, opts, out, store))
            continue
        blob = Ref.blob(k["kernel_text"])
        steps.append(_step(f"pto:{prog}:{kn}", "pto", {"kernel": blob}, ["pto"],
                           {"kernel": kname, "arch": opts.arch, "emit_loc": opts.emit_loc,
                            "memory_planner": opts.memory_planner},
                           {"pto": str(out / "ptoas" / f"{kn}.pto")},
                           doc=f"{prog}: PTO (MLIR) for kernel {kname}"))
        info.append({"func_id": kernel_ids[kname], "name": kname, "core_type": core,
                     "source": f"ptoas/{kn}.cpp", "binary": f"kernels/{core}/{kn}.so",
                     "signature": k["signature"]})
        if opts.skip_ptoas:
            continue
        level = "level2" if opts.memory_planner == "PTOAS" else "level3"
        outs = ["cpp"]
        tg = {"cpp": str(out / "ptoas" / f"{kn}.cpp")}
        if opts.dump_ptoas_passes:
            for d in ptoas_dump_names(level):
                outs.append(f"pass_{d}")
                ext = "cpp" if d.endswith("emit") else "pto"
                tg[f"pass_{d}"] = str(out / "ptoas_passes" / kn / f"{d}.{ext}")
        steps.append(_step(f"ptoas:{prog}:{kn}", "ptoas", {"pto": Ref(f"pto:{prog}:{kn}", "pto")},
                           outs, {"arch": opts.arch, "level": level, "dump": opts.dump_ptoas_passes},
                           tg, doc=f"{prog}: ptoas {kname}.pto -> {kname}.cpp"))
        steps.append(_step(f"kernel:{prog}:{kn}", "kernel", {"cpp": Ref(f"ptoas:{prog}:{kn}", "cpp")},
                           ["so"], {"arch": opts.arch, "core_type": core, "platform": opts.platform},
                           {"so": str(out / "kernels" / core / f"{kn}.so")}, ("so",),
                           doc=f"{prog}: build kernel {kname} ({core})"))
    orch_name = orch[0]["name"] if orch else ""
    if orch and not opts.skip_ptoas:
        # the orchestration sees kernel signatures, not their bodies
        sig_blob = Ref.blob(store.put_bytes(join_functions(
            name, [(f["name"], read(f["sig"])) for f in kernels + orch])))
        on = _safe(orch_name)
        tg = {"cpp": str(out / "orchestration" / f"{on}.cpp"),
              "so": str(out / "orchestration" / f"{on}.so")}
        steps.append(_step(f"orchestration:{prog}:{on}", "orchestration", {"program": sig_blob},
                           ["cpp", "so"], {"name": orch_name, "kernel_ids": sorted(kernel_ids.items())},
                           tg, ("so",), doc=f"{prog}: host orchestration {orch_name}"))
    cfg_inputs = {}
    kernels_opt = None
    if not opts.skip_ptoas and orch:
        kernels_opt = info
        for k in info:
            cfg_inputs[f"so:{k['name']}"] = Ref(f"kernel:{prog}:{_safe(k['name'])}", "so")
    outs = ["meta", "config", "run"] if kernels_opt is not None else ["meta"]
    tg = {"meta": str(out / "compiled_meta.json")}
    if kernels_opt is not None:
        tg["config"] = str(out / "kernel_config.py")
        tg["run"] = str(out / "debug" / "run.py")
    steps.append(_step(f"config:{prog}", "config", cfg_inputs, outs,
                       {"program": name, "orchestration": orch_name,
                        "orch": {k: orch[0][k] for k in ("signature", "params", "num_return_types")}
                        if orch else None,
                        "platform": opts.platform, "backend_type": opts.backend_type,
                        "runtime": opts.runtime, "kernels": kernels_opt},
                       tg, doc=f"{prog}: kernel_config.py, compiled_meta.json, debug/run.py",
                       editable=("run",) if kernels_opt is not None else ()))
    return steps, {"orchestration": orch_name, "kernels": info}


def extern_step(prog: str, k: dict, opts: BuildOptions, out: Path, store) -> Step:
    """The build of a hand-written kernel: its files (read now, so an edit to any of them
    is a new input) and the wrapper that gives it pypto's entry."""
    from pypto.external_kernel import sources
    files = sources(k["external"])
    kn, core = _safe(k["name"]), k["core"]
    inputs = {f"src:{i}": Ref.blob(store.put_bytes(data)) for i, (_, data) in enumerate(files)}
    return _step(f"kernel:{prog}:{kn}", "extern", inputs, ["cpp", "so"],
                 {"name": k["name"], "entry": files[0][0], "files": [rel for rel, _ in files],
                  "tensors": k["tensors"], "scalars": k["scalars"], "arch": opts.arch,
                  "core_type": core, "platform": opts.platform},
                 {"cpp": str(out / "ptoas" / f"{kn}.cpp"), "so": str(out / "kernels" / core / f"{kn}.so")},
                 ("so",), doc=f"{prog}: build the hand-written kernel {k['name']} ({core})")


def jobs_default() -> int:
    env = os.environ.get("PYPTO_JOBS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"PYPTO_JOBS={env!r} is not a number of jobs") from None
    return os.cpu_count() or 1


def _relative(out: Path, target: str) -> str:
    return os.path.relpath(target, out)


def _one_compile(fn):
    """Run a compile with the cyclic garbage collector paused, and forget the
    programs its stages handed on in memory (pypto.stages.text) when it ends. A
    compile allocates hundreds of thousands of small IR objects that reference
    counting frees; the collector's passes over them cost a tenth of an edit
    rebuild. Any cycles left are collected after the compile as usual."""
    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        from pypto.stages.text import forget
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            forget()
            if was:
                gc.enable()
    return scoped


@_one_compile
def build(prog_name: str, source: bytes, opts: BuildOptions, output_dir: Path, *,
          from_spec: bool = False, store=None, jobs: int | None = None,
          progress=None, damaged: bool | None = None) -> Build:
    """Run the whole graph for one program, phase by phase; return what it built.

    Fast path (pipeline/served.py): when the whole compile's key hits, its recorded
    artifacts are materialised without laying out the graph. `damaged` says that a
    caller already tried it (True: it met missing or damaged objects)."""
    if damaged is None:
        served, damaged = serve(source, opts, output_dir, from_spec=from_spec, store=store,
                                progress=progress)
        if served is not None:
            return served
    from pypto_pipeline.together import Item, build_many
    return build_many([Item(prog_name, source, opts, Path(output_dir), from_spec)], store=store,
                      jobs=jobs, progress=progress, damaged=damaged).builds[0]


def _unused_stages(opts: BuildOptions, from_spec: bool) -> tuple[str, ...]:
    """The stages a compile with these options lays out no step of."""
    skip = ("ptoas", "kernel", "extern", "orchestration") if opts.skip_ptoas else ()
    return skip if from_spec else skip + ("specialize",)


def _deferrable(phase: "_Phase") -> list[Step]:
    """The steps of a phase that nothing waits for: no step of the phase reads them
    and the plan does not read them to lay out the next one (the whole-program pass
    dumps). `build` runs them with the last phase, next to the kernels' C++ compiles,
    which mostly wait on the compiler; the steps and their keys stay the same."""
    read = set(phase.exits)
    for s in phase:
        read.update(r.step for r in s.inputs.values() if r.step is not None)
    return [s for s in phase if s.name not in read]


def _begin(store, output_dir, source: bytes):
    """(store, output dir with its report/ folder, start time, the input's digest)."""
    from pypto_cache import open_store
    store = store if store is not None else open_store()
    out = Path(output_dir)
    (out / "report").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    return store, out, t0, store.put_bytes(source)


def _progress_env() -> bool:
    return os.environ.get("PYPTO_PROGRESS", "").strip() not in ("", "0")


class TargetNotFound(ValueError):
    """No task of the program writes the artifact asked for."""


@_one_compile
def build_partial(prog_name: str, source: bytes, opts: BuildOptions, output_dir: Path, *,
                  target: str | None = None, listing: list | None = None,
                  from_spec: bool = False, store=None, jobs: int | None = None,
                  progress=None) -> Build:
    """Build only what `target` (a file path) needs: each phase before the one holding
    its task runs only the steps the next phase is laid out from, and that phase only
    the target's own ancestors; nothing after it. With `listing`, every phase's steps
    are appended to it as (name, stage, target files) and only what laying out the
    next phase needs is built. The whole-compile record is neither read nor written."""
    from pypto_pipeline.run import run_steps
    store, out, t0, src = _begin(store, output_dir, source)
    preload(_unused_stages(opts, from_spec))
    want = os.path.abspath(target) if target else None
    phases = _Phases(run_steps, store, out, jobs, progress, False)
    gen = plan(prog_name, Ref.blob(src), opts, out, store, from_spec, read=phases.read)
    phase, hit = next(gen), None
    try:
        while True:
            if listing is not None:
                listing.extend((s.name, s.stage, list(s.targets.values())) for s in phase)
            if want is not None:
                hit = next((s for s in phase
                            if want in (os.path.abspath(t) for t in s.targets.values())), None)
                if hit is not None:
                    phases.run(needed(phase, [hit.name]))
                    break
            if phase.exits is None:
                break
            phase = gen.send(phases.run(needed(phase, phase.exits)))
    except StopIteration:
        pass
    gen.close()
    if want is not None and hit is None:
        raise TargetNotFound(f"no task of {prog_name} writes {target}; the tasks and their "
                             f"files: pypto build <file> --list")
    records = phases.records()
    write_report(out, records)
    store.sync()
    return Build(out, records, "")


_COMPILERS = ("kernel", "orchestration")


class _Phases:
    """Runs the phases of one compile and reads their results. A result that turns
    out missing or damaged when a later phase reads it is rebuilt by running the
    phase that produced it again in deep mode (every output hashed, exactly the
    damaged ones rebuilt); from then on every phase runs deep."""

    def __init__(self, run_steps, store, out: Path, jobs: int | None, progress, deep: bool):
        self.run_steps, self.store = run_steps, store
        # no doit database on disk: with serve_hits doit only sees what the store lacks
        self.db, self.jobs = None, jobs or jobs_default()
        self.progress, self.deep = progress.record if progress else None, deep
        self.executor = executor()
        self.phases: list[list[Step]] = []
        self.producer: dict[str, int] = {}     # output digest -> index of its phase
        self.made_by: dict[str, str] = {}      # output digest -> the step that made it
        self.last_read: str | None = None      # the step whose result the plan read last
        self.parts: dict[str, dict] = {}       # step -> its key parts (report/explain.json)
        self.edges: list[tuple[str, str]] = []
        self._records: dict[str, object] = {}

    def run(self, steps: list[Step], bad=(), again: int | None = None) -> dict:
        # Python stages hold the GIL: threads only pay off where a step waits on the
        # C++ compiler; elsewhere they would only add hand-offs
        jobs = self.jobs if any(s.stage in _COMPILERS for s in steps) else 1
        ex = self.executor
        if ex is not None and ex.client() is not None and any(ex.wants(s) for s in steps):
            # the stages run out there: enough threads here to keep every worker busy
            jobs = max(self.jobs, min(2 * ex.slots, 256))
        r = self.run_steps(steps, store=self.store, db_path=self.db, jobs=jobs,
                           progress=self.progress, deep=self.deep, bad=bad,
                           serve_hits=True, executor=ex)
        self.deep = self.deep or r.damaged
        for rec in r.records:          # a rebuild supersedes the earlier record
            if rec.status == "ran" or rec.name not in self._records:
                self._records.pop(rec.name, None)
                self._records[rec.name] = rec
        k = again
        if k is None:                  # a new phase (not a rebuild of an earlier one)
            k = len(self.phases)
            self.phases.append(steps)
            self._note(steps, r.digests)   # before its own outputs count as makers
        for name, outs in r.digests.items():
            for d in outs.values():
                self.producer.setdefault(d, k)
                self.made_by.setdefault(d, name)
        return r.digests

    def _note(self, steps: list[Step], digests: dict) -> None:
        """Key parts and edges of a phase's steps. A blob the plan derived from an
        earlier phase's result (a kernel's text, a function's part) hangs off the
        step whose result it was derived from."""
        from pypto_pipeline.explain import key_parts
        for s in steps:
            inputs = {}
            for inp, ref in s.inputs.items():
                if ref.step is not None:
                    inputs[inp] = digests[ref.step][ref.output]
                    self.edges.append((ref.step, s.name))
                else:
                    inputs[inp] = ref.output
                    up = self.made_by.get(ref.output, self.last_read)
                    if up is not None:
                        self.edges.append((up, s.name))
            self.parts[s.name] = key_parts(s, inputs)

    def read(self, digest: str) -> bytes:
        self.last_read = self.made_by.get(digest, self.last_read)
        data = self.store.get_bytes(digest)
        if data is None and digest in self.producer:
            self.deep = True
            k = self.producer[digest]
            self.run(self.phases[k], bad={digest}, again=k)
            data = self.store.get_bytes(digest)
        if data is None:
            from pypto_pipeline.run import StepFailed
            raise StepFailed(f"object {digest} is missing or damaged in the store and no step "
                             f"of this build produces it")
        return data

    def records(self) -> list:
        return list(self._records.values())


def _impl_files(impls) -> dict[str, dict[str, str]]:
    """impl digest -> {source file: digest}, for the impls of this build's steps."""
    from pypto_pipeline.stages import impl_files
    return {impl: impl_files(*_IMPL_OF[impl]) for impl in sorted(impls) if impl in _IMPL_OF}


def diagnostics_reports(read, found) -> dict[str, bytes]:
    """Report files from the steps' diagnostics outputs (only files with content):
    report/perf_hints.log, report/diagnostics.log, passes_dump/NN_after_<Pass>.log."""
    files: dict[str, list[str]] = {}
    for step, output, digest in found:
        text = read(digest).decode("utf-8")
        if not text:
            continue
        if output == "perf_hints":
            rel = "report/perf_hints.log"
        elif step.startswith("pass:"):
            num, _, pname = step.split(":")[2].partition("_")
            rel = f"passes_dump/{num}_after_{pname}.log"
        else:
            rel = "report/diagnostics.log"
        parts = files.setdefault(rel, [])
        if text not in parts:
            parts.append(text)
    return {rel: "".join(parts).encode("utf-8") for rel, parts in files.items()}


