"""MaterializeRuntimeScopes: an orchestration runs its tasks inside runtime scopes
(`PTO2_SCOPE`); ending a scope releases its tasks' buffers for reuse. Unless the
function opts out (`auto_scope=False`, where the user's own `with pl.scope()` blocks
stand), its body and the body of each for loop and each if branch are wrapped in an
AUTO `RuntimeScope` -- all but a trailing return / yield, which stay outside so the
scope closes before the value leaves. Nothing is wrapped inside a MANUAL scope the
user wrote (its tasks keep the dependencies they were given), and a body that already
is one AUTO scope, or has nothing but its return / yield, is left alone.

The function is then marked `auto_scope=False`: its scopes are now explicit, and
running the pass again changes nothing. Kernels never get runtime scopes.
"""
from __future__ import annotations

from pypto.ir.nodes import (While, For, Function, FunctionType, If, Program, Return, RuntimeScope,
                            Yield)

NAME = "MaterializeRuntimeScopes"
READS = ()


def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        if f.func_type is FunctionType.Orchestration and f.attrs.get("auto_scope", True) is not False:
            f = Function(f.name, f.params, f.return_types, _wrap(f.body, f.span), f.func_type,
                         f.level, f.role, {**f.attrs, "auto_scope": False}, f.span)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _wrap(body: list, span) -> list:
    body = [_inner(s) for s in body]
    tail = []
    if body and isinstance(body[-1], (Return, Yield)):
        tail = [body.pop()]
    if not body or (len(body) == 1 and isinstance(body[0], RuntimeScope) and not body[0].manual):
        return body + tail
    return [RuntimeScope(body, False, body[0].span or span)] + tail


def _inner(s):
    """Scope the nested bodies of one statement."""
    if isinstance(s, (For, While)):
        s.body = _wrap(s.body, s.span)
    elif isinstance(s, If):
        s.then_body = _wrap(s.then_body, s.span)
        if s.else_body:
            s.else_body = _wrap(s.else_body, s.span)
    elif isinstance(s, RuntimeScope) and not s.manual:
        s.body = [_inner(x) for x in s.body]
    return s
