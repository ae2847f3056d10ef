"""The parser's task-graph constructs: deps=[...] and `as tid` (pl.system.after before a
launch, pl.system.task_id after it), pl.submit / pl.spmd_submit, `with pl.spmd(...)` and
`for i in pl.spmd(...)` (pl.system.blocks before each launch), predicate=. A mixin of the
Parser (pypto.language.parser.ast_parser)."""
from __future__ import annotations

import ast
import copy

from pypto.ir.visit import bodies as bodies_of, stmt_exprs, walk as walk_stmts, walk_expr
from pypto.language.parser.common import (Assign, Call, Eval, FunctionType, InCoreScope,
                                          PyptoError, ScalarType, TupleExpr, TupleType, _kind, dt, ops)


class TasksMixin:
    def is_submit(self, node) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return False
        try:
            return _kind(self.static(node.func, "a function")) in ("submit", "spmd_submit")
        except PyptoError:
            return False

    def is_spmd_loop(self, s: ast.For) -> bool:
        """A loop that is a region (pl.spmd, pl.split_aiv): it gives statements, not a loop."""
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)):
            return False
        try:
            return _kind(self.static(it.func, "the loop iterable")) in ("spmd", "split_aiv")
        except PyptoError:
            return False

    # ------------------------------------------------------------------ task ids
    def task_deps(self, node, span):
        """`deps=[...]` of pl.at / pl.submit: pl.system.after(deps), the statement before
        the launch that makes it wait for those tasks."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            self.error(f"deps= takes a list, got `{ast.unparse(node)}`", node, "deps=[tid, tids]")
        if self.ctx.sig.func_type not in (FunctionType.Orchestration, FunctionType.Opaque) \
                or self.ctx.incore:
            self.error("deps= names tasks of an orchestration; it has no meaning inside a kernel", node,
                       "give deps= on the pl.at / pl.submit in the orchestration body")
        items = [self.expr(e) for e in node.elts]
        return Eval(self.op_call_values("after", "system", [TupleExpr(items, span)], {}, node,
                                        "deps="), span)

    def task_id(self, target, span) -> list:
        """`as tid` / the last name of `..., tid = pl.submit(...)`: the launch's task id."""
        if target is None:
            return []
        val = self.op_call_values("task_id", "system", [], {}, target, "the task id")
        if target.id == "_":
            return []
        return [Assign(self.bind_value(target.id, val, target, span), val, span)]

    # ------------------------------------------------------------------ SPMD
    def blocks(self, n_node, sync_node, node, span) -> Eval:
        """pl.system.blocks(n): the next launch runs as n blocks."""
        if self.ctx.sig.func_type not in (FunctionType.Orchestration, FunctionType.Opaque) \
                or self.ctx.incore:
            self.error("pl.spmd launches kernels: it belongs in the orchestration", node,
                       "put `with pl.spmd(n):` in the orchestration, around the kernel calls")
        sync = bool(self.static(sync_node, "sync_start=")) if sync_node is not None else False
        n = self.expr(n_node)
        kw = {"sync_start": True} if sync else {}
        return Eval(self.op_call_values("blocks", "system", [n], kw, node, "pl.spmd"), span)

    def predicate(self, node, span) -> Eval:
        """`predicate=(t[i, j] > v)`: pl.system.predicate(t, [i, j], v, cmp=">"), the
        launch's condition, read when it is dispatched (its deps done)."""
        cmp_ops = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
                   ast.GtE: ">="}
        swapped = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}
        elem, value, op = node, ast.Constant(0), "!="
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in cmp_ops:
            elem, value, op = node.left, node.comparators[0], cmp_ops[type(node.ops[0])]
            if not isinstance(elem, ast.Subscript) and isinstance(value, ast.Subscript):
                elem, value, op = value, elem, swapped[op]
        read = self.expr(elem) if isinstance(elem, ast.Subscript) else None
        if not (isinstance(read, Call) and read.op == "tensor.read"):
            self.error(f"predicate= compares one element of a tensor with a value, got "
                       f"`{ast.unparse(node)}`", node, "predicate=(gate[0, 0] > 0)")
        rhs = self.expr(value)
        return Eval(self.op_call_values("predicate", "system", [read.args[0], read.args[1], rhs],
                                        {"cmp": op}, node, "predicate="), span)

    def early_resolve(self, node, where: str) -> None:
        """allow_early_resolve=True|False: the scheduler may stage the launch's consumers
        before it completes. The simulator's scheduler stages every task when it is
        submitted (its arguments bound, its producers known), before those finish, so the
        hint holds for every launch; it is checked, and there is nothing more to do."""
        v = self.static(node, f"{where} allow_early_resolve=")
        if not isinstance(v, bool):
            self.error(f"{where}: allow_early_resolve is True or False, got {v!r}", node)

    def spmd_args(self, ce: ast.Call, allowed: tuple) -> dict:
        args = {}
        if len(ce.args) > 1:
            self.error("pl.spmd takes the block count as its only positional argument", ce,
                       "pl.spmd(4) or pl.spmd(core_num=4)")
        if ce.args:
            args["core_num"] = ce.args[0]
        for kw in ce.keywords:
            if kw.arg == "allow_early_resolve":
                self.early_resolve(kw.value, "pl.spmd()")
                continue
            if kw.arg not in allowed:
                self.error(f"pl.spmd() got an unsupported argument {kw.arg!r}", ce,
                           f"pl.spmd(n, {', '.join(a + '=...' for a in allowed if a != 'core_num')})")
            args[kw.arg] = kw.value
        if "core_num" not in args:
            self.error("pl.spmd needs the number of blocks", ce, "pl.spmd(4)")
        return args

    def spmd_scope(self, s: ast.With, ce: ast.Call, task, span) -> list:
        """`with pl.spmd(n[, sync_start=, deps=]) [as tid]:` every kernel launched in it runs
        as n blocks."""
        a = self.spmd_args(ce, ("core_num", "sync_start", "deps", "name_hint", "predicate",
                                "optimizations"))
        if "optimizations" in a:
            from pypto.errors import NotBuiltError
            raise NotBuiltError("with pl.spmd(..., optimizations=[...]) around kernel calls: the "
                                "optimizations of a kernel are given where its region is written",
                                self.span(ce), "with pl.at(level=pl.Level.CORE_GROUP, optimizations=[...]) or "
                                "for i in pl.spmd(n, optimizations=[...])")
        marks = [self.blocks(a["core_num"], a.get("sync_start"), ce, span)]
        if "deps" in a:
            marks.insert(0, self.task_deps(a["deps"], span))
        if "predicate" in a:
            marks.append(self.predicate(a["predicate"], span))
        body, _ = self.block(s.body, allow_yield=False)
        if not _mark_launches(body, marks):
            self.error("pl.spmd(...) launches nothing: put the kernel calls (self.kernel(...)) "
                       "in it", s, "with pl.spmd(4):\n    out = self.kernel(a, out)")
        return body + self.task_id(task, span)

    def dump_args(self, node, val: Call, call) -> list:
        """The positions, among the launch's arguments, of the values dumps=[...] names."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            self.error("dumps= is a list of the launch's tensor arguments", node, "dumps=[x, out]")
        found = []
        for e in node.elts:
            v = self.expr(e)
            at = [i for i, a in enumerate(val.args) if a is v]
            if not at:
                self.error(f"dumps= names `{ast.unparse(e)}`, which is not an argument of this launch",
                           e, "name the tensors the kernel call takes")
            found += at
        return sorted(set(found))

    def cluster_scope(self, s: ast.With, ce: ast.Call, task, span) -> list:
        """`with pl.cluster([name_hint=...]):` around one launch (a kernel call, a pl.at
        region, a pl.spmd launch): that kernel runs on the cores of one core group, which
        every launch of this runtime does. Several kernels co-scheduled in one cluster (the
        reference's hand-written Group) are refused."""
        if ce.args or any(k.arg != "name_hint" for k in ce.keywords):
            self.error("pl.cluster takes only name_hint=", ce, 'with pl.cluster(name_hint="stage"):')
        if task is not None:
            self.error("`with pl.cluster(...) as tid` is not supported", s,
                       "bind the task id on the launch inside: with pl.spmd(...) as tid:")
        body, _ = self.block(s.body, allow_yield=False)
        launches = [x for x in walk_stmts(body) if isinstance(x, InCoreScope)] + \
            [e for x in walk_stmts(body) for e in _calls(x) if e.op.startswith("@")]
        if not launches:
            self.error("pl.cluster(...) launches nothing: put one kernel call or pl.at region in it",
                       s, "with pl.cluster():\n    with pl.spmd(4):\n        out = self.kernel(a, out)")
        if len(launches) > 1:
            from pypto.errors import NotBuiltError
            raise NotBuiltError(f"pl.cluster around {len(launches)} kernel launches: co-scheduling "
                                f"several kernels on one core group is not supported by this pypto yet",
                                self.span(ce), "launch them one by one, or put the cube and vector work "
                                               "in one pl.at region (a mixed kernel)")
        return body

    def spmd_loop(self, s: ast.For, it: ast.Call, span):
        """`for i in pl.spmd(n[, name_hint=, sync_start=]):` the body is a kernel run as n
        blocks, i its block index (a pl.at region whose first line reads it)."""
        a = self.spmd_args(it, ("core_num", "name_hint", "sync_start", "optimizations"))
        if not isinstance(s.target, ast.Name):
            self.error("for i in pl.spmd(n): binds one name, the block index", s)
        hint = self.static(a["name_hint"], "name_hint=") if "name_hint" in a else ""
        mark = self.blocks(a["core_num"], a.get("sync_start"), it, span)
        if self.ctx.incore:
            self.error("pl.spmd regions cannot be nested in a pl.at region", s)
        self.ctx.incore += 1
        try:
            val = self.op_call_values("get_block_idx", "tile", [], {}, s, "the block index")
            idx = Assign(self.bind_value(s.target.id, val, s, span), val, span)
            body, _ = self.block(s.body, allow_yield=False)
        finally:
            self.ctx.incore -= 1
        split, slots = self.optimizations(a.get("optimizations"), s)
        return [mark, InCoreScope([idx] + body, hint or "", span, split, slots)]

    def split_aiv_loop(self, s: ast.For, it: ast.Call, span):
        """`for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.X):` in a kernel: the body is a
        region each AIV of the core group runs as its lane, aiv_id its index. The region
        leaves no node of its own: the lane index is read with the region's mode on it
        (which makes the kernel run both AIVs), and its crossings (pl.aiv_shard /
        pl.aic_gather) take the mode."""
        from pypto.ir.nodes import SplitMode
        from pypto.ir.ops.lanes import REGION_ATTR
        if not isinstance(s.target, ast.Name):
            self.error("for aiv_id in pl.split_aiv(2, mode=...): binds one name, the lane index", s)
        if self.ctx is None or not (self.ctx.incore or self.ctx.sig.func_type is FunctionType.InCore):
            self.error("pl.split_aiv is a region of a kernel", s,
                       "write it inside `with pl.at(level=pl.Level.CORE_GROUP):`")
        n = self.static(it.args[0], "the lane count") if len(it.args) == 1 else None
        if n != 2:
            self.error("pl.split_aiv(2, mode=...): a core group has two AIV lanes", s)
        kws = {k.arg: k.value for k in it.keywords}
        if set(kws) != {"mode"} or not isinstance(mode := self.static(kws["mode"], "mode="), SplitMode):
            self.error("pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN | LEFT_RIGHT | NONE)", s)
        if self.ctx.lane_mode is not None:
            self.error("pl.split_aiv regions do not nest", s)
        val = Call("tile.get_subblock_idx", [], {}, ScalarType(dt.INDEX), {REGION_ATTR: mode.value}, span)
        idx = Assign(self.bind_value(s.target.id, val, s, span), val, span)
        self.ctx.lane_mode = mode.value
        try:
            body, _ = self.block(s.body, allow_yield=False)
        finally:
            self.ctx.lane_mode = None
        return [idx] + body

    def optimizations(self, entries, node) -> tuple[int, int]:
        """`optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=n)]` of a region:
        (its SplitMode value, its pipe depth; 0 = default)."""
        from pypto.language import optimizations as opt
        from pypto.language.optimizations import CrossCoreSlot, Split
        split, slots = 0, 0
        if entries is None:
            return split, slots
        if isinstance(entries, (ast.List, ast.Tuple)):     # pl.split(...) calls, evaluated here
            made = []
            for e in entries.elts:
                if not isinstance(e, ast.Call):
                    made.append(self.static(e, "an optimization"))
                    continue
                fn = self.static(e.func, "an optimization")
                if fn not in (opt.split, opt.cross_core_slot):
                    self.error(f"{ast.unparse(e)} is not an optimization of a region", e,
                               "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]")
                try:
                    made.append(fn(*[self.static(a, "an argument") for a in e.args],
                                   **{k.arg: self.static(k.value, k.arg) for k in e.keywords}))
                except (TypeError, ValueError) as err:
                    self.error(str(err), e, "optimizations=[pl.split(pl.SplitMode.UP_DOWN), "
                                            "pl.cross_core_slot(slot_num=4)]")
            entries = made
        elif isinstance(entries, ast.AST):
            entries = self.static(entries, "optimizations=")
        if not isinstance(entries, (list, tuple)):
            self.error("optimizations= is a list: [pl.split(pl.SplitMode.UP_DOWN), "
                       "pl.cross_core_slot(slot_num=4)]", node)
        for e in entries:
            if isinstance(e, Split):
                split = e.mode.value
                slots = e.slot_num or slots
            elif isinstance(e, CrossCoreSlot):
                slots = e.slot_num
            else:
                self.error(f"{e!r} is not an optimization of a region", node,
                           "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]")
        return split, slots

    def submit(self, targets, call: ast.Call, span) -> list:
        """`outs..., tid = pl.submit(self.kernel, *args, deps=[...])`: the kernel's call with
        its outputs bound to all names but the last, the task id to the last."""
        if not call.args:
            self.error("pl.submit needs the kernel to launch: pl.submit(self.kernel, *args)", call)
        fn, rest = call.args[0], call.args[1:]
        spmd = _kind(self.static(call.func, "a function")) == "spmd_submit"
        kws = {kw.arg: kw.value for kw in call.keywords}
        deps = [kws.pop("deps")] if "deps" in kws else []
        dumps = kws.pop("dumps", None)
        if "allow_early_resolve" in kws:
            self.early_resolve(kws.pop("allow_early_resolve"), "pl.submit()")
        out = [self.task_deps(deps[0], span)] if deps else []
        if spmd:
            if "core_num" not in kws:
                self.error("pl.spmd_submit needs core_num=: the number of blocks", call,
                           "pl.spmd_submit(self.kernel, *args, core_num=4)")
            out.append(self.blocks(kws.pop("core_num"), kws.pop("sync_start", None), call, span))
            if "predicate" in kws:
                out.append(self.predicate(kws.pop("predicate"), span))
        if kws:
            name = "pl.spmd_submit" if spmd else "pl.submit"
            self.error(f"{name}() got an unsupported argument {next(iter(kws))!r}", call,
                       f"{name}(self.kernel, *args, " + ("core_num=4, " if spmd else "") + "deps=[tid])")
        kcall = ast.copy_location(ast.Call(fn, rest, []), call)
        val = self.expr(kcall)
        if not (isinstance(val, Call) and val.callee):
            self.error(f"pl.submit launches a kernel (self.<kernel> or a @pl.function), got "
                       f"`{ast.unparse(fn)}`", call)
        if dumps is not None:           # dumps=[x, ...]: this launch's arguments to dump
            val.attrs["dump_args"] = self.dump_args(dumps, val, call)
        if targets is None:
            return out + [Eval(val, span)] + self.task_id(None, span)
        names = targets.elts if isinstance(targets, (ast.Tuple, ast.List)) else [targets]
        if not all(isinstance(n, ast.Name) for n in names):
            self.error("unpack pl.submit(...) into plain names: out, tid = pl.submit(...)", call)
        results, tid = names[:-1], names[-1]
        vt = getattr(val, "type", None)
        n = len(vt.types) if isinstance(vt, TupleType) else (0 if vt is None else 1)
        if len(results) != n:
            self.error(f"pl.submit of `{ast.unparse(fn)}` gives {n} result(s) and its task id: "
                       f"{n + 1} names, got {len(names)}", call,
                       "out, tid = pl.submit(self.kernel, ...) (one name per result, then the id)")
        if n == 0:
            out.append(Eval(val, span))
        elif n == 1:
            self.check_out_rebind(results[0].id, val, call)
            out.append(Assign(self.bind_value(results[0].id, val, call, span), val, span))
        else:
            tup = self.define("_".join(r.id for r in results) + "__ret", vt, span)
            out.append(Assign(tup, val, span))
            for i, r in enumerate(results):
                item = ops.tuple_get(tup, i, span)
                if r.id != "_":
                    out.append(Assign(self.bind_value(r.id, item, call, span), item, span))
        return out + self.task_id(tid, span)


def _mark_launches(body: list, marks: list) -> int:
    """Put `marks` (pl.system.* statements for the next launch) before every kernel launch
    in `body` (through loops and ifs); how many there were."""
    n, i = 0, 0
    while i < len(body):
        s = body[i]
        e = s.value if isinstance(s, Assign) else s.expr if isinstance(s, Eval) else None
        if isinstance(s, InCoreScope) or (isinstance(e, Call) and e.callee):
            body[i:i] = [copy.copy(m) for m in marks]
            i += len(marks)
            n += 1
        else:
            for b in bodies_of(s):
                n += _mark_launches(b, marks)
        i += 1
    return n


def _calls(s) -> list:
    return [e for x in stmt_exprs(s) for e in walk_expr(x) if isinstance(e, Call)]
