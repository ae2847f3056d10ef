"""The build graph as data: steps, where their inputs come from, and their keys.

A `Step` is one doit task described as plain data: a pure stage function, the
digest of the code implementing it, the options it reads and where each input
comes from. Nothing here runs anything (that is `pipeline.run`) and nothing here
knows about the compiler: the stage list lives elsewhere.

A step's key is name-independent on purpose: two programs with an identical
kernel build that kernel once, whatever their steps are called.
"""
from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import xxhash

from .digest import impl_digest  # noqa: F401 - part of this module's API

# Bump when the meaning of a key changes (fields added, encoding changed): every
# old action entry then simply stops matching.
KEY_SCHEMA = "pypto-step-key/1"

STAGES = ("specialize", "frontend", "pass", "layout", "pto", "ptoas", "kernel", "extern",
          "orchestration", "config", "host")

# doit command names: a step (or its dodo basename) must not shadow one.
_DOIT_COMMANDS = frozenset({
    "run", "list", "info", "clean", "forget", "ignore", "help", "dumpdb",
    "strace", "tabcompletion", "reset-dep", "auto"})
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+\-/@]*")
_OUTPUT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_DIGEST_RE = re.compile(r"[0-9a-f]{32}")


class GraphError(ValueError):
    """The steps do not form a valid graph (bad name, dangling input, cycle...)."""


@dataclass(frozen=True)
class Ref:
    """Where a step input comes from.

    `Ref("pass:f:03_X", "program")` is output "program" of that step;
    `Ref(None, digest)` is a blob already in the store.
    """
    step: str | None
    output: str

    @staticmethod
    def blob(digest: str) -> "Ref":
        return Ref(None, digest)


@dataclass
class Step:
    """One doit task, as data. `fn(inputs, options) -> outputs` must be pure and
    module-level; `impl` is the digest of the code implementing it."""
    name: str
    stage: str
    fn: Callable[[dict, dict], dict]
    impl: str
    options: dict
    inputs: dict[str, Ref]
    outputs: tuple[str, ...]
    targets: dict[str, str] = field(default_factory=dict)
    executable: tuple[str, ...] = ()
    editable: tuple[str, ...] = ()      # targets placed as writable copies (debug/run.py)
    doc: str = ""


def canonical_options(options: dict) -> str:
    """The options as canonical JSON (sorted keys, no whitespace); raises GraphError
    for anything that is not plain JSON."""
    try:
        return json.dumps(options, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise GraphError(f"step options must be plain JSON (str, int, float, bool, None, "
                         f"lists and str-keyed dicts of them): {e}") from None


def options_json(step: "Step") -> str:
    """The step's canonical options, computed once per Step object: a build checks
    and keys each step more than once, and a laid-out step is never changed (a
    changed graph is made of new Steps, e.g. resolve_refs' copies)."""
    text = step.__dict__.get("_options_json")
    if text is None:
        text = step._options_json = canonical_options(step.options)
    return text


def fn_id(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _enc(text: str) -> bytes:
    b = text.encode("utf-8")
    return len(b).to_bytes(8, "little") + b


# the encoded fields a step shares with every step of its stage, function and impl
_PREFIX: dict[tuple, bytes] = {}


def step_key(step: Step, input_digests: dict[str, str]) -> str:
    """xxh3-128 over length-prefixed fields: key schema, stage, the stage function's
    qualified name, impl digest, canonical options, output names, and the sorted
    (input name, digest) pairs. The step's name is deliberately not part of it.
    (One buffer hashed at once; the bytes are those `_field` by `_field` would give.)"""
    sig = (step.stage, step.fn, step.impl)
    head = _PREFIX.get(sig)
    if head is None:
        head = _PREFIX[sig] = (_enc(KEY_SCHEMA) + _enc(step.stage) + _enc(fn_id(step.fn))
                               + _enc(step.impl))
    parts = [head, _enc(options_json(step)), _enc(str(len(step.outputs)))]
    parts += [_enc(out) for out in sorted(step.outputs)]
    parts.append(_enc(str(len(input_digests))))
    for name in sorted(input_digests):
        parts.append(_enc(name))
        parts.append(_enc(input_digests[name]))
    return xxhash.xxh3_128_hexdigest(b"".join(parts))


# -- validation ---------------------------------------------------------------

def check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise GraphError(
            f"step name {name!r} is not a legal doit task name: use letters, digits and "
            f"_ . : + - / @, starting with a letter, digit or _ (no spaces, no '=')")
    if name.split(":", 1)[0] in _DOIT_COMMANDS:
        raise GraphError(f"step name {name!r} starts with the doit command "
                         f"{name.split(':', 1)[0]!r}; choose another prefix")


def check_step(step: Step) -> None:
    check_name(step.name)
    if step.stage not in STAGES:
        raise GraphError(f"step {step.name}: unknown stage {step.stage!r}; "
                         f"expected one of {', '.join(STAGES)} (pipeline.graph.STAGES)")
    if not callable(step.fn):
        raise GraphError(f"step {step.name}: fn is not callable")
    if "<locals>" in fn_id(step.fn) or getattr(step.fn, "__name__", "") == "<lambda>":
        raise GraphError(f"step {step.name}: fn {fn_id(step.fn)} must be a module-level "
                         f"function (its qualified name is part of the key)")
    if not isinstance(step.impl, str) or not step.impl:
        raise GraphError(f"step {step.name}: impl must be a non-empty digest string")
    if not isinstance(step.options, dict):
        raise GraphError(f"step {step.name}: options must be a dict")
    options_json(step)
    outs = tuple(step.outputs)
    if len(set(outs)) != len(outs):
        raise GraphError(f"step {step.name}: duplicate output names {outs}")
    for out in outs:
        if not isinstance(out, str) or not _OUTPUT_RE.fullmatch(out):
            raise GraphError(f"step {step.name}: output name {out!r} must match "
                             f"{_OUTPUT_RE.pattern} (names starting with _ are reserved)")
    for inp, ref in step.inputs.items():
        if not isinstance(inp, str) or not inp:
            raise GraphError(f"step {step.name}: input names must be non-empty strings")
        if not isinstance(ref, Ref):
            raise GraphError(f"step {step.name}: input {inp!r} must be a Ref, got {ref!r}")
        if ref.step is None and not _DIGEST_RE.fullmatch(ref.output):
            raise GraphError(f"step {step.name}: input {inp!r} is a literal blob but "
                             f"{ref.output!r} is not an object digest")
    for out, path in step.targets.items():
        if out not in outs:
            raise GraphError(f"step {step.name}: target for unknown output {out!r}")
        if not isinstance(path, str) or not path:
            raise GraphError(f"step {step.name}: target path for {out!r} must be a string")
    for out in step.executable + step.editable:
        if out not in step.targets:
            raise GraphError(f"step {step.name}: output {out!r} is marked executable or editable "
                             f"but has no target")


def check_graph(steps: Iterable[Step], external: Iterable[str] = ()) -> list[Step]:
    """Validate `steps` and return them in a dependency order that keeps the given
    order where it can. `external` names steps outside this list that refs may
    point at (e.g. phase-1 steps already in the same doit run)."""
    steps = list(steps)
    by_name: dict[str, Step] = {}
    for s in steps:
        check_step(s)
        if s.name in by_name:
            raise GraphError(f"two steps are named {s.name!r}")
        by_name[s.name] = s
    external = set(external)
    targets: dict[str, str] = {}
    for s in steps:
        for inp, ref in s.inputs.items():
            if ref.step is None or ref.step in external:
                continue
            up = by_name.get(ref.step)
            if up is None:
                raise GraphError(f"step {s.name}: input {inp!r} refers to unknown step "
                                 f"{ref.step!r}")
            if ref.output not in up.outputs:
                raise GraphError(f"step {s.name}: input {inp!r} refers to output "
                                 f"{ref.output!r} that {up.name} does not declare "
                                 f"(it has {', '.join(up.outputs) or 'none'})")
        for out, path in s.targets.items():
            if path in targets:
                raise GraphError(f"target {path!r} is declared by both {targets[path]} "
                                 f"and {s.name}")
            targets[path] = s.name
    # A basename used for a dodo group must not also be a plain step name.
    bases = {s.name.split(":", 1)[0] for s in steps if ":" in s.name}
    clash = bases & set(by_name)
    if clash:
        raise GraphError(f"step name(s) {sorted(clash)} are also prefixes of other steps "
                         f"(doit would need them as group tasks)")
    return _toposort(steps, by_name)


def _toposort(steps: list[Step], by_name: dict[str, Step]) -> list[Step]:
    """Depth-first post-order (iterative: pass chains can be long)."""
    order: list[Step] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = placed

    def ups(s: Step) -> list[Step]:
        return [by_name[r.step] for r in s.inputs.values()
                if r.step is not None and r.step in by_name]

    for root in steps:
        if state.get(root.name) == 2:
            continue
        stack = [(root, iter(ups(root)))]
        state[root.name] = 1
        while stack:
            s, it = stack[-1]
            for up in it:
                st = state.get(up.name)
                if st == 2:
                    continue
                if st == 1:
                    names = [x.name for x, _ in stack]
                    cycle = names[names.index(up.name):] + [up.name]
                    raise GraphError(f"cycle between steps: {' -> '.join(cycle)}")
                state[up.name] = 1
                stack.append((up, iter(ups(up))))
                break
            else:
                stack.pop()
                state[s.name] = 2
                order.append(s)
    return order
