"""The callable names of the DSL (`pl.add`, `pl.range`, `pl.at`, `pl.tile.load`, ...).

The compiler reads kernel bodies as source and never runs them, so calling one of these
from ordinary Python is a mistake; each raises `DSLCallError` saying so. Every object
carries `_pl_kind` (and ops `_pl_op`), which is how the parser recognises them however
the user spelled the import.
"""
from __future__ import annotations

import builtins
import difflib

from pypto import dtype as dt
from pypto.errors import PyptoError
from pypto.ir import ops
from pypto.ir.nodes import Const
from pypto.language.signatures import signature


class DSLCallError(PyptoError, RuntimeError):
    """A DSL function was called by Python instead of being parsed."""


def _outside(name: str):
    raise DSLCallError(
        f"{name} is a DSL function: it only works inside a @pl.program / @pl.function / "
        f"@pl.jit body, which the compiler parses and never executes",
        hint=f"write {signature(name.split('.')[-1]) or name + '(...)'} inside a decorated kernel")


def _stub(display: str, kind: str, op: tuple[str, str | None] | None = None, doc: str = ""):
    def fn(*args, **kwargs):
        if kind == "range":
            from pypto.language.host_trace import active
            if active() is not None:          # a @pl.jit.host body runs as Python
                return builtins.range(*args)
        _outside(display)
    fn.__name__ = display.split(".")[-1]
    fn.__qualname__ = display
    fn.__doc__ = doc or signature(display.split(".")[-1]) or f"{display}: DSL construct"
    fn._pl_kind = kind
    if op is not None:
        fn._pl_op = op
    return fn


# ------------------------------------------------------------------ parser constructs
range = _stub("pl.range", "range", doc="for i in pl.range(stop | start, stop[, step][, init_values=(...)]):")
parallel = _stub("pl.parallel", "parallel", doc="for i in pl.parallel(...): iterations are independent")
unroll = _stub("pl.unroll", "unroll", doc="for i in pl.unroll(start, stop, step): expanded at compile time")
pipeline = _stub("pl.pipeline", "pipeline",
                 doc="for i in pl.pipeline(start, stop, step, stage=k): a loop the reference's "
                     "scheduler overlaps k stages of; its iterations run in order here")
while_ = _stub("pl.while_", "while_", doc="for (x,) in pl.while_(init_values=(x0,)): pl.cond(x < n) first, "
                                          "x2 = pl.yield_(...) last (the printed form of `while x < n:`)")
cond = _stub("pl.cond", "cond", doc="pl.cond(x < n): the first statement of a pl.while_ loop")
yield_ = _stub("pl.yield_", "yield_", doc="r = pl.yield_(v): last statement of a loop body / if branch")
at = _stub("pl.at", "at", doc="with pl.at(level=pl.Level.CORE_GROUP[, name_hint=...]): runs on the device")
scope = _stub("pl.scope", "scope", doc="with pl.scope([mode=pl.ScopeMode.MANUAL]): a runtime scope")
cluster = _stub("pl.cluster", "cluster",
                doc="with pl.cluster([name_hint=...]): the kernel launched in it runs on the cores of "
                    "one core group (a cluster of several kernels is not built yet)")
manual_scope = _stub("pl.manual_scope", "manual_scope",
                     doc="with pl.manual_scope(): a runtime scope whose tasks wait only for the "
                         "tasks named in deps=[...] and those the compiler derives in one iteration")
spmd = _stub("pl.spmd", "spmd",
             doc="with pl.spmd(n[, sync_start=True, deps=[...]]) [as tid]: the kernels launched in "
                 "it run as n blocks (pl.tile.get_block_idx() tells a block its index); "
                 "for i in pl.spmd(n): a region run as n blocks, i its block index")
split_aiv = _stub("pl.split_aiv", "split_aiv",
                  doc="for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN): in a kernel, a region "
                      "each of the core group's two AIVs runs as its lane (aiv_id: 0 or 1); "
                      "pl.aiv_shard / pl.aic_gather cross into and out of it")
spmd_submit = _stub("pl.spmd_submit", "spmd_submit",
                    doc="outs..., tid = pl.spmd_submit(self.kernel, *args, core_num=n, deps=[...]): "
                        "pl.submit as n blocks")
submit = _stub("pl.submit", "submit",
               doc="outs..., tid = pl.submit(self.kernel, *args, deps=[tid, ...]): launch a kernel "
                   "and keep its task id")
cast = _stub("pl.cast", "cast", ("cast", None), doc="pl.cast(x, dtype)")
min = _stub("pl.min", "min", doc="pl.min(a, b) on scalars")
max = _stub("pl.max", "max", doc="pl.max(a, b) on scalars")


def const(value, dtype: dt.DataType) -> Const:
    """`pl.const(v, pl.INT32)`: a typed constant. Legal anywhere (also in annotations)."""
    if isinstance(value, str):
        value = float(value)
    if dtype.is_float:
        value = float(value)
    elif dtype == dt.BOOL:
        value = bool(value)
    return Const(value, dtype)


const._pl_kind = "const"


# ------------------------------------------------------------------ operators
def _op_names() -> dict[str, object]:
    out = {}
    for name in sorted(ops.dsl_names()):
        if name in ("cast",):
            continue
        out[name] = _stub(f"pl.{name}", "op", (name, None))
    return out


OPERATORS = _op_names()


class OpNamespace:
    """`pl.tile` / `pl.tensor`: the ops of one level, spelled fully qualified."""

    def __init__(self, ns: str):
        self._ns = ns
        self._ops = {}
        if ns == "tile":                 # pl.tile.MaskPattern.P0101 (mask gathers)
            from pypto.ir.nodes import MaskPattern
            self.MaskPattern = MaskPattern
        for full in list(ops.OPS) + list(ops.OP_ALIASES):
            level, name = full.split(".", 1)
            if level == ns:
                self._ops[name] = _stub(f"pl.{ns}.{name}", "op", (name, ns))
        for name in ops.KEYWORD_FORMS:   # a name whose keywords pick the op (pl.tile.mrgsort)
            if any(full.startswith(f"{ns}.{name}") for full in ops.OPS):
                self._ops.setdefault(name, _stub(f"pl.{ns}.{name}", "op", (name, ns)))

    def __getattr__(self, name: str):
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self.__dict__.get("_ops", {})), n=1)
            more = f"; did you mean pl.{self._ns}.{close[0]}?" if close else ""
            raise AttributeError(f"pl.{self._ns}.{name} is not an operator of the language{more}") from None

    def __dir__(self):
        return sorted(self._ops)

    def names(self) -> list[str]:
        return sorted(self._ops)

    def __repr__(self) -> str:
        return f"<pl.{self._ns}: {len(self._ops)} ops>"


tile = OpNamespace("tile")
tensor = OpNamespace("tensor")
array = OpNamespace("array")        # on-core arrays of scalars
system = OpNamespace("system")      # task ids: dummy tasks, explicit dependencies
prefetch = OpNamespace("prefetch")  # async GM -> L2 prefetch in a kernel
comm = OpNamespace("comm")          # cross-rank ops (what pld.* spells: pypto.language.distributed)
