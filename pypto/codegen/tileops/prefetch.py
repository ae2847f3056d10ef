"""Emitters of the async-prefetch family. The context is bound to the SDMA workspace the
runtime hands every kernel that makes one (a hidden `!pto.ptr<i8>` argument); the
prefetch reads the whole source tensor through a partition view."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.tileops import SCALAR_EMITTERS, emits
from pypto.codegen.values import _Scalar, _mlir_name
from pypto.ir.nodes import Const

SDMA_ARG = "__pypto_sdma_workspace"
CONTEXT_TY, EVENT_TY, SESSION_TY = ("!pto.prefetch_async_context", "!pto.async_event",
                                    "!pto.async_session")


def _result(k, v, ty: str) -> _Scalar:
    r = _Scalar("%" + k.names.fresh(_mlir_name(v.name)), ty)
    k.env[id(v)] = r
    return r


@emits("prefetch.make_context")
def make_context(k, v, c, span):
    k.sdma_used = True
    r = _result(k, v, CONTEXT_TY)
    k.emit(f"{r.ssa} = pto.make_prefetch_async_context(%{SDMA_ARG} : !pto.ptr<i8>) -> {CONTEXT_TY}", span)


@emits("prefetch.async_prefetch")
def async_prefetch(k, v, c, span):
    src = k.tensor(c.args[0], span)
    shape = list(src.param.type.shape)
    view, vty = k.partition(src, [Const(0, dt.INDEX, span)] * len(shape), shape, span)
    ctx = k.value_of(c.args[1], span)
    r = _result(k, v, EVENT_TY)
    k.emit(f"{r.ssa} = pto.tprefetch_async({view}, {ctx.ssa} : {vty}, {CONTEXT_TY}) -> {EVENT_TY}", span)


@emits("prefetch.session")
def session(k, v, c, span):
    ctx = k.value_of(c.args[0], span)
    r = _result(k, v, SESSION_TY)
    k.emit(f"{r.ssa} = pto.get_prefetch_async_session {ctx.ssa} : {CONTEXT_TY} -> {SESSION_TY}", span)


def wait(k, c, span) -> _Scalar:
    evt, sess = (k.value_of(a, span) for a in c.args)
    r = _Scalar(k.tmp(), "i1")
    k.emit(f"{r.ssa} = pto.comm.wait_async_event({evt.ssa}, {sess.ssa} : {EVENT_TY}, {SESSION_TY}) -> i1",
           span)
    return r


SCALAR_EMITTERS["prefetch.wait"] = wait
