"""The async-prefetch ops (pl.prefetch): their verifier and their pto_sim calls.

    %ctx  = pto.make_prefetch_async_context(%ws : !pto.ptr<i8>) -> !pto.prefetch_async_context
    %evt  = pto.tprefetch_async(%pview, %ctx : !pto.partition_tensor_view<1xNxT>, CTX) -> !pto.async_event
    %sess = pto.get_prefetch_async_session %ctx : CTX -> !pto.async_session
    %done = pto.comm.wait_async_event(%evt, %sess : !pto.async_event, !pto.async_session) -> i1
"""
from __future__ import annotations

from .ir import Op, PartitionType, PtrType, ScalarType

CONTEXT, EVENT, SESSION = "!pto.prefetch_async_context", "!pto.async_event", "!pto.async_session"
CXX = {CONTEXT: "pto::PrefetchContext", EVENT: "pto::AsyncEvent", SESSION: "pto::AsyncSession"}
# op -> (its operand types, its result type); the pto_sim function is the op's last name part
FORMS = {
    "pto.make_prefetch_async_context": (("!pto.ptr<i8>",), CONTEXT),
    "pto.tprefetch_async": (("!pto.partition_tensor_view<...>", CONTEXT), EVENT),
    "pto.get_prefetch_async_session": ((CONTEXT,), SESSION),
    "pto.comm.wait_async_event": ((EVENT, SESSION), "i1"),
}
PREFETCH_OPS = set(FORMS)


def _is(t, want: str) -> bool:
    if want == "!pto.ptr<i8>":
        return isinstance(t, PtrType) and t.elem == "i8"
    if want.startswith("!pto.partition_tensor_view"):
        return isinstance(t, PartitionType)
    return str(t) == want


def verify(v, op: Op) -> None:
    """Operand and result types; a prefetch reads a flat region ([N] or [1, ..., N])."""
    want, result = FORMS[op.name]
    args = op.group("args") or op.group("source")
    form = f"{op.name}({', '.join(want)}) -> {result}"
    if len(args) != len(want) or not all(_is(a.type, w) for a, w in zip(args, want)):
        got = ", ".join(str(a.type) for a in args)
        raise v.error(op, f"{op.name} takes ({', '.join(want)}), got ({got}): {form}")
    if len(op.results) != 1 or str(op.results[0].type) != result:
        raise v.error(op, f"{op.name} gives one {result}: {form}")
    if op.name == "pto.tprefetch_async":
        p = args[0].type
        if any(d is None for d in p.shape) or any(d != 1 for d in p.shape[:-1]):
            raise v.error(op, f"tprefetch_async pulls a static flat region ([N] or [1, N]), got {p}")


def cxx_type(t) -> str | None:
    return CXX.get(str(t))


def emit(e, op: Op, ind: str) -> None:
    r = op.results[0]
    args = [e.n(a) for a in (op.group("args") or op.group("source"))]
    fn = op.name.rsplit(".", 1)[1]
    site = [] if op.name == "pto.get_prefetch_async_session" else [e.site(op)]
    call = f"pto::{fn}({', '.join(args + site)})"
    ty = "bool" if isinstance(r.type, ScalarType) else CXX[str(r.type)]
    e.emit(ind, f"const {ty} {e.n(r)} = {call};")
