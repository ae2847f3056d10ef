"""`continue` in a loop body, as structured control flow: the statements after an `if`
that may continue move into the branches that fall through, so `if c: continue` followed
by the rest of the body becomes `if c: pass else: rest`. A rewrite of the Python syntax
tree before the loop is parsed, so every later step sees plain ifs (and their yields)."""
from __future__ import annotations

import ast
import copy

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def has_continue(stmts: list[ast.stmt]) -> bool:
    """A `continue` of the enclosing loop somewhere in `stmts` (not of a nested loop)."""
    for s in stmts:
        if isinstance(s, ast.Continue):
            return True
        if isinstance(s, _LOOPS) or isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            if has_continue(getattr(s, field, None) or []):
                return True
        for h in getattr(s, "handlers", None) or []:
            if has_continue(h.body):
                return True
    return False


def lower(stmts: list[ast.stmt], after: list[ast.stmt]) -> list[ast.stmt]:
    """`stmts` then `after` (what runs next when `stmts` falls through), with every
    `continue` of `stmts` turned into skipping the rest."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Continue):
            return out                               # the rest of the body is skipped
        if isinstance(s, ast.If) and has_continue(s.body + s.orelse):
            rest = list(stmts[k + 1:]) + after
            new = copy.copy(s)
            # the rest is copied into each branch that falls through to it
            new.body = lower(s.body, copy.deepcopy(rest)) or [_pass(s)]
            new.orelse = lower(s.orelse, rest)
            return out + [new]
        out.append(s)
    return out + after


def without_continue(loop_body: list[ast.stmt]) -> list[ast.stmt]:
    if not has_continue(loop_body):
        return loop_body
    return lower(loop_body, []) or [_pass(loop_body[0])]


def _pass(at: ast.AST) -> ast.Pass:
    return ast.copy_location(ast.Pass(), at)
