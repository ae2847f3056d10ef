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
            rest = lower(list(stmts[k + 1:]), after)     # (its own continues lowered too)
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


def first_break(stmts: list[ast.stmt]) -> ast.Break | None:
    """The first `break` of the enclosing loop in `stmts` (not of a nested loop)."""
    for s in stmts:
        if isinstance(s, ast.Break):
            return s
        if isinstance(s, _LOOPS) or isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            found = first_break(getattr(s, field, None) or [])
            if found is not None:
                return found
    return None


def has_break(stmts: list[ast.stmt]) -> bool:
    return first_break(stmts) is not None


def _breaks_to_flag(stmts: list[ast.stmt], flag: str) -> list[ast.stmt]:
    out = []
    for s in stmts:
        if isinstance(s, ast.Break):
            set_flag = ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(1))
            out += [ast.copy_location(set_flag, s), ast.copy_location(ast.Continue(), s)]
            continue
        if not isinstance(s, _LOOPS) and isinstance(s, ast.If):
            s = copy.copy(s)
            s.body = _breaks_to_flag(s.body, flag)
            s.orelse = _breaks_to_flag(s.orelse, flag)
        out.append(s)
    return out


def without_break(loop: ast.For) -> tuple[ast.stmt, ast.For]:
    """`break` as structured control flow: a flag set where the loop breaks, the body
    run only while it is clear (the remaining iterations do nothing). Returns the flag's
    initialisation (before the loop) and the loop."""
    flag = f"_break_{loop.lineno}_{loop.col_offset}"
    body = _breaks_to_flag(loop.body, flag)
    test = ast.Compare(left=ast.Name(flag, ast.Load()), ops=[ast.Eq()], comparators=[ast.Constant(0)])
    guarded = ast.copy_location(ast.If(test=test, body=body, orelse=[]), loop.body[0])
    new = copy.copy(loop)
    new.body = [guarded]
    init = ast.copy_location(ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(0)), loop)
    ast.fix_missing_locations(init)
    ast.fix_missing_locations(new)
    return init, new
