"""Lay out and run the build graph of one program, into one output directory.

Phase 1 is the front of the flow (specialize, frontend, every pass); its last output
names the kernels, so phase 2 (pto, ptoas, kernel per kernel; orchestration; config)
is laid out from it. Both phases go through the same doit runner and the same store;
`report/tasks.json` records what ran and what came from the cache.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.graph import Ref, Step
from pipeline.run import run_steps
from pipeline.stages import STAGE_FNS, stage_impl


@dataclass(frozen=True)
class BuildOptions:
    """Everything the graph reads, already validated and normalised by ir.compile."""
    platform: str = "a2a3sim"
    backend_type: str = "Ascend910B"
    arch: str = "a2a3"
    dump: str = "concise"              # none | concise | explicit
    skip_ptoas: bool = False
    verify: str = "basic"              # none | basic | roundtrip
    memory_planner: str = "PYPTO"
    emit_loc: bool = True
    dump_ptoas_passes: bool = False
    runtime: str = "tensormap_and_ringbuffer"
    passes: tuple = ()                 # (name, module, reads) of the passes to run


@dataclass
class Build:
    output_dir: Path
    records: list = field(default_factory=list)
    final_program: str = ""
    orchestration: str = ""
    kernels: list = field(default_factory=list)


def _step(name, stage, inputs, outputs, options, targets=None, executable=(), doc="", extra=""):
    return Step(name=name, stage=stage, fn=STAGE_FNS[stage], impl=stage_impl(stage, extra),
                options=options, inputs=inputs, outputs=tuple(outputs), targets=targets or {},
                executable=tuple(executable), doc=doc)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def front_steps(prog: str, source: Ref, opts: BuildOptions, out: Path, from_spec: bool) -> list[Step]:
    """specialize?, frontend, pass 1..N."""
    steps: list[Step] = []
    dump_dir = out / "passes_dump"
    dumping = opts.dump != "none"
    explicit = opts.dump == "explicit"
    if from_spec:
        steps.append(_step(f"specialize:{prog}", "specialize", {"spec": source}, ["program"], {},
                           doc=f"{prog}: @pl.jit source + argument metadata -> @pl.program source"))
        source = Ref(f"specialize:{prog}", "program")
    outputs = ["program", "dump"] if explicit else ["program"]
    dump_out = "dump" if explicit else "program"
    steps.append(_step(f"frontend:{prog}", "frontend", {"program": source}, outputs,
                       {"explicit": explicit},
                       {dump_out: str(dump_dir / "00_frontend.py")} if dumping else {},
                       doc=f"{prog}: parse and print the program before any pass"))
    prev = f"frontend:{prog}"
    done: list[str] = []
    for i, (pname, module, reads) in enumerate(opts.passes, 1):
        o = {"pass": pname, "verify": opts.verify, "done": list(done), "explicit": explicit}
        for r in reads:
            o[r] = getattr(opts, r)
        name = f"pass:{prog}:{i:02d}_{pname}"
        target = {dump_out: str(dump_dir / f"{i:02d}_after_{pname}.py")} if dumping else {}
        steps.append(_step(name, "pass", {"program": Ref(prev, "program")}, outputs, o, target,
                           doc=f"{prog}: pass {i} {pname}", extra=module))
        done.append(pname)
        prev = name
    return steps


def back_steps(prog: str, final, opts: BuildOptions, out: Path, store) -> tuple[list[Step], dict]:
    """Per kernel pto -> ptoas -> kernel; the orchestration; config. `final` is the
    post-pass Program; each kernel's steps read only that kernel's text."""
    from pypto.ir.nodes import FunctionType, Program
    from pypto.ir.printer import print_program
    steps: list[Step] = []
    kernels = [f for f in final.functions if f.is_kernel]
    orch = [f for f in final.functions if f.func_type is FunctionType.Orchestration]
    kernel_ids = {k.name: i for i, k in enumerate(kernels)}
    info = []
    for k in kernels:
        text = print_program(Program(final.name, [k], final.source)).encode("utf-8")
        blob = Ref.blob(store.put_bytes(text))
        core = "aic" if k.func_type is FunctionType.AIC else "aiv"
        kn = _safe(k.name)
        steps.append(_step(f"pto:{prog}:{kn}", "pto", {"kernel": blob}, ["pto"],
                           {"kernel": k.name, "arch": opts.arch, "emit_loc": opts.emit_loc,
                            "memory_planner": opts.memory_planner},
                           {"pto": str(out / "ptoas" / f"{kn}.pto")},
                           doc=f"{prog}: PTO (MLIR) for kernel {k.name}"))
        info.append({"func_id": kernel_ids[k.name], "name": k.name, "core_type": core,
                     "source": f"ptoas/{kn}.cpp", "binary": f"kernels/{core}/{kn}.so"})
        if opts.skip_ptoas:
            continue
        level = "level2" if opts.memory_planner == "PTOAS" else "level3"
        outs = ["cpp", "passes"] if opts.dump_ptoas_passes else ["cpp"]
        tg = {"cpp": str(out / "ptoas" / f"{kn}.cpp")}
        if opts.dump_ptoas_passes:
            tg["passes"] = str(out / "ptoas_passes" / f"{kn}.json")
        steps.append(_step(f"ptoas:{prog}:{kn}", "ptoas", {"pto": Ref(f"pto:{prog}:{kn}", "pto")},
                           outs, {"arch": opts.arch, "level": level, "dump": opts.dump_ptoas_passes},
                           tg, doc=f"{prog}: ptoas {k.name}.pto -> {k.name}.cpp"))
        steps.append(_step(f"kernel:{prog}:{kn}", "kernel", {"cpp": Ref(f"ptoas:{prog}:{kn}", "cpp")},
                           ["so"], {"arch": opts.arch, "core_type": core, "platform": opts.platform},
                           {"so": str(out / "kernels" / core / f"{kn}.so")}, ("so",),
                           doc=f"{prog}: build kernel {k.name} ({core})"))
    # the orchestration sees kernel signatures, not their bodies
    sigs = [_signature_only(k) for k in kernels] + orch
    sig_blob = Ref.blob(store.put_bytes(
        print_program(Program(final.name, sigs, final.source)).encode("utf-8")))
    orch_name = orch[0].name if orch else ""
    if orch and not opts.skip_ptoas:
        on = _safe(orch_name)
        build = True
        tg = {"cpp": str(out / "orchestration" / f"{on}.cpp")}
        outs = ["cpp", "so"] if build else ["cpp"]
        if build:
            tg["so"] = str(out / "orchestration" / f"{on}.so")
        steps.append(_step(f"orchestration:{prog}:{on}", "orchestration", {"program": sig_blob}, outs,
                           {"name": orch_name, "kernel_ids": sorted(kernel_ids.items()), "build": build},
                           tg, ("so",) if build else (),
                           doc=f"{prog}: host orchestration {orch_name}"))
    cfg_inputs = {"program": sig_blob}
    kernels_opt = None
    if not opts.skip_ptoas and orch:
        kernels_opt = info
        for k in info:
            cfg_inputs[f"so:{k['name']}"] = Ref(f"kernel:{prog}:{_safe(k['name'])}", "so")
    outs = ["meta", "config"] if kernels_opt is not None else ["meta"]
    tg = {"meta": str(out / "compiled_meta.json")}
    if kernels_opt is not None:
        tg["config"] = str(out / "kernel_config.py")
    steps.append(_step(f"config:{prog}", "config", cfg_inputs, outs,
                       {"orchestration": orch_name, "platform": opts.platform,
                        "backend_type": opts.backend_type, "runtime": opts.runtime,
                        "kernels": kernels_opt},
                       tg, doc=f"{prog}: kernel_config.py and compiled_meta.json"))
    return steps, {"orchestration": orch_name, "kernels": info}


def _signature_only(f):
    from pypto.ir.nodes import Function
    return Function(f.name, f.params, f.return_types, [], f.func_type, f.level, f.role,
                    dict(f.attrs), f.span)


def jobs_default() -> int:
    env = os.environ.get("PYPTO_JOBS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"PYPTO_JOBS={env!r} is not a number of jobs") from None
    return os.cpu_count() or 1


def build(prog_name: str, source: bytes, opts: BuildOptions, output_dir: Path, *,
          from_spec: bool = False, store=None, jobs: int | None = None) -> Build:
    """Run the whole graph for one program; return what it built."""
    from cache import open_store
    from pypto.language import parse
    store = store if store is not None else open_store()
    jobs = jobs or jobs_default()
    out = Path(output_dir)
    (out / "report").mkdir(parents=True, exist_ok=True)
    db = str(out / "report" / ".doit.db")
    src = Ref.blob(store.put_bytes(source))
    t0 = time.perf_counter()
    steps = front_steps(prog_name, src, opts, out, from_spec)
    r1 = run_steps(steps, store=store, db_path=db, jobs=jobs)
    last = steps[-1].name
    final_text = store.get_bytes(r1.digests[last]["program"]).decode("utf-8")
    final = parse(final_text, filename="<ir>")
    back, meta = back_steps(prog_name, final, opts, out, store)
    r2 = run_steps(back, store=store, db_path=db, jobs=jobs)
    records = list(r1.records) + list(r2.records)
    write_report(out, records, time.perf_counter() - t0)
    return Build(out, records, final_text, meta["orchestration"], meta["kernels"])


def write_report(out: Path, records, total: float) -> None:
    rows = [{"name": r.name, "stage": r.stage, "status": r.status, "seconds": round(r.seconds, 6)}
            for r in records]
    path = out / "report" / "tasks.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rows, indent=1) + "\n")
    os.replace(tmp, path)
