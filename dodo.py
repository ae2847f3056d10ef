"""doit's entry: the build graph of every program under examples/, plus a run task per
example that executes it on the simulator and checks it against torch.

    doit list                      # stages; `doit list --all` for every task
    doit -n 2                      # build and check everything
    doit build_output/quickstart/ptoas/quickstart_incore_0.pto   # one target, partial pipeline
"""
import os
from pathlib import Path

from cache import open_store
from examples import EXAMPLES
from examples.harness import load, source
from pipeline.dodo_support import creators, dodo_config
from pipeline.driver import back_steps, front_steps
from pipeline.graph import Ref
from pypto.ir.compiling import build_options

os.environ.setdefault("PYPTO_CACHE_DIR", str(Path(__file__).parent / ".pypto_cache"))
DOIT_CONFIG = dict(dodo_config(), default_tasks=["check"])
OUT = Path(os.environ.get("PYPTO_EXAMPLES_OUT") or "build_output")
OPTS = build_options(platform="a2a3sim", dump_passes=True)
STORE = open_store()

_modules = {name: load(name) for name in EXAMPLES}
_first, _last = [], {}
for _name, _mod in _modules.items():
    _src, _from_spec = source(_mod)
    _steps = front_steps(_name, Ref.blob(STORE.put_bytes(_src)), OPTS, OUT / _name, _from_spec)
    _first.extend(_steps)
    _last[_name] = _steps[-1].name


def _kernel_steps(digests):
    from pypto.language import parse
    steps = []
    for name, last in _last.items():
        final = parse(STORE.get_bytes(digests[last]["program"]).decode("utf-8"), filename="<ir>")
        steps.extend(back_steps(name, final, OPTS, OUT / name, STORE)[0])
    return steps


globals().update(creators(_first, _kernel_steps, STORE, name="build"))


def _check(name):
    from examples.harness import run_and_check
    run_and_check(_modules[name], OUT / name)


def task_check():
    """run each compiled example on a2a3sim and compare with torch"""
    for name, mod in _modules.items():
        out = OUT / name
        yield {"name": name, "actions": [(_check, [name])], "task_dep": ["build_delayed"],
               "file_dep": [mod.__file__, str(out / "compiled_meta.json"), str(out / "kernel_config.py")],
               "verbosity": 2, "doc": f"run {name} on a2a3sim and check it against torch"}
