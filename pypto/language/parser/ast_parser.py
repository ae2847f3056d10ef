"""Python AST of a `@pl.program` class / `@pl.function` def -> `pypto.ir` nodes.

The body is read, never executed. Names resolve, in order, to the function's variables,
then to constants of the enclosing Python scope (closure/globals captured at decoration,
or module-level assignments of parsed text), which are folded into the IR.

Variables are name-based here: assigning a name again with the same type reuses its
Var (ConvertToSSA renames later); a different type makes a new Var with the same hint.
"""

from __future__ import annotations

import ast
from typing import Any

from pypto.language.parser.common import (Function, FunctionType, InCoreScope, Level, ParserError,
                                          Program, Source, Span, TypeCheckError, _Ctx,
                                          _GENERIC_HINT, _RECURSION_HINT, _Sig, _is_docstring,
                                          _recursion_message, walk)
from pypto.language.parser.groups import bind_groups
from pypto.language.parser.annotations import AnnotationsMixin
from pypto.language.parser.calls import CallsMixin
from pypto.language.parser.common import _kind  # noqa: F401  (entry.py reads it here)
from pypto.language.parser.functions import SignaturesMixin
from pypto.language.parser.statements import StatementsMixin
from pypto.language.parser.tasks import TasksMixin
from pypto.language.parser.values import ValuesMixin


class Parser(SignaturesMixin, AnnotationsMixin, ValuesMixin, CallsMixin,
             StatementsMixin, TasksMixin):
    """Shared by program and standalone-function parsing; one per parse request."""

    def __init__(self, source: Source, statics: dict[str, Any]):
        self.src = source
        self.statics = statics
        self.sigs: dict[str, _Sig] = {}
        self.in_program = False
        self.kernel_calls: list = []   # (caller, kernel, span, inside pl.at): calls no kernel may make
        self.ctx: _Ctx | None = None
        # Consts written as bare literals (they adopt a dtype), by id; held so no other
        # object reuses the id while the parser runs
        self._lit: dict[int, Const] = {}
        self.call_sites: dict[str, list[tuple[str, Span]]] = {}   # caller -> [(callee, span)]
        self._parsing: list[_Ctx] = []  # functions whose bodies are being parsed (outermost first)

    # ================================================================== spans / errors
    def span(self, node) -> Span:
        c = self.ctx
        if c is not None and c.marked and c.cur is not None:
            return c.cur
        if node is None or not hasattr(node, "lineno"):
            return c.cur if c is not None and c.cur is not None else Span(self.src.file, 1, 1)
        # in marked text (a specialized @pl.jit program, a dump) a node outside any
        # statement (a parameter's annotation) takes the marker of its line
        return self.src.marker(node) or self.src.pos(node)

    def stmt_span(self, node, compound=False) -> tuple[Span, bool]:
        m = self.src.header_marker(node) if compound else self.src.marker(node)
        if m is not None:
            return m, True
        return self.src.pos(node), False

    def error(self, msg, node=None, hint=None, cls=ParserError):
        raise cls(msg, self.span(node), hint or _GENERIC_HINT)

    # ================================================================== entry points
    def parse_program(self, cdef: ast.ClassDef, source_name: str) -> Program:
        self.in_program = True
        if cdef.bases or cdef.keywords:
            self.error("a @pl.program class takes no base classes", cdef,
                       "write `class MyProgram:` and decorate each method with @pl.function")
        for s in cdef.body:
            if isinstance(s, ast.FunctionDef):
                sig = self.collect_signature(s, in_class=True)
                if sig.name in self.sigs:
                    self.error(f"function {sig.name!r} is defined twice in program {cdef.name!r}", s,
                               "give each function of a program its own name")
                self.sigs[sig.name] = sig
            elif isinstance(s, ast.Pass) or _is_docstring(s):
                continue
            else:
                self.error(f"a @pl.program class may only contain @pl.function methods, "
                           f"found {type(s).__name__}", s,
                           "move constants to module level; they are folded into the program")
        if not self.sigs:
            self.error(f"program {cdef.name!r} has no functions", cdef,
                       "add a method decorated with @pl.function")
        for sig in list(self.sigs.values()):   # (a call may add a module-level function)
            self.ensure_body(sig)
        self.check_recursion()
        self.program_checks(cdef)
        bind_groups(self.sigs)
        return Program(cdef.name, [s.function for s in self.sigs.values()], source_name)

    def program_checks(self, cdef: ast.ClassDef) -> None:
        """What needs every body parsed: one orchestration, kernels called only from the
        orchestration."""
        orch = [s for s in self.sigs.values() if s.func_type is FunctionType.Orchestration]
        regions = [s for s in self.sigs.values() if s.func_type is FunctionType.Opaque and s.function
                   and any(isinstance(x, InCoreScope) for x in walk(s.function.body))]
        if orch and regions:        # outlining makes such a function an orchestration too
            raise ParserError(
                f"{regions[0].name!r} has pl.at regions, which makes it an orchestration, but "
                f"{orch[0].name!r} already is the orchestration of program {cdef.name!r}",
                regions[0].span,
                f"make {regions[0].name} an Inline function (@pl.function(type=pl.FunctionType.Inline)) "
                f"that {orch[0].name} calls, or move its regions into {orch[0].name}")
        host = any(s.level is Level.HOST for s in self.sigs.values())
        if len(orch) > 1 and not host:     # (a HOST program launches each as a program of its own)
            raise ParserError(
                f"program {cdef.name!r} has {len(orch)} orchestration functions "
                f"({', '.join(repr(s.name) for s in orch)}); a program has one entry point",
                orch[1].span, f"call every kernel from {orch[0].name!r}, or put {orch[1].name!r} "
                              f"in a @pl.program of its own")
        for caller, callee, span, in_region in self.kernel_calls:
            sig = self.sigs.get(caller)
            if sig is not None and sig.func_type is FunctionType.Group and not in_region:
                continue                      # its members: bind_groups checks them
            if in_region:
                raise TypeCheckError(
                    f"kernel {callee!r} is called inside a pl.at region of {caller!r}", span,
                    f"a pl.at region is a kernel itself: call self.{callee}(...) from the "
                    f"orchestration body, outside the `with pl.at(...)` block")
            raise TypeCheckError(
                f"kernel {caller!r} calls kernel {callee!r}; kernels are launched by the "
                f"orchestration, not by each other", span,
                f"call both from the orchestration one after the other, or make {callee} an "
                f"Inline function (@pl.function(type=pl.FunctionType.Inline)) to splice it in")

    def check_recursion(self) -> None:
        """No function may reach itself through calls: kernels are inlined, outlined and
        submitted by name, never entered twice. The error is at the call closing the cycle."""
        state: dict[str, int] = {}

        def visit(name: str, chain: list[str]):
            state[name] = 1
            for callee, span in self.call_sites.get(name, ()):
                if state.get(callee) == 1:
                    raise ParserError(_recursion_message(chain + [name, callee]), span,
                                      _RECURSION_HINT)
                if callee not in state:
                    visit(callee, chain + [name])
            state[name] = 2

        for name in self.sigs:
            if name not in state:
                visit(name, [])

    def parse_function(self, fdef: ast.FunctionDef, defaults: dict | None = None) -> Function:
        sig = self.collect_signature(fdef, in_class=False, defaults=defaults)
        self.sigs[sig.name] = sig
        self.ensure_body(sig)
        return sig.function
