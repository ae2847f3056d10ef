"""GM hand-offs between a Group's halves (part of ExpandMixedKernel).

A store of one core's tile into a tensor that a later load brings into the other core's
tile is a dependency the pipe does not carry: the halves run at once, so the load could
read the tensor before the store lands (PyPTO issue #1564: a cube matmul stored to a
scratch tensor, then scattered row by row by the vector core). After such a store the
stored tile also crosses to the reading core (a `tile.move`, which the halves make a
push after the store and a pop before the reads): the pop waits for the push, so the
reads come after the store. The data still flows through the tensor; the moved tile is
a token nobody reads.

Only a load in the store's own body (or nested in a statement of it) that comes after
the store is fenced: one push meets one pop on every path."""
from __future__ import annotations

from pypto.ir.nodes import (VECTOR, Assign, Call, Eval, For, If, MemorySpace, TensorType, TileType,
                            Var, While, side_of_space)
from pypto.ir.visit import walk

_VIEWS = ("tensor.slice", "tensor.view", "tensor.reshape")


def fence(body: list) -> list:
    """`body` with a crossing tile.move after every store whose tensor the other core
    loads later in the same body."""
    out = []
    for i, s in enumerate(body):
        if isinstance(s, (For, While)):
            s.body = fence(s.body)
        elif isinstance(s, If):
            s.then_body = fence(s.then_body)
            if s.else_body:
                s.else_body = fence(s.else_body)
        out.append(s)
        token = _handoff(s, body[i + 1:])
        if token is not None:
            out.append(token)
    return out


def _handoff(s, rest: list):
    c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
    if not (isinstance(c, Call) and c.op == "tile.store" and len(c.args) > 2):
        return None
    tile, target = c.args[0], c.args[2]
    tt = getattr(tile, "type", None)
    if not isinstance(tt, TileType) or not isinstance(getattr(target, "type", None), TensorType):
        return None
    writer = side_of_space(tt.memory_space)
    tensors = {id(target)} | ({id(s.var)} if isinstance(s, Assign) else set())
    for later in rest:
        for x in walk([later]):
            if not (isinstance(x, Assign) and isinstance(x.value, Call)):
                continue
            v = x.value
            if v.op in _VIEWS and v.args and id(v.args[0]) in tensors:
                tensors.add(id(x.var))          # a view of the tensor reads it too
            elif v.op == "tile.load" and v.args and id(v.args[0]) in tensors:
                reader = side_of_space(getattr(x.var.type, "memory_space", None))
                if reader is not None and writer is not None and reader != writer:
                    space = MemorySpace.Vec if reader == VECTOR else MemorySpace.Mat
                    token = Var(f"{tile.name}_fence", TileType(tt.shape, tt.dtype, space, None, tt.valid),
                                s.span)
                    return Assign(token, Call("tile.move", [tile], {"target_memory": space},
                                              token.type, {}, s.span), s.span)
    return None
