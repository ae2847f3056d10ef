"""`pypto build` (also `python -m pypto build`): the build graph for a user's own files.

    pypto build kernels/*.py -o build/ -j 2          # every program into build/<Program>/
    pypto build kernels/add.py --target build/Add/ptoas/add_incore_0.pto
    pypto build kernels/add.py --list                # every task, its stage and files
    pypto build kernels/add.py --explain             # why each task that ran ran

Every `@pl.program` class in the named files, and every `@pl.jit` entry whose
parameters are fully annotated (shapes and dtypes), is compiled through the same
graph, keys and store as `ir.compile`. A program that fails prints its error at the
user's line; the others still build, and the exit status is 1.

With $PYPTO_EXECUTOR (a Dask scheduler) and more than one program, each program is
first compiled whole on a worker, all at once; each is then served here from the
remote cache, and its report/tasks.json names the worker that built it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

_OPTIONS = {   # flag -> ir.compile parameter, choices (None: free text)
    "platform": ("platform", ("a2a3sim", "a5sim", "a2a3", "a5")),
    "backend-type": ("backend_type", ("Ascend910B", "Ascend950")),
    "dump-passes": ("dump_passes", ("none", "concise", "explicit")),
    "memory-planner": ("memory_planner", ("PYPTO", "DSA_RP", "PTOAS")),
    "verification-level": ("verification_level", ("none", "basic", "roundtrip")),
    "diagnostic-phase": ("diagnostic_phase", ("none", "pre_pipeline", "post_pass",
                                              "post_pipeline")),
    "runtime": ("runtime", ("tensormap_and_ringbuffer", "host_build_graph")),
}
_SWITCHES = {  # flag -> ir.compile parameter (on when given)
    "skip-ptoas": "skip_ptoas",
    "profiling": "profiling",
    "dump-ptoas-passes": "dump_ptoas_passes",
    "analyze-auto-scopes-for-deps": "analyze_auto_scopes_for_deps",
    "l0c-double-buffer": "enable_pypto_l0c_double_buffer",
}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pypto", description="The pypto compile flow as a "
                                 "build graph, for your own kernel files.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile the programs of some files through the graph",
                       description=__doc__.split("\n\n")[2].replace("\n", " "))
    b.add_argument("files", nargs="+", help="Python files holding @pl.program / @pl.jit")
    b.add_argument("-o", "--output", default="build", help="output root (default: build); "
                   "each program goes to <output>/<Program>/")
    b.add_argument("-j", "--jobs", type=int, default=None,
                   help="tasks at once (default: $PYPTO_JOBS, else the number of CPUs)")
    b.add_argument("--target", help="build only what this artifact needs (a pass dump, a "
                   ".pto, a kernel .so; a path under the output root)")
    b.add_argument("--list", action="store_true", help="list the tasks (stage, name, files); "
                   "runs only what laying out the later phases needs")
    b.add_argument("--explain", action="store_true",
                   help="print, for each task that ran, why (report/explain.json)")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    for flag, (_param, choices) in _OPTIONS.items():
        b.add_argument(f"--{flag}", choices=choices, help=f"as ir.compile's {_param}")
    for flag, param in _SWITCHES.items():
        b.add_argument(f"--{flag}", action="store_true", help=f"ir.compile's {param}=True")
    b.add_argument("--no-emit-source-loc", action="store_true",
                   help="ir.compile's emit_source_loc=False")
    return ap


def compile_options(args) -> dict:
    """The ir.compile keyword arguments the flags ask for."""
    kw = {}
    for flag, (param, _choices) in _OPTIONS.items():
        value = getattr(args, flag.replace("-", "_"))
        if value is not None:
            kw[param] = value.upper() if param == "dump_passes" else value
    for flag, param in _SWITCHES.items():
        if getattr(args, flag.replace("-", "_")):
            kw[param] = True
    if args.no_emit_source_loc:
        kw["emit_source_loc"] = False
    return kw


def load_file(path: Path):
    """Import a user's file as a fresh module; its folder is importable (its helpers)."""
    path = Path(path).resolve()
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"_pypto_build_{path.stem}_{abs(hash(str(path))) % 10 ** 8}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ValueError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def entries(mod) -> tuple[list, list[str]]:
    """(programs and @pl.jit entries of a module in definition order, notes on the
    @pl.jit entries skipped because a parameter is not fully annotated)."""
    from pypto.ir.nodes import Program
    from pypto.jit.decorator import JITFunction
    found, seen, notes = [], set(), []
    for value in vars(mod).values():
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, Program):
            found.append(value)
        elif isinstance(value, JITFunction) and value.kind == "orchestration" \
                and value.__module__ == mod.__name__:
            try:
                value.spec()
            except Exception as e:     # a parameter needs an argument to be specialised
                first = str(e).splitlines()[0]
                notes.append(f"skipped @pl.jit {value.__name__}: not fully annotated ({first})")
                continue
            found.append(value)
    return found, notes


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from pypto.errors import PyptoError
    from pypto.ir.compiling import graph_input
    from pypto_pipeline.driver import TargetNotFound, build, build_partial, jobs_default
    from pypto_pipeline.explain import format_explain, load_explain
    from pypto_pipeline.progress import Progress
    out_root = Path(args.output)
    jobs = args.jobs or jobs_default()
    kw = compile_options(args)
    failed = built = 0
    target = os.path.abspath(args.target) if args.target else None
    loaded = []                       # (file, its programs) of the files that loaded
    for file in args.files:
        try:
            mod = load_file(Path(file))
            progs, notes = entries(mod)
        except PyptoError as e:      # raised while the file defined its programs
            print(str(e) if e.span else f"{file}: {e}", file=sys.stderr)
            failed += 1
            continue
        except (OSError, ImportError, SyntaxError, ValueError) as e:
            print(f"{file}: cannot load: {type(e).__name__}: {e}", file=sys.stderr)
            failed += 1
            continue
        for note in notes:
            print(f"{file}: {note}", file=sys.stderr)
        if not progs:
            print(f"{file}: no @pl.program class or fully annotated @pl.jit entry",
                  file=sys.stderr)
        loaded.append((file, progs))
    inputs: dict[int, tuple] = {}    # id(entry) -> its graph input, or the error it raised
    for _file, progs in loaded:
        for entry in progs:
            try:
                inputs[id(entry)] = graph_input(entry, **kw)
            except (PyptoError, ValueError, TypeError) as e:
                inputs[id(entry)] = e
    out_there = {}                   # id(entry) -> what a Dask worker built of it
    if not args.list and target is None and os.environ.get("PYPTO_EXECUTOR", "").strip():
        from pypto_pipeline.driver import compile_out_there
        from pypto_pipeline.run import WorkerMismatch
        ids = [i for i, v in inputs.items() if isinstance(v, tuple)]
        try:
            out_there = dict(zip(ids, compile_out_there([inputs[i] for i in ids])))
        except WorkerMismatch as e:      # a worker with another pypto: nothing is built
            print(f"pypto build: {e}", file=sys.stderr)
            return 1
    for _file, progs in loaded:
        for entry in progs:
            try:
                got = inputs[id(entry)]
                if isinstance(got, Exception):
                    raise got
                name, source, opts, from_spec = got
                out = out_root / getattr(entry, "__name__", name)   # a jit entry: its own name
                if target is not None and not target.startswith(str(out.resolve()) + os.sep):
                    continue
                progress = None if args.quiet or args.list else Progress(sys.stdout)
                if args.list or target is not None:
                    listing = [] if args.list else None
                    result = build_partial(name, source, opts, out, from_spec=from_spec,
                                           jobs=jobs, target=target, listing=listing,
                                           progress=progress)
                    for task, stage, files in listing or ():
                        rel = ", ".join(os.path.relpath(f) for f in files)
                        print(f"{stage:13s} {task}" + (f"  -> {rel}" if rel else ""))
                else:
                    remote = out_there.get(id(entry))
                    result = build(name, source, opts, out, from_spec=from_spec, jobs=jobs,
                                   progress=None if remote else progress)
                    if remote and all(r.status == "cached" for r in result.records):
                        # built whole by a worker, served from Redis here
                        _report_out_there(out, remote, progress)
                if progress is not None:
                    progress.summary()
                if args.explain and not args.list:
                    sys.stdout.write(format_explain(load_explain(result.output_dir)))
                built += 1
            except PyptoError as e:
                print(str(e), file=sys.stderr)
                failed += 1
            except TargetNotFound as e:
                print(f"pypto build: {e}", file=sys.stderr)
                return 2
            except (ValueError, TypeError) as e:     # options ir.compile would refuse too
                print(f"pypto build: {getattr(entry, '__name__', '')}: {e}", file=sys.stderr)
                failed += 1
    if target is not None and built == 0 and failed == 0:
        print(f"pypto build: no program of {', '.join(args.files)} writes {args.target} "
              f"(programs go to {out_root}/<Program>/; --list shows every task's files)",
              file=sys.stderr)
        return 2
    return 1 if failed else 0


def _report_out_there(out: Path, remote: dict, progress) -> None:
    """report/tasks.json of a program a Dask worker compiled whole: its tasks as the
    worker ran them, each one that ran there named by the worker's address."""
    from pypto_pipeline.outputs import write_report
    from pypto_pipeline.run import TaskRecord
    where = remote["worker"]
    records = [TaskRecord(n, st, status, sec, worker=where if status == "ran" else "local")
               for n, st, status, sec in remote["records"]]
    write_report(out, records)
    if progress is not None:
        for r in records:
            progress.record(r)


if __name__ == "__main__":
    sys.exit(main())
