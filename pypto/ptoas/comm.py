"""The cross-rank ops (pld.*): their verifier and their pto_sim calls (pto_sim_comm.hpp).

    %r = pto.comm_rank -> i32          %n = pto.comm_nranks -> i32
    pto.comm_notify ins(%cell, %peer, %value : P<1x1xi32>, i32, i32) {op = 0 | 1}
    pto.comm_wait ins(%cell, %expected : P<1x1xi32>, i32) {cmp = 0 | 1}
    pto.comm_tload ins(%region, %peer : P, i32) outs(%tile : T)
    pto.comm_tstore ins(%tile, %peer : T, i32) outs(%region : P) [{atomicType = #pto<atomic_type atomic_add>}]
    pto.comm_barrier ins(%signal : P<...xi32>)

A kernel that uses them exports pypto_set_comm, through which the runtime gives it the
rank's comm context (its rank, the rank count and where the windows are mapped)."""
from __future__ import annotations

from .ir import Module, Op, PartitionType, ScalarType, TileType, walk

COMM_OPS = {"pto.comm_rank", "pto.comm_nranks", "pto.comm_notify", "pto.comm_wait", "pto.comm_tload",
            "pto.comm_tstore", "pto.comm_barrier"}
ATOMIC_ADD = "#pto<atomic_type atomic_add>"


def _types(op: Op, group: str) -> list:
    return [v.type for v in op.group(group)]


def _want(v, op: Op, ok: bool, form: str) -> None:
    if not ok:
        got = ", ".join(f"{g}({', '.join(map(str, _types(op, g)))})" for g in ("ins", "outs") if op.group(g))
        raise v.error(op, f"{op.name} is `{form}`, got {got or 'no operands'}")


def _i32(t) -> bool:
    return isinstance(t, ScalarType) and t.name == "i32"


def verify(v, op: Op) -> None:
    n = op.name
    ins, outs = _types(op, "ins"), _types(op, "outs")
    if n in ("pto.comm_rank", "pto.comm_nranks"):
        _want(v, op, not ins and len(op.results) == 1 and _i32(op.results[0].type), f"%r = {n} -> i32")
        return
    if n in ("pto.comm_notify", "pto.comm_wait"):
        arity, key = (3, "op") if n == "pto.comm_notify" else (2, "cmp")
        _want(v, op, len(ins) == arity and isinstance(ins[0], PartitionType) and ins[0].elem == "i32"
              and all(d == 1 for d in ins[0].shape) and all(_i32(t) for t in ins[1:]),
              f"{n} ins(%cell, ... : !pto.partition_tensor_view<1x1xi32>, i32{', i32' if arity == 3 else ''})")
        if op.attrs.get(key) not in ("0", "1"):
            raise v.error(op, f"{n} needs {{{key} = 0 | 1}}, got {op.attrs.get(key)!r}")
        return
    if n == "pto.comm_tload":
        _want(v, op, len(ins) == 2 and isinstance(ins[0], PartitionType) and _i32(ins[1]) and len(outs) == 1
              and isinstance(outs[0], TileType) and outs[0].loc == "vec" and outs[0].dtype == ins[0].elem,
              f"{n} ins(%region, %peer : P, i32) outs(%tile : vec tile of P's dtype)")
        return
    if n == "pto.comm_tstore":
        _want(v, op, len(ins) == 2 and isinstance(ins[0], TileType) and ins[0].loc == "vec" and _i32(ins[1])
              and len(outs) == 1 and isinstance(outs[0], PartitionType) and outs[0].elem == ins[0].dtype,
              f"{n} ins(%tile, %peer : vec tile, i32) outs(%region : P of the tile's dtype)")
        if op.attrs.get("atomicType") not in (None, ATOMIC_ADD):
            raise v.error(op, f"{n}: atomicType is {ATOMIC_ADD} or absent")
        return
    if n == "pto.comm_barrier":
        _want(v, op, len(ins) == 1 and isinstance(ins[0], PartitionType) and ins[0].elem == "i32",
              f"{n} ins(%signal : !pto.partition_tensor_view<...xi32>)")
        return
    raise v.error(op, f"unknown cross-rank op {n}")


def emit(e, op: Op, ind: str) -> None:
    n = op.name
    s = e.site(op)
    ins = [e.n(x) for x in op.group("ins")]
    if n in ("pto.comm_rank", "pto.comm_nranks"):
        e.emit(ind, f"const int32_t {e.n(op.results[0])} = pto::{n[4:]}({s});")
    elif n == "pto.comm_notify":
        e.emit(ind, f"pto::comm_notify({', '.join(ins)}, {int(op.attrs['op'])}, {s});")
    elif n == "pto.comm_wait":
        e.emit(ind, f"pto::comm_wait({', '.join(ins)}, {int(op.attrs['cmp'])}, {s});")
    elif n == "pto.comm_tload":
        e.emit(ind, f"pto::comm_tload({e.n(op.group('outs')[0])}, {ins[0]}, {ins[1]}, {s});")
    elif n == "pto.comm_tstore":
        fn = "comm_tstore_add" if op.attrs.get("atomicType") == ATOMIC_ADD else "comm_tstore"
        e.emit(ind, f"pto::{fn}({e.n(op.group('outs')[0])}, {ins[0]}, {ins[1]}, {s});")
    elif n == "pto.comm_barrier":
        e.emit(ind, f"pto::comm_barrier({ins[0]}, {s});")


def uses_comm(module: Module) -> bool:
    return any(op.name in COMM_OPS for f in module.funcs for op in walk(f.body))


SET_COMM = [
    "// the runtime gives this rank's comm context (pypto.runtime.comm)",
    'extern "C" void pypto_set_comm(int32_t rank, int32_t nranks, int64_t base, int64_t window_bytes, '
    "double wait_s) {",
    "    pto::CommContext& c = pto::comm_context();",
    "    c.rank = rank; c.nranks = nranks; c.base = reinterpret_cast<char*>(base);",
    "    c.window_bytes = window_bytes; c.wait_s = wait_s;",
    "}",
]
