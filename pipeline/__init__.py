"""The build graph: compile stages as content-hashed doit tasks.

`graph` describes steps as data and keys them; `run` executes them in-process
through doit against a `cache.Store`; `dodo_support` yields the same task dicts
for a dodo.py. The stage list that uses the compiler lives in `stages` and is
not imported here (the engine knows nothing about pypto).
"""
import importlib

_GRAPH = {"STAGES", "GraphError", "Ref", "Step", "impl_digest", "step_key"}
_RUN = {"InputUnavailable", "RunResult", "StepFailed", "TaskRecord", "WorkerMismatch",
        "run_phased", "run_steps", "to_task_dict"}


def __getattr__(name):
    # imported on first use: `run` imports doit (~0.1 s), and a compile served whole
    # from the store (pipeline/served.py) needs neither it nor the graph
    if name in _GRAPH or name in _RUN:
        module = importlib.import_module(f".{'graph' if name in _GRAPH else 'run'}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")

__all__ = ["STAGES", "GraphError", "Ref", "Step", "impl_digest", "step_key",
           "InputUnavailable", "RunResult", "StepFailed", "TaskRecord", "WorkerMismatch", "run_phased",
           "run_steps", "to_task_dict"]
