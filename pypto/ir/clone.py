"""A structural copy of a program: fresh statements, expressions and Vars (shared
where the original shares them), frozen types, spans and enums shared.

What a parse of the program's printed text gives, at a fraction of the cost: the
graph's first stage takes a copy of the program the user already holds instead of
parsing its text again, so the passes, which rewrite their input in place, never
touch the user's object (tests/stages/test_text_memo.py compares every artifact
with and without it)."""
from __future__ import annotations

from pypto.ir import nodes

# the mutable node classes; everything else in the IR is immutable and shared
_NODES = frozenset({nodes.Var, nodes.Const, nodes.TupleExpr, nodes.BinOp, nodes.Call,
                    nodes.Assign, nodes.Eval, nodes.Return, nodes.Yield, nodes.IterArg,
                    nodes.For, nodes.While, nodes.If, nodes.InCoreScope, nodes.RuntimeScope, nodes.Param,
                    nodes.Function, nodes.Program})


def clone(node):
    """A copy of `node` (a Program, Function or any IR node) sharing nothing mutable."""
    memo: dict[int, object] = {}

    def go(v):
        cls = type(v)
        if cls in _NODES:
            new = memo.get(id(v))
            if new is None:
                new = memo[id(v)] = cls.__new__(cls)
                new.__dict__ = {k: go(x) for k, x in v.__dict__.items()}
            return new
        if cls is list:
            return [go(x) for x in v]
        if cls is nodes.Functions:
            return nodes.Functions(go(x) for x in v)
        if cls is dict:
            return {k: go(x) for k, x in v.items()}
        if cls is nodes.TileType and v.slot is not None:    # its slot index names Vars
            return nodes.map_slot(v, go)
        if cls is tuple:
            return tuple(go(x) for x in v)
        return v               # str, numbers, enums, frozen types and spans

    return go(node)
