"""The task graph of a host orchestration: what a launch waits for (deps=[...], the edges
the compiler derives in a manual scope), how it runs (SPMD blocks, sync_start, a
predicate) and the task ids it gives (pl.system.task_id, task_dummy). The pl.system.*
statements before a launch set up the next submit_task. A mixin of the orchestration
emitter (pypto.codegen.orchestration)."""
from __future__ import annotations

from pypto.codegen.orch_values import _loc
from pypto.ir.nodes import ArrayType, Assign, Call, Eval, For, RuntimeScope, TupleExpr, While
from pypto.ir.ops.system import CMP_CODES
from pypto.ir.visit import bodies


class TaskGraph:
    def init_tasks(self) -> None:
        self.pending_deps: list[str] | None = None   # pl.system.after: for the next launch
        self.pending_blocks: tuple | None = None     # pl.system.blocks: (count, sync_start)
        # per open manual scope: (the C names of its calls' latest task ids, the loops
        # around each call) and how many of its calls were met so far
        self.sites: list[tuple] = []
        self.site_at: list[int] = []
        self.dump_tagged: set[int] = set()      # ids of the values pl.dump_tag marked

    # ------------------------------------------------------------------ pl.system.* statements
    def system_statement(self, c: Call, span) -> bool:
        """Emit a pl.system.* statement (what the next launch waits for and how it runs, a
        dummy task); False when `c` is not one."""
        if c.op == "system.after":
            self.out(f"// {_loc(span)}: the next launch waits for its deps")
            self.pending_deps = self.dep_items(c.args[0], span)
        elif c.op == "system.blocks":
            n, _ = self.scalar(c.args[0], span)
            self.out(f"// {_loc(span)}: the next launch runs as {n} blocks")
            self.pending_blocks = (f"(int32_t)({n})", "1" if c.kwargs.get("sync_start") else "0")
        elif c.op == "system.task_dummy":
            self.dummy(c, span)
        elif c.op == "system.predicate":
            self.predicate(c, span)
        elif c.op == "system.dump_tag":       # launches that take this value dump it
            self.out(f"// {_loc(span)}: pl.dump_tag({getattr(c.args[0], 'name', '?')})")
            self.dump_tagged.add(id(c.args[0]))
        else:
            return False
        return True

    def predicate(self, c: Call, span) -> None:
        """pl.system.predicate: the next launch runs only if the element compares true."""
        t = self.handle(c.args[0], span)
        idx = c.args[1].items if isinstance(c.args[1], TupleExpr) else [c.args[1]]
        exprs = [f"(int64_t)({self.scalar(i, span)[0]})" for i in idx]
        value, _ = self.scalar(c.args[2], span)
        self.out(f"// {_loc(span)}: the next launch runs only if "
                 f"{getattr(c.args[0], 'name', 't')}[...] {c.kwargs['cmp']} {value} when dispatched")
        name = self.index_array("pred_at", exprs)
        self.out(f"api->predicate_next(api->ctx, {t}, {len(exprs)}, {name}, "
                 f"{CMP_CODES[c.kwargs['cmp']]}, (double)({value}));")

    def dep_items(self, e, span) -> list[str]:
        """The C expressions of the task ids a deps list names (arrays element by element)."""
        out = []
        for item in (e.items if isinstance(e, TupleExpr) else [e]):
            if isinstance(getattr(item, "type", None), ArrayType):
                arr = self.val(item, span)
                out += [f"{arr.expr}[{k}]" for k in range(item.type.extent)]
            else:
                out.append(self.scalar(item, span)[0])
        return out

    def deps_arg(self, deps: list[str], every: list[str] = ()) -> str:
        """Emit the deps array of a submit_task (ids, and whole vectors of ids); its
        `n_deps, deps` arguments."""
        if every:
            self.out(f"std::vector<int64_t> deps = {{{', '.join(deps)}}};")
            for v in every:
                self.out(f"deps.insert(deps.end(), {v}.begin(), {v}.end());")
            return "(int32_t)deps.size(), deps.data()"
        if deps:
            self.out(f"const int64_t deps[{len(deps)}] = {{{', '.join(deps)}}};")
            return f"{len(deps)}, deps"
        return "0, nullptr"

    def dummy(self, c: Call, span, name_hint: str = "dummy") -> str:
        """pl.system.task_dummy(deps=[...]): a task that runs nothing; its id."""
        deps = self.dep_items(c.args[0], span)
        name = self.cname(name_hint)
        self.out(f"// {_loc(span)}: {name_hint} = pl.system.task_dummy(...)")
        self.out(f"int64_t {name} = -1;")
        self.out("{")
        self.indent += 1
        dargs = self.deps_arg(deps)
        self.out(f"{name} = api->submit_task(api->ctx, -1, 0, nullptr, nullptr, 0, nullptr, {dargs}, "
                 f"1, 0);")
        self.out(f"if ({name} < 0) {self.fail_return(2)}")
        self.out("pypto_last_task = " + name + ";")
        self.indent -= 1
        self.out("}")
        return name

    # ------------------------------------------------------------------ manual scopes
    def open_manual(self, body) -> None:
        """A manual scope: C variables for the tasks of each of its calls (the latest, and
        all of them: deps from after a loop wait for every task of it)."""
        loops = _scope_calls(body)
        names = [self.cname(f"site_{k}") for k in range(len(loops))]
        for name in names:
            self.out(f"int64_t {name} = -1;")
            self.out(f"std::vector<int64_t> {name}_all;")
            self.out(f"(void){name}; (void){name}_all;")
        self.sites.append((names, loops))
        self.site_at.append(0)

    def close_manual(self) -> None:
        self.sites.pop()
        self.site_at.pop()

    # ------------------------------------------------------------------ one launch
    def launch(self, c: Call, callee, fid: int, n_tensors: int, targ: str, darg: str,
               n_scalars: int, sarg: str) -> None:
        """Emit the submit_task of a kernel call: its deps (named, and in a manual scope
        derived), its blocks, the task id it gives."""
        deps = list(self.pending_deps or [])
        self.pending_deps = None
        site, every = None, []
        if self.sites:                 # in a manual scope: the compiler-derived edges too
            k = self.site_at[-1]
            self.site_at[-1] += 1
            names, loops = self.sites[-1]
            if k < len(names):
                site = names[k]
                for d in c.attrs.get("deps", ()):
                    if d >= len(names):
                        continue
                    # a call in a loop that has ended (not one around this call too): all of
                    # its tasks; one in the same iteration: its latest
                    if set(loops[d]) <= set(loops[k]):
                        deps.append(names[d])
                    else:
                        every.append(f"{names[d]}_all")
        dargs = self.deps_arg(deps, every)
        blocks, sync = self.pending_blocks or ("1", "0")
        self.pending_blocks = None
        if callee.attrs.get("sync_blocks"):   # its blocks wait for each other (a syncall): at once
            sync = "1"
        self.out(f"pypto_last_task = api->submit_task(api->ctx, {fid}, {n_tensors}, {targ}, "
                 f"{darg}, {n_scalars}, {sarg}, {dargs}, {blocks}, {sync});  // {c.callee}")
        self.out(f"if (pypto_last_task < 0) {self.fail_return(2)}")
        if site is not None:
            self.out(f"{site} = pypto_last_task;")
            self.out(f"{site}_all.push_back(pypto_last_task);")


def _scope_calls(body, loops: tuple = ()) -> list[tuple]:
    """The kernel calls lexically in a runtime scope (through loops and ifs, not into a
    nested scope), in the order AutoDeriveTaskDependencies numbers them for its `deps`:
    for each, the ids of the loops around it inside the scope."""
    out = []
    for s in body:
        if isinstance(s, RuntimeScope):
            continue
        for e in ([s.value] if isinstance(s, Assign) else [s.expr] if isinstance(s, Eval) else []):
            if isinstance(e, Call) and e.callee:
                out.append(loops)
        inner = loops + (id(s),) if isinstance(s, (For, While)) else loops
        for b in bodies(s):
            out += _scope_calls(b, inner)
    return out
