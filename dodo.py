"""doit's entry: the build graph of every program under examples/, plus a run task per
example that executes it on the simulator and checks it against torch.

    doit list                      # stages; `doit list --all` for every task
    doit -n 2                      # build and check everything
    doit build_output/quickstart/ptoas/quickstart_incore_0.pto   # one target, partial pipeline
"""
import os
from pathlib import Path

from pypto_cache import open_store
from examples import EXAMPLES
from examples.harness import load, source
from doit import create_after

from pypto_pipeline import dodo_support  # not `from ... import task_dicts`: doit collects task_* names
from pypto_pipeline.driver import phase_count, plan
from pypto_pipeline.graph import Ref
from pypto_pipeline.stages import preload
from pypto_pipeline.progress import doit_reporter
from pypto_pipeline.run import BuildContext
from pypto.ir.compiling import build_options

os.environ.setdefault("PYPTO_CACHE_DIR", str(Path(__file__).parent / ".pypto_cache"))
# shared by every task, read by the progress reporter; deep: the command line hashes
# every object it would trust (a few ms), so a damaged store is rebuilt, not a failure
CTX = BuildContext(None, deep=True)
STAGES: dict[str, str] = {}
DOIT_CONFIG = dict(dodo_support.dodo_config(), default_tasks=["check"],
                   reporter=doit_reporter(CTX, STAGES))
OUT = Path(os.environ.get("PYPTO_EXAMPLES_OUT") or "build_output")
OPTS = build_options(platform="a2a3sim", dump_passes=True)
STORE = open_store()
CTX.store = STORE
preload()              # stage modules imported here, not first on a worker thread

_modules = {name: load(name) for name in EXAMPLES}
_plans = {}
for _name, _mod in _modules.items():
    _src, _from_spec = source(_mod)
    _plans[_name] = plan(_name, Ref.blob(STORE.put_bytes(_src)), OPTS, OUT / _name, STORE, _from_spec)

# Every example's graph has the same phases; phase k is created after phase k-1 ran
# (its steps depend on what the passes produced: which kernels exist).
N_PHASES = phase_count(OPTS)
_phase_steps: dict[int, list] = {}


def _phase(k):
    if k == 0:
        steps = [s for g in _plans.values() for s in next(g)]
    else:
        prev = _phase_steps.get(k - 1)
        known = dodo_support.known_digests(prev) if prev else None
        if known is None:            # the previous phase has not run yet
            return []
        steps = []
        for g in _plans.values():       # each plan reads its own steps' digests
            steps.extend(g.send(known))
    _phase_steps[k] = steps
    STAGES.update({s.name: s.stage for s in steps})
    return steps


def _creator(k):
    group = "build" if k == 0 else f"build_{k}"

    def create():
        steps = _phase(k)
        taken = {s.name.split(":", 1)[0] for j in range(k) for s in _phase_steps.get(j, [])}
        external = [s.name for j in range(k) for s in _phase_steps.get(j, [])]
        yield from dodo_support.task_dicts(steps, STORE, ctx=CTX, group=group, taken=taken,
                                          external=external)
    create.__doc__ = f"phase {k + 1} of the examples' build graph"
    if k == 0:
        return create
    return create_after(executed="build" if k == 1 else f"build_{k - 1}", target_regex=".*")(create)


for _k in range(N_PHASES):
    globals()["task_build" if _k == 0 else f"task_build_{_k}"] = _creator(_k)
LAST_GROUP = f"build_{N_PHASES - 1}"


def _check(name):
    from examples.harness import run_and_check
    run_and_check(_modules[name], OUT / name)


def task_check():
    """run each compiled example on a2a3sim and compare with torch"""
    for name, mod in _modules.items():
        out = OUT / name
        yield {"name": name, "actions": [(_check, [name])], "task_dep": [LAST_GROUP],
               "file_dep": [mod.__file__, str(out / "compiled_meta.json"), str(out / "kernel_config.py")],
               "verbosity": 2, "doc": f"run {name} on a2a3sim and check it against torch"}
