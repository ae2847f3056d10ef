"""doit's entry: the build graph of every program under examples/, plus a check task per
example that runs it on the simulator and compares it with torch. It is one user of
pypto_pipeline.project.dodo_globals, as a project's own dodo.py would be.

    doit list                      # build:<example> per example; `doit list --all` for every task
    doit -n 2                      # build and check everything
    doit build_output/quickstart/ptoas/add_incore_0.pto   # one file: only what it needs
"""
import os
from pathlib import Path

os.environ.setdefault("PYPTO_CACHE_DIR", str(Path(__file__).parent / ".pypto_cache"))

from examples import EXAMPLES                       # noqa: E402
from examples.harness import load, source           # noqa: E402
from pypto.ir.compiling import build_options        # noqa: E402
from pypto_pipeline.project import dodo_globals     # noqa: E402

OUT = Path(os.environ.get("PYPTO_EXAMPLES_OUT") or "build_output")
OPTS = build_options(platform="a2a3sim", dump_passes=True)

# The examples are @pl.jit entries with sample argument specs (or @pl.program classes):
# their graph inputs are made here, one per example, named after the example.
_modules = {name: load(name) for name in EXAMPLES}


def _graph_input(name):
    src, from_spec = source(_modules[name])
    return name, src, OPTS, from_spec


globals().update(dodo_globals({name: _graph_input(name) for name in EXAMPLES},
                              output=OUT, default_tasks=["check"]))


def _check(name):
    from examples.harness import run_and_check
    run_and_check(_modules[name], OUT / name)


def task_check():
    """run each compiled example on a2a3sim and compare with torch"""
    for name, mod in _modules.items():
        out = OUT / name
        yield {"name": name, "actions": [(_check, [name])], "task_dep": [f"build:{name}"],
               "file_dep": [mod.__file__, str(out / "compiled_meta.json"), str(out / "kernel_config.py")],
               "verbosity": 2, "doc": f"run {name} on a2a3sim and check it against torch"}
