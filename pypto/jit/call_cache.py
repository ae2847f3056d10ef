"""The fast path of calling a `@pl.jit` function.

Building a call's specialization spec walks the sources of the function and its deps,
binds the signature and hashes the spec's JSON: most of a small kernel's call. A call
whose arguments look like an earlier call's (same types, shapes and dtypes, the same
scalar values and config) while every global the functions read is still the object
it was then, gets that call's CompiledProgram back without building the spec again.
"""
from __future__ import annotations

import numbers
import sys

MAX_ENTRIES = 256


def arg_key(args: tuple, config) -> tuple | None:
    """What decides the spec of a call with these positional arguments, as a hashable
    tuple; None when an argument is of a kind the fast path does not know."""
    torch = sys.modules.get("torch")         # (a torch tensor's Size is already a hashable tuple)
    tensor = torch.Tensor if torch is not None else None
    key = []
    for a in args:
        t = type(a)
        if t is tensor:
            key.append((t, a.dtype, a.shape))
        elif t is bool or t is int or t is float:
            key.append((t, a))
        elif isinstance(a, numbers.Number):
            return None
        else:
            shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
            if shape is None or dtype is None:
                return None
            key.append((t, dtype, tuple(shape)))
    if config is not None:
        key.append(tuple(vars(config).items()))
    try:
        hash(key[-1] if key else None)
        return tuple(key)
    except TypeError:                      # an unhashable config field
        return None


def snapshot(functions) -> tuple:
    """(function, name, object, value) for every global name each function reads."""
    out = []
    for jf in functions:
        src = jf._source()
        for name in sorted((set(src["loaded"]) | set(src["called"])) - src["locals"]):
            obj = jf._resolve(name)
            out.append((jf, name, obj, list(obj) if type(obj) is list else None))
    return tuple(out)


def unchanged(snap: tuple) -> bool:
    for jf, name, obj, value in snap:
        now = jf._resolve(name)
        if now is not obj or (value is not None and now != value):
            return False
    return True
