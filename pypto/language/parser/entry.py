"""The ways source becomes IR: `@pl.program`, `@pl.function`, `pl.parse`, `pl.loads`."""
from __future__ import annotations

import ast

from pypto import pyast
import inspect
import linecache
import sys
from typing import Any

from pypto.errors import DSLSyntaxError, ParserError, PyptoError, Span, TextHoldsNoProgram
from pypto.ir.nodes import Function, Program
from pypto.language.parser.ast_parser import Parser, _kind
from pypto.language.parser.source import (Source, basename, dedent, scan_markers)

_FILE_CACHE: dict[tuple[str, int], ast.Module] = {}


def _lang():
    import pypto.language as pl
    return pl


def _guard(fn, where: Span | None = None):
    """Run a parse; let our typed errors out with a short traceback and turn anything
    else (a parser bug) into a ParserError at the best known location."""
    try:
        return fn()
    except PyptoError as e:
        raise e.with_traceback(None) from None
    except RecursionError:
        raise ParserError("the kernel is nested too deeply to parse", where,
                          "split deeply nested expressions into several statements") from None
    except Exception as e:      # noqa: BLE001 - never leak an internal traceback
        err = ParserError(f"internal parser error ({type(e).__name__}: {e})", where,
                          "this is a bug in the pypto parser; please report it with the kernel source")
        err.internal = e
        raise err from None


# ---------------------------------------------------------------------- locating source
def _parse_file(file: str) -> tuple[ast.Module, str] | None:
    linecache.checkcache(file)
    lines = linecache.getlines(file)
    if not lines:
        return None
    text = "".join(lines)
    key = (file, hash(text))
    tree = _FILE_CACHE.get(key)
    if tree is None:
        try:
            tree = pyast.parse(text, filename=file)
        except SyntaxError:
            return None
        if len(_FILE_CACHE) > 64:
            _FILE_CACHE.clear()
        _FILE_CACHE[key] = tree
    return tree, text


def _first_line(node) -> int:
    decos = getattr(node, "decorator_list", None)
    return min([d.lineno for d in decos] + [node.lineno]) if decos else node.lineno


def _code_of(obj):
    if isinstance(obj, FunctionMarker):
        obj = obj.fn
    obj = getattr(obj, "__wrapped__", obj)
    return getattr(obj, "__code__", None)


def _locate_class(cls) -> tuple[ast.ClassDef, Source]:
    codes = [c for c in (_code_of(v) for v in vars(cls).values()) if c is not None]
    if codes:
        file = codes[0].co_filename
        line = min(c.co_firstlineno for c in codes)
        got = _parse_file(file)
        if got is not None:
            tree, text = got
            best = None
            for n in ast.walk(tree):
                if isinstance(n, ast.ClassDef) and n.name == cls.__name__ \
                        and _first_line(n) <= line <= (n.end_lineno or n.lineno):
                    if best is None or n.lineno > best.lineno:
                        best = n
            if best is not None:
                return best, Source(basename(file), text)
    return _locate_by_inspect(cls, ast.ClassDef)


def _locate_function(fn) -> tuple[ast.FunctionDef, Source]:
    code = _code_of(fn)
    if code is not None:
        got = _parse_file(code.co_filename)
        if got is not None:
            tree, text = got
            for n in ast.walk(tree):
                if isinstance(n, ast.FunctionDef) and n.name == fn.__name__ \
                        and _first_line(n) == code.co_firstlineno:
                    return n, Source(basename(code.co_filename), text)
    return _locate_by_inspect(fn, ast.FunctionDef)


def _locate_by_inspect(obj, node_type):
    try:
        lines, start = inspect.getsourcelines(obj)
        file = inspect.getsourcefile(obj) or inspect.getfile(obj)
    except (OSError, TypeError):
        raise ParserError(f"cannot find the source code of {obj.__qualname__!r}", None,
                          "define it in a .py file, or pass its text to pl.parse(text)") from None
    text, indent = dedent("".join(lines))
    tree = pyast.parse(text)
    node = next(n for n in tree.body if isinstance(n, node_type))
    return node, Source(basename(file), text, line_offset=max(start - 1, 0), col_offset=indent)


def _frame_names(frame) -> dict[str, Any]:
    names = dict(frame.f_globals)
    names.update(frame.f_locals)
    return names


# ---------------------------------------------------------------------- decorators
class FunctionMarker:
    """What `@pl.function(...)` leaves on a method inside a `@pl.program` class body;
    `@pl.program` reads the method's source, so this only records the decoration."""
    _pl_kind = "function_marker"

    def __init__(self, fn, opts: dict):
        self.fn = fn
        self.opts = opts
        self.__name__ = getattr(fn, "__name__", "function")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        from pypto.language.dsl import DSLCallError
        raise DSLCallError(f"{self.__name__} is a @pl.function: it is compiled, not called by Python",
                           hint="compile the program with ir.compile(program)")

    def __repr__(self) -> str:
        return f"<pl.function {self.__name__}>"


def _in_class_body(frame) -> bool:
    loc = frame.f_locals
    return "__module__" in loc and "__qualname__" in loc and frame.f_locals is not frame.f_globals


def program(cls=None, **opts):
    """`@pl.program` on a class -> `ir.Program` (one function per @pl.function method)."""
    if opts:
        unknown = sorted(set(opts) - {"strict_ssa"})
        if unknown or opts.get("strict_ssa"):
            raise TypeError(f"pl.program() got unsupported argument(s): {', '.join(unknown or ['strict_ssa'])}")
    if cls is None:
        def deco(c):
            return _program(c, _frame_names(sys._getframe(1)))
        return deco
    return _program(cls, _frame_names(sys._getframe(1)))


program._pl_kind = "program"


def _program(cls, names: dict) -> Program:
    if not isinstance(cls, type):
        raise TypeError("@pl.program decorates a class")
    node, src = _guard(lambda: _locate_class(cls))

    def run():
        p = Parser(src, names)
        return p.parse_program(node, src.file)
    prog = _guard(run, src.pos(node))
    # its HOST functions run as the Python they are (pypto.ir.distributed_compile)
    prog.host_python = {f.name: getattr(cls.__dict__.get(f.name), "fn", None) for f in prog.functions
                        if f.is_host}
    return prog


def function(fn=None, *, type=None, level=None, role=None, attrs=None, auto_scope=True,
             strict_ssa=False, external_source=None, **unknown):
    """`@pl.function(type=pl.FunctionType.X, level=..., role=..., attrs=...)`.
    Inside a `@pl.program` class it marks a method; on a plain def it parses it into an
    `ir.Function`."""
    if unknown:
        import difflib
        known = ["type", "level", "role", "attrs", "auto_scope", "external_source"]
        name = sorted(unknown)[0]
        close = difflib.get_close_matches(name, known, n=1)
        more = f"; did you mean {close[0]}=?" if close else ""
        raise TypeError(f"pl.function() got an unexpected keyword argument {name!r}{more} "
                        f"(it takes {', '.join(k + '=' for k in known)})")
    if strict_ssa:
        raise TypeError("pl.function(strict_ssa=True) is not supported")
    opts = {k: v for k, v in (("type", type), ("level", level), ("role", role),
                              ("attrs", attrs)) if v is not None}
    if auto_scope is not True:
        opts["auto_scope"] = auto_scope
    if external_source is not None:
        opts["external_source"] = external_source

    def deco(f, frame):
        if _in_class_body(frame):
            return FunctionMarker(f, opts)
        return _function(f, _frame_names(frame), opts)

    if fn is None:
        def later(f):
            return deco(f, sys._getframe(1))
        return later
    return deco(fn, sys._getframe(1))


function._pl_kind = "function"


def _function(fn, names: dict, opts: dict) -> Function:
    node, src = _guard(lambda: _locate_function(fn))

    def run():
        return Parser(src, names).parse_function(node, defaults=opts)
    return _guard(run, src.pos(node))


# ---------------------------------------------------------------------- text
def parse(text: str, filename: str = "<string>") -> Program | Function:
    """Parse DSL text (a printed dump or hand-written source) without executing it.
    Returns the Program of its `@pl.program` class (or the Function of a lone
    `@pl.function` def)."""
    file = basename(filename)
    body, indent = dedent(text)
    try:
        tree = pyast.parse(body, filename=file)
    except SyntaxError as e:
        raise DSLSyntaxError(f"syntax error: {e.msg}", Span(file, e.lineno or 1, (e.offset or 1) + indent),
                          "the text must be valid Python syntax") from None
    src = Source(file, body, 0, indent, scan_markers(body))
    return _guard(lambda: _parse_module(tree, src))


def loads(path) -> Program | Function:
    """Read and parse a DSL file (e.g. a pass dump)."""
    path = str(path)
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), filename=path)


def _parse_module(tree: ast.Module, src: Source):
    pl = _lang()
    statics: dict[str, Any] = {"pl": pl}
    results = []
    for s in tree.body:
        if isinstance(s, ast.Import):
            for a in s.names:
                if a.name == "pypto.language" and a.asname:
                    statics[a.asname] = pl
                elif a.name == "pypto.language.distributed" and a.asname:
                    import pypto.language.distributed as pld
                    statics[a.asname] = pld
                elif a.name.startswith("pypto") and not a.asname:
                    statics["pypto"] = sys.modules["pypto"]
            continue
        if isinstance(s, ast.ImportFrom):
            for a in s.names:
                if s.module == "pypto" and a.name == "language":
                    statics[a.asname or "language"] = pl
                elif s.module == "pypto.language" and a.name != "*" and hasattr(pl, a.name):
                    statics[a.asname or a.name] = getattr(pl, a.name)
            continue
        p = Parser(src, statics)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            statics[s.targets[0].id] = p.static(s.value, "a module-level constant")
            continue
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None:
            statics[s.target.id] = p.static(s.value, "a module-level constant")
            continue
        if isinstance(s, ast.ClassDef):
            decos = [d.func if isinstance(d, ast.Call) else d for d in s.decorator_list]
            if len(decos) != 1 or _kind(p.static(decos[0], "a decorator")) != "program":
                raise ParserError(f"class {s.name!r} is not decorated with @pl.program", src.pos(s),
                                  "programs are classes decorated with @pl.program")
            if isinstance(s.decorator_list[0], ast.Call) and (s.decorator_list[0].args or s.decorator_list[0].keywords):
                raise ParserError("@pl.program takes no arguments here", src.pos(s))
            origin = next(iter(src.markers.values())).file if src.markers else src.file
            results.append(p.parse_program(s, origin))
            continue
        if isinstance(s, ast.FunctionDef):
            results.append(p.parse_function(s))
            continue
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            continue
        if isinstance(s, ast.Pass):
            continue
        raise ParserError(f"unsupported top-level statement ({type(s).__name__})", src.pos(s),
                          "the text holds imports, module constants (M = pl.dynamic(\"M\")) and one "
                          "@pl.program class")
    if not results:
        raise TextHoldsNoProgram("no @pl.program class or @pl.function def found", Span(src.file, 1, 1),
                          "the text must define a program: @pl.program class P: ...")
    if len(results) > 1:
        raise TextHoldsNoProgram(f"the text defines {len(results)} programs/functions; pl.parse expects one",
                          Span(src.file, 1, 1), "parse each program separately")
    return results[0]

