"""The async-prefetch family: a kernel warms L2 with a global-memory region while other
work goes on, then waits for it. A cache hint: no tensor value changes.

    ctx = pl.prefetch.make_context()          # bound to the runtime's SDMA workspace
    evt = pl.prefetch.async_prefetch(x, ctx)  # x: a flat [N] or [1, ..., N] GM tensor
    session = pl.prefetch.session(ctx)
    pl.prefetch.wait(evt, session)            # a BOOL done flag

The handles are opaque (HandleType); the ops run on the vector core (the SDMA engine's
scratch lives in its UB)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import HandleType, ScalarType, TensorType
from pypto.ir.ops.base import _err, _tname, reg

CONTEXT, EVENT, SESSION = (HandleType(k) for k in ("PrefetchAsyncContext", "AsyncEvent", "AsyncSession"))
PREFETCH_OPS = ("prefetch.make_context", "prefetch.async_prefetch", "prefetch.session", "prefetch.wait")


def _handle(op, x, want: HandleType, producer: str, span):
    t = getattr(x, "type", None)
    if t != want:
        _err(f"{op} takes a pl.{want.kind} (what {producer} gives), got {_tname(t)}", span,
             f"pass the value {producer} returned")


def _make_context(args, kw, span):
    return CONTEXT


def _async_prefetch(args, kw, span):
    src, ctx = args
    t = getattr(src, "type", None)
    if not isinstance(t, TensorType):
        _err(f"prefetch.async_prefetch reads a global-memory tensor, got {_tname(t)}", span,
             "pass a tensor parameter of the kernel")
    if not all(isinstance(d, int) for d in t.shape):
        _err("prefetch.async_prefetch needs a static shape (the prefetch's byte extent is fixed "
             f"when it is compiled), got {_tname(t)}", span)
    if any(d != 1 for d in t.shape[:-1]):
        _err(f"prefetch.async_prefetch prefetches a flat contiguous region: every dim but the "
             f"last must be 1, got {_tname(t)}", span,
             "reshape the tensor to [N] or [1, N] before prefetching it")
    _handle("prefetch.async_prefetch", ctx, CONTEXT, "pl.prefetch.make_context()", span)
    return EVENT


def _session(args, kw, span):
    _handle("prefetch.session", args[0], CONTEXT, "pl.prefetch.make_context()", span)
    return SESSION


def _wait(args, kw, span):
    _handle("prefetch.wait", args[0], EVENT, "pl.prefetch.async_prefetch(...)", span)
    _handle("prefetch.wait", args[1], SESSION, "pl.prefetch.session(ctx)", span)
    return ScalarType(dt.BOOL)


reg("prefetch.make_context", (0, 0), _make_context, pure=False,
    sig="pl.prefetch.make_context()  (an async-prefetch context on the runtime's SDMA workspace)",
    pto="make_prefetch_async_context")
reg("prefetch.async_prefetch", (2, 2), _async_prefetch, pure=False, params=("src", "ctx"),
    sig="pl.prefetch.async_prefetch(src, ctx)  (start pulling a flat [N] / [1, N] GM tensor into "
        "L2: its event)", pto="tprefetch_async")
reg("prefetch.session", (1, 1), _session, params=("ctx",),
    sig="pl.prefetch.session(ctx)  (the session of a context, for pl.prefetch.wait)",
    pto="get_prefetch_async_session")
reg("prefetch.wait", (2, 2), _wait, pure=False, params=("event", "session"),
    sig="pl.prefetch.wait(event, session)  (block until the prefetch has landed: BOOL done)",
    pto="comm.wait_async_event")
