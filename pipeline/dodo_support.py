"""The same steps, for a dodo.py: `doit list`, `doit <target path>`, `doit clean`.

(For pypto programs use `pypto_pipeline.project.dodo_globals`, which builds on this
module; what is here knows nothing about pypto.)

    # dodo.py
    from pypto_pipeline.dodo_support import creators, dodo_config
    DOIT_CONFIG = dodo_config()
    globals().update(creators(first_steps, make_kernel_steps, store, name="build"))

or by hand:

    def task_build():
        yield from task_dicts(first_steps, store, group="build")

    @create_after(executed="build")
    def task_kernels():
        yield from delayed_task_dicts(first_steps, make_kernel_steps, store, group="kernels")

A step named "pass:main:03_SSA" becomes sub-task "main:03_SSA" of basename "pass",
so `doit list` shows one line per stage and `doit list --all` every step. Targets
stay as the steps spell them (relative to the dodo directory): doit selects a
task by the exact target string.

Delayed (phase-2) steps: `doit <their target path>` and `doit <group>` work; a
phase-2 step cannot be selected by its task name, because doit only learns that
name once the creator has run. `doit list` shows phase-2 steps from the last
run's results (none on a fresh checkout).
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

from doit import create_after
from doit.globals import Globals

from .graph import GraphError, Step, check_graph
from .run import BuildContext, to_task_dict


def dodo_config(dep_file: str = ".doit.sqlite", **extra) -> dict:
    """A DOIT_CONFIG for a dodo using these tasks: the sqlite3 backend (the only one
    that survives concurrent processes) and threads for `-n N` (stage actions
    keep their bookkeeping in this process; `-P process` would lose the saved
    keys and make every later run ask the store again)."""
    return {"backend": "sqlite3", "dep_file": dep_file, "par_type": "thread", **extra}


def task_dicts(steps: list[Step], store, *, ctx: BuildContext | None = None,
               group: str | None = None, external: Iterable[str] = (),
               taken: Iterable[str] = ()) -> Iterator[dict]:
    """Task dicts for a dodo `task_*` generator, one per step, in dependency order.

    group: also yield a task of that name depending on every step (a handle for
    `doit <group>` and for `create_after(executed=group)`).
    external: step names outside `steps` that refs may point at (same doit run).
    taken: basenames already used by other generators; steps under those are
    yielded as plain tasks (full name) instead of as sub-tasks of a new group.
    """
    ordered = check_graph(steps, external=external)
    ctx = ctx if ctx is not None else BuildContext(store)
    taken = set(taken)
    names = {s.name for s in ordered}
    if group is not None and (group in names or group in taken
                              or any(s.name.split(":", 1)[0] == group for s in ordered)):
        raise GraphError(f"group name {group!r} clashes with a step name or basename")
    groups: dict[str, list[Step]] = {}
    for s in ordered:
        base, sep, _ = s.name.partition(":")
        if sep and base not in taken:
            groups.setdefault(base, []).append(s)
    for base, members in groups.items():  # the group tasks `doit list` shows
        stages = ", ".join(sorted({s.stage for s in members}))
        yield {"basename": base, "name": None,
               "doc": f"{stages}: {len(members)} step{'s' if len(members) > 1 else ''}"}
    for s in ordered:
        d = to_task_dict(s, store, ctx)
        full = d.pop("name")
        base, sep, sub = full.partition(":")
        if base in groups:
            yield {"basename": base, "name": sub, **d}
        else:
            yield {"basename": full, **d}
    if group is not None:
        yield {"basename": group, "actions": None, "task_dep": [s.name for s in ordered],
               "doc": f"all {len(ordered)} steps: " + ", ".join(sorted(
                   {s.name.split(":", 1)[0] for s in ordered}))}


def known_digests(steps: list[Step], ctx: BuildContext | None = None
                  ) -> dict[str, dict[str, str]] | None:
    """The output digests doit holds for `steps` (from this run, or the last one),
    or None if any is unknown (phase 1 never ran with this db) or its object is not
    whole in the store (another store, cleared, damaged): the next phase is then not
    laid out until the phase before has run again."""
    get = ctx.dep_get if ctx is not None and ctx.dep_get is not None else None
    if get is None:
        dm = Globals.dep_manager
        if dm is None:
            return None
        get = dm._get
    known = {}
    for s in steps:
        values = get(s.name, "_values_:") or {}
        if not all(o in values for o in s.outputs):
            return None
        known[s.name] = {o: values[o] for o in s.outputs}
    store = ctx.store if ctx is not None else None
    if store is not None and not all(store.verify(d) for outs in known.values()
                                     for d in outs.values()):
        return None
    return known


def delayed_task_dicts(first: list[Step], then: Callable[[dict], list[Step]], store, *,
                       group: str, ctx: BuildContext | None = None) -> Iterator[dict]:
    """Task dicts of the steps `then(phase-1 digests)` makes, for a creator decorated
    with `create_after(executed=<phase-1 group>)`. Their refs to phase-1 steps stay
    doit dependencies. Yields nothing while phase 1 has not run (e.g. `doit list`
    on a fresh checkout).

    group: the creator's own task name (`task_kernels` -> "kernels"). doit runs
    what a delayed creator yields only through a task of that name, so one is
    yielded depending on every created step."""
    known = known_digests(first, ctx)
    if known is None:
        return
    second = then(known)
    taken = {s.name.split(":", 1)[0] for s in first}
    yield from task_dicts(second, store, ctx=ctx, external=[s.name for s in first],
                          taken=taken, group=group)


def creators(first: list[Step], then: Callable[[dict], list[Step]] | None, store, *,
             name: str = "build") -> dict[str, Callable]:
    """`task_<name>` (phase 1, with a group task `name`) and, if `then` is given,
    `task_<name>_delayed` created after `name` has run; put them in a dodo's
    globals()."""
    ctx = BuildContext(store)

    def phase1():
        yield from task_dicts(first, store, ctx=ctx, group=name)
    phase1.__doc__ = f"phase 1 of {name}"
    out = {f"task_{name}": phase1}
    if then is not None:
        def phase2():
            yield from delayed_task_dicts(first, then, store, ctx=ctx, group=f"{name}_delayed")
        phase2.__doc__ = f"steps of {name} created from phase-1 results"
        out[f"task_{name}_delayed"] = create_after(executed=name, target_regex=".*")(phase2)
    return out
