"""The kernel of a hand-written core group (parser/groups.py): one module holding its AIC
member as `<group>_aic` and its AIV member as `<group>_aiv`, each taking the group's
parameters (what the orchestration launches the group with) in place of its own."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.ir.nodes import Assign, Call, Eval, Function, FunctionType, derived_level_role
from pypto.ir.visit import Substitute
from pypto.passes.expand_mixed_kernel import split_vector


def member_kernels(program, g: Function) -> tuple[Function, Function]:
    calls = {}
    for s in g.body:
        c = s.value if isinstance(s, Assign) else s.expr if isinstance(s, Eval) else None
        if isinstance(c, Call) and c.callee:
            calls[c.callee] = c
    out = []
    aic, aiv = g.attrs["members"]
    # both AIVs run the vector member, each the whole of its work: the cube's pipes serve both
    dual = bool(program.get(aiv) is not None and program.get(aiv).attrs.get("dual_aiv_dispatch")
                and not g.attrs.get("split"))
    peers = {aic: g.name + "_aic", aiv: g.name + "_aiv"}        # (import_peer_buffer's peer_func)
    for name, ftype in zip((aic, aiv), (FunctionType.AIC, FunctionType.AIV)):
        m = program.get(name)
        if m is None or name not in calls:
            fail(f"group {g.name!r}: its member {name!r} is not in the program it was compiled with", g.span)
        sub = Substitute({id(p.var): a for p, a in zip(m.params, calls[name].args)})
        attrs = {k: v for k, v in m.attrs.items() if k not in ("group", "dual_aiv_dispatch")}
        attrs["peers"] = peers
        if g.attrs.get("split"):
            attrs["split"] = getattr(g.attrs["split"], "value", g.attrs["split"])
        if dual:
            attrs["aiv_lanes"] = 2
        level, role = derived_level_role(ftype)
        suffix = "_aic" if ftype is FunctionType.AIC else "_aiv"
        fn = Function(g.name + suffix, g.params, m.return_types, sub.body(m.body), ftype, level, role, attrs, m.span)
        if ftype is FunctionType.AIV and attrs.get("split"):
            fn = split_vector(fn)             # written whole: each AIV runs it on its half of every tile
        out.append(fn)
    return out[0], out[1]
