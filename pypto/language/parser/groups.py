"""Core groups written by hand: a `FunctionType.Group` whose body calls one AIC function
and one AIV function of the program (with the group's own parameters) and returns what
they return. The group is the kernel the orchestration launches -- its AIC member on the
cube, its AIV member on the vector core (on both AIVs when the AIV function says
`attrs={"dual_aiv_dispatch": True}` or the group splits) -- and the members talk through
the pipes they set up (pypto.ir.ops.cross_core). The members are not launched alone: the
group's attrs name them (`members`), theirs name the group (`group`)."""
from __future__ import annotations

import dataclasses

from pypto.errors import NotBuiltError, TypeCheckError
from pypto.ir.nodes import Assign, Call, Eval, FunctionType, Return, Var

_HINT = ("a Group's body is `r = self.cube_fn(a, b, out)`, `self.vector_fn(a, b, out)`, "
         "`return r`: one call of an AIC function and one of an AIV function, each passed the "
         "group's parameters")


def bind_groups(sigs: dict) -> None:
    """Check every hand-written Group and mark it and its members (in place on the sigs)."""
    owner: dict[str, str] = {}
    for sig in list(sigs.values()):
        if sig.func_type is not FunctionType.Group or sig.function is None \
                or "members" in sig.function.attrs:        # (IR text: bound when first parsed)
            continue
        g = sig.function
        if not any(isinstance(c, Call) and c.callee for s in g.body for c in _calls(s)):
            continue                      # a mixed kernel's one body (ExpandMixedKernel's Group)
        members = _members(g, sigs)
        for role, name in members.items():
            if name in owner:
                raise TypeCheckError(f"{name!r} is a member of Groups {owner[name]!r} and {g.name!r}; a "
                                     f"member belongs to one group", g.span,
                                     f"give {g.name!r} a copy of {name!r} under another name")
            owner[name] = g.name
            m = sigs[name]
            m.function = dataclasses.replace(m.function, attrs={**m.function.attrs, "group": g.name})
        sig.function = dataclasses.replace(g, attrs={**g.attrs, "members": [members["aic"], members["aiv"]]})


def _calls(s):
    return [s.value] if isinstance(s, Assign) else [s.expr] if isinstance(s, Eval) else []


def _members(g, sigs) -> dict[str, str]:
    params = {id(p.var) for p in g.params}
    found: dict[str, str] = {}
    for s in g.body:
        if isinstance(s, Return):
            continue
        call = s.value if isinstance(s, Assign) else s.expr if isinstance(s, Eval) else None
        callee = call.callee if isinstance(call, Call) else None
        if callee is None:
            raise TypeCheckError(f"Group {g.name!r} may only call its AIC and AIV functions", s.span, _HINT)
        m = sigs[callee]
        role = {FunctionType.AIC: "aic", FunctionType.AIV: "aiv"}.get(m.func_type)
        if role is None:
            raise TypeCheckError(f"Group {g.name!r} calls {callee!r}, a {m.func_type.value} function; its "
                                 f"members are one AIC and one AIV function", call.span, _HINT)
        if m.function is not None and m.function.attrs.get("external_source") is not None:
            raise NotBuiltError(f"Group {g.name!r} calls {callee!r}, a hand-written C++ kernel; a Group of "
                                f"external_source members is not supported by this pypto yet", call.span,
                                "write the members in the language (their pipes: pl.tpush_to_aic, "
                                "pl.tpop_from_aiv, ...), or launch the C++ kernel on its own")
        if role in found:
            raise TypeCheckError(f"Group {g.name!r} calls two {role.upper()} functions ({found[role]!r} and "
                                 f"{callee!r}); a core group has one cube and one vector member", call.span,
                                 _HINT)
        for a in call.args:
            if not (isinstance(a, Var) and id(a) in params):
                raise TypeCheckError(f"Group {g.name!r} passes {callee!r} a value that is not one of its "
                                     f"parameters; the members see the group's arguments", call.span, _HINT)
        found[role] = callee
    for role in ("aic", "aiv"):
        if role not in found:
            raise TypeCheckError(f"Group {g.name!r} has no {role.upper()} member", g.span, _HINT)
    return found
