"""`@pl.jit`, `@pl.jit.incore`, `@pl.jit.inline` and the JITFunction they make.

A JITFunction holds a Python function that is never run: its source is specialized
against the shapes and dtypes of the call's arguments (`pypto.jit.specialize`), compiled
through the build graph (`pypto.ir.compiling.compile_jit`) and dispatched by the runtime.
Compiled programs are kept per JITFunction under the specialization key, so a second
call with the same key returns the identical CompiledProgram.

torch is never imported here: tensors are recognised by their type's module and their
`.shape` / `.dtype`.
"""
from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import inspect
import json
import numbers
import os
import threading
from typing import Any

from pypto import dtype as _dt
from pypto.errors import ParserError, Span
from pypto.jit import analysis as A
from pypto.jit import call_cache as C
from pypto.language import host_trace

KINDS = ("orchestration", "incore", "inline")

# RunConfig fields that only matter when running, never for what gets compiled
_RUN_ONLY = frozenset({"device_id", "rtol", "atol", "enable_chip_swimlane", "enable_dump_args",
                       "enable_pmu", "enable_dep_gen", "enable_scope_stats"})

_TENSOR_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bfloat16",
                  "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
                  "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
                  "bool": "bool"}


class _Runtime:
    """`pl.RUNTIME`: in compile()/lower() signature mode, keeps a scalar parameter a
    real runtime scalar instead of a specialization constant."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "pl.RUNTIME"

    def __reduce__(self):
        return (_Runtime, ())


RUNTIME = _Runtime()
_MISSING = object()


class JitCallError(ParserError, TypeError):
    """A @pl.jit function calls something it may not (another @pl.jit entry)."""


def check_name(name, what: str = "a @pl.jit function") -> str:
    """The name of a program or kernel becomes a Python identifier in the generated
    program, a C symbol and part of the output directory's name: it must be a plain
    identifier (no path separators, no dots)."""
    import keyword
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{what} is named {name!r}, which is not a Python identifier; the name "
                         f"becomes the program's and its kernels' names and part of the output "
                         f"directory, so it must be a plain identifier such as 'my_kernel' "
                         f"(letters, digits and '_', not starting with a digit)")
    return name


# ----------------------------------------------------------------------------- the decorator
class _Jit:
    """`pl.jit`: `@pl.jit`, `@pl.jit(auto_scope=False)`, `@pl.jit.incore`,
    `@pl.jit.incore(level=...)`, `@pl.jit.inline`."""

    def __call__(self, fn=None, *, auto_scope: bool = True):
        options = {} if auto_scope else {"auto_scope": False}
        return _apply(fn, "orchestration", options)

    def incore(self, fn=None, *, level=None):
        options = {"level": _level_name(level)} if level is not None else {}
        return _apply(fn, "incore", options)

    def inline(self, fn=None, *, auto_scope: bool = True):
        options = {} if auto_scope else {"auto_scope": False}
        return _apply(fn, "inline", options)

    def host(self, fn=None, **options):
        """`@pl.jit.host`: the HOST-level orchestrator (pypto.jit.host)."""
        from pypto.jit.host import HostFunction
        if fn is None:
            return lambda f: HostFunction(f, options)
        return HostFunction(fn, options)

    def extern(self, fn=None, **options):
        from pypto.errors import NotBuiltError
        raise NotBuiltError("@pl.jit.extern (a hand-written C++ kernel under @pl.jit) is not supported "
                            "by this pypto yet", hint="declare the kernel in a @pl.program class: "
                            "@pl.function(type=pl.FunctionType.AIV, external_source=\"k.cpp\") with a "
                            "`...` body, called from its orchestration")

    def __repr__(self) -> str:
        return "pl.jit"


def _level_name(level) -> str:
    name = getattr(level, "name", level)
    if not isinstance(name, str):
        raise TypeError(f"level must be a pl.Level, got {level!r}")
    return name


def _apply(fn, kind, options):
    if fn is None:
        return lambda f: _apply(f, kind, options)
    if isinstance(fn, JITFunction):
        raise TypeError(f"`{fn.__name__}` is already a @pl.jit function")
    if not inspect.isfunction(fn):
        raise TypeError(f"@pl.jit decorates a function, got {fn!r}")
    return JITFunction(fn, kind, options)


jit = _Jit()


# ----------------------------------------------------------------------------- JITFunction
class JITFunction:
    """A `@pl.jit` kernel: call it, `.compile(...)` it or `.lower(...)` it."""

    def __init__(self, fn, kind: str = "orchestration", options: dict | None = None):
        if kind not in KINDS:
            raise ValueError(f"unknown @pl.jit kind {kind!r}; expected one of {', '.join(KINDS)}")
        check_name(fn.__name__, f"the @pl.jit{'' if kind == 'orchestration' else '.' + kind} function {fn.__qualname__!r}")
        self.fn = fn
        self.kind = kind
        self.options = dict(options or {})
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._cache: dict[str, Any] = {}
        self._calls: dict[tuple, tuple] = {}     # call_cache: arguments -> (compiled, globals)
        self._lock = threading.RLock()
        self._src: dict | None = None

    def __repr__(self) -> str:
        deco = "@pl.jit" if self.kind == "orchestration" else f"@pl.jit.{self.kind}"
        return f"<JITFunction {deco} {self.__qualname__}>"

    # ------------------------------------------------------------------ public surface
    def __call__(self, *args, config=None, **kwargs):
        """Specialize on the arguments, compile (or reuse) and run; returns what the
        compiled program returns (None in place, the outputs in return style)."""
        trace = host_trace.active()
        if trace is not None:               # a launch of a @pl.jit.host body (pypto.jit.host)
            return self._launch(trace, args, kwargs, config)
        self._need_entry("called from Python")
        # every parameter given positionally: the arguments are the run's, in order
        key = C.arg_key(args, config) if not kwargs and len(args) == self._n_params() else None
        if key is not None:
            hit = self._calls.get(key)
            # (only while the specialization cache still holds it: `_cache.clear()`, as
            # PyPTO's tests write it, forgets the call too)
            if hit is not None and self._cache.get(hit[2]) is hit[0] and C.unchanged(hit[1]):
                return _run(hit[0], args, config)
        spec, ordered = self._build(args, kwargs, allow_runtime=False)
        ckey = cache_key(spec, config)
        compiled = self._compile(spec, config, ckey)
        if key is not None:
            with self._lock:
                if len(self._calls) >= C.MAX_ENTRIES:
                    self._calls.clear()
                self._calls[key] = (compiled, C.snapshot(self._deps()[0]), ckey)
        return _run(compiled, ordered, config)

    def _n_params(self) -> int:
        n = self.__dict__.get("_n")
        if n is None:
            n = self._n = len(inspect.signature(self.fn).parameters)
        return n

    def _launch(self, trace, args, kwargs, config):
        line = host_trace.caller_line(trace)
        if config is not None:
            raise TypeError(f"{trace.filename}:{line}: in a @pl.jit.host function, {self.__name__}(...) is "
                            f"launched on a rank: pass device=r, not a config")
        kwargs = dict(kwargs)
        if "device" in kwargs:
            rank = kwargs.pop("device")
        else:                   # a launch that names no device: the ranks in turn, in launch order
            rank = trace.undirected % trace.world_size
            trace.undirected += 1
        trace.launches.append(host_trace.Launch(rank, self, args, kwargs, line))

    def compile(self, *args, config=None, **kwargs):
        """Specialize and compile; returns the CompiledProgram the cache holds.

        Positional and keyword arguments are the kernel's own (bound against its
        signature); compile options travel in `config=RunConfig(...)`. With every
        parameter fully annotated no arguments are needed; scalar parameters are then
        given by keyword, a value or `pl.RUNTIME`."""
        self._need_entry("compiled")
        spec, _ = self._build(args, kwargs, allow_runtime=True)
        return self._compile(spec, config)

    def lower(self, *args, config=None, **kwargs):
        """Specialize and run the pass pipeline; returns the post-pass `ir.Program` and
        writes nothing."""
        self._need_entry("lowered")
        spec, _ = self._build(args, kwargs, allow_runtime=True)
        from pypto.ir.compiling import lower_jit
        return lower_jit(spec, config=config)

    def spec(self, *args, **kwargs) -> dict:
        """The specialization spec (JSON data) for these arguments (what specialize reads)."""
        self._need_entry("specialized")
        return self._build(args, kwargs, allow_runtime=True)[0]

    def specialize(self, *args, **kwargs) -> str:
        """The `@pl.program` source text for these arguments."""
        from pypto.jit.specialize import specialize
        return specialize(self.spec(*args, **kwargs))

    def cache_key(self, *args, config=None, **kwargs) -> str:
        """The specialization key a compile() with these arguments and config uses."""
        self._need_entry("specialized")
        spec, _ = self._build(args, kwargs, allow_runtime=True)
        return cache_key(spec, config)

    def cache_clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._calls.clear()

    # ------------------------------------------------------------------ internals
    def _need_entry(self, what: str):
        if self.kind != "orchestration":
            raise TypeError(f"`{self.__name__}` is a @pl.jit.{self.kind} function; it is "
                            f"called from a @pl.jit entry, not {what} on its own")

    def _compile(self, spec: dict, config, key: str | None = None):
        key = key if key is not None else cache_key(spec, config)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
            from pypto.ir.compiling import compile_jit
            compiled = compile_jit(spec, config=config)
            self._cache[key] = compiled
            return compiled

    def _source(self) -> dict:
        """Source text (dedented), file base name, first line, indent removed, AST."""
        if self._src is None:
            try:
                lines, first = inspect.getsourcelines(self.fn)
            except (OSError, TypeError) as e:
                raise ParserError(f"cannot read the source of `{self.__name__}`: {e}",
                                  hint="@pl.jit functions must be defined in a .py file") from None
            indent = lines[0][:len(lines[0]) - len(lines[0].lstrip(" \t"))]
            out = []
            for line in lines:
                if line.startswith(indent):
                    out.append(line[len(indent):])
                else:
                    out.append(line.lstrip(" \t") if line.strip() else "\n")
            source = "".join(out)
            path = inspect.getsourcefile(self.fn) or self.fn.__code__.co_filename
            tree = A.parse_function(source)
            self._src = {"source": source, "file": os.path.basename(path), "line": first,
                         "col_offset": len(indent), "tree": tree,
                         "locals": A.local_names(tree), "called": A.called_names(tree),
                         "loaded": A.loaded_names(tree), "local_dyns": A.local_dynamics(tree),
                         "binds": A.bind_dynamics(tree)}
        return self._src

    def _call_span(self, name: str) -> Span | None:
        """Where this function's source first calls `name`."""
        src = self._source()
        calls = [(n.lineno, n.col_offset) for n in ast.walk(src["tree"])
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
        line, col = min(calls) if calls else (1, 0)
        return Span(src["file"], src["line"] + line - 1, src["col_offset"] + col + 1)

    def _resolve(self, name: str):
        code = self.fn.__code__
        if name in code.co_freevars and self.fn.__closure__:
            try:
                return self.fn.__closure__[code.co_freevars.index(name)].cell_contents
            except ValueError:            # empty cell
                return _MISSING
        return self.fn.__globals__.get(name, _MISSING)

    def _deps(self) -> tuple[list["JITFunction"], dict[int, dict[str, str]]]:
        """Deps first (callees before callers), self last; and each one's call map."""
        order: list[JITFunction] = []
        calls: dict[int, dict[str, str]] = {}
        state: dict[int, int] = {}

        def visit(jf: JITFunction, chain: list[str]):
            state[id(jf)] = 1
            src = jf._source()
            cmap = {}
            for name in src["called"]:
                if name in src["locals"]:
                    continue
                obj = jf._resolve(name)
                if not isinstance(obj, JITFunction):
                    continue
                if obj is jf or state.get(id(obj)) == 1:
                    path = chain + [jf.__name__, obj.__name__]
                    if obj is not jf:
                        path = path[path.index(obj.__name__):]
                    how = "itself" if obj is jf else "itself through " + " -> ".join(path)
                    raise ParserError(f"recursion is not supported: `{obj.__name__}` calls {how}",
                                      jf._call_span(name),
                                      "a @pl.jit function cannot call itself, directly or through "
                                      "other functions: repeat work with a pl.range / pl.unroll "
                                      "loop, or split it into separate kernels")
                if obj.kind == "orchestration":
                    raise JitCallError(f"`{jf.__name__}` calls `{name}`, a @pl.jit entry; only "
                                       f"@pl.jit.incore / @pl.jit.inline functions can be called "
                                       f"from a @pl.jit function", jf._call_span(name),
                                       f"decorate `{name}` with @pl.jit.incore (a kernel) or "
                                       f"@pl.jit.inline (spliced into its caller)")
                cmap[name] = obj.__name__
                if id(obj) not in state:
                    visit(obj, chain + [jf.__name__])
            calls[id(jf)] = cmap
            state[id(jf)] = 2
            order.append(jf)

        visit(self, [])
        seen: dict[str, JITFunction] = {}
        for jf in order:
            other = seen.setdefault(jf.__name__, jf)
            if other is not jf:
                raise TypeError(f"two @pl.jit functions named `{jf.__name__}` are used by "
                                f"`{self.__name__}` ({other.__qualname__} in {other.__module__}"
                                f" and {jf.__qualname__} in {jf.__module__}); rename one")
        return order, calls

    def _globals_of(self) -> tuple[dict, dict]:
        """Module constants and dynamic dims this function's source reads."""
        src = self._source()
        consts, dyns = {}, {}
        for name in src["loaded"]:
            if name in src["locals"]:
                continue
            obj = self._resolve(name)
            if obj is _MISSING or isinstance(obj, JITFunction):
                continue
            dyn = _dyn_name(obj)
            if dyn is not None:
                dyns[name] = dyn
                continue
            value = _constant(obj)
            if value is not None:
                consts[name] = value
        return consts, dyns

    def _build(self, args, kwargs, allow_runtime: bool):
        """(spec, the argument values to run with, in parameter order)."""
        fns, calls = self._deps()
        functions, dynamic, constants = [], {}, {}
        per_fn = []
        for jf in reversed(fns):               # the entry's own globals win name clashes
            c, d = jf._globals_of()
            per_fn.append((jf, c))
            for k, v in d.items():
                if dynamic.setdefault(k, v) != v:
                    raise TypeError(f"`{k}` names two different dynamic dims "
                                    f"(\"{dynamic[k]}\" and \"{v}\") in `{self.__name__}` "
                                    f"and its deps")
            for k, v in c.items():
                constants.setdefault(k, v)
        own = {id(jf): {k: v for k, v in c.items() if _canon(v) != _canon(constants[k])}
               for jf, c in per_fn}
        for jf in fns:
            check_name(jf.__name__, f"the @pl.jit{'' if jf.kind == 'orchestration' else '.' + jf.kind} "
                                    f"function {jf.__qualname__!r}")
            src = jf._source()
            entry = {"name": jf.__name__, "kind": jf.kind, "source": src["source"],
                     "file": src["file"], "line": src["line"], "col_offset": src["col_offset"]}
            if jf.options:
                entry["options"] = dict(jf.options)
            entry["calls"] = calls[id(jf)]
            if own[id(jf)]:
                entry["constants"] = own[id(jf)]
            functions.append(entry)
        arg_spec, ordered = self._bind(args, kwargs, allow_runtime, dynamic)
        spec = {"program": f"_jit_{self.__name__}", "functions": functions, "args": arg_spec,
                "dynamic": dict(sorted(dynamic.items())),
                "constants": dict(sorted(constants.items()))}
        return spec, ordered

    def _bind(self, args, kwargs, allow_runtime, dynamic):
        sig = inspect.signature(self.fn)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"`{self.__name__}`: @pl.jit functions cannot take *args or "
                                f"**kwargs")
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError as e:                         # Python's own message, named
            hint = ""
            if "unexpected keyword argument" in str(e):
                hint = "; compile options travel in config=RunConfig(...)"
            raise TypeError(f"{self.__name__}() {e}{hint}") from None
        src = self._source()
        anns = {p.arg: A.classify_annotation(p.annotation) for p in A.params(src["tree"])}
        dyns = dict(dynamic)
        dyns.update(src["local_dyns"])
        arg_spec, run_args, omitted_out = {}, [], []
        extents: dict[str, tuple[int, str]] = {}     # dynamic dim -> (size, first argument)
        for name, p in sig.parameters.items():
            ann = anns[name]
            if name in bound.arguments:
                value = bound.arguments[name]
            elif p.default is not p.empty:
                value = p.default
            else:
                value = _MISSING
            arg_spec[name] = self._classify(name, ann, value, allow_runtime, dyns, extents)
            if value is _MISSING:
                if ann.direction == "Out":
                    omitted_out.append(name)
                else:
                    run_args.append((name, _MISSING))
            else:
                run_args.append((name, value))
        for name, d, dyn in src["binds"]:
            meta = arg_spec.get(name)
            if meta and meta["kind"] == "tensor" and 0 <= d < len(meta["shape"]) and dyn in dyns:
                meta["shape"][d] = dyn
        if not allow_runtime:
            missing = [n for n, v in run_args if v is _MISSING]
            if missing:
                raise TypeError(f"{self.__name__}() missing required argument"
                                f"{'s' if len(missing) > 1 else ''}: "
                                + ", ".join(f"'{m}'" for m in missing))
            given_out = [n for n, _ in run_args if anns[n].direction == "Out"]
            if omitted_out and given_out:
                raise TypeError(f"{self.__name__}(): pass every Out parameter "
                                f"({', '.join(given_out + omitted_out)}) or none of them")
        return arg_spec, [v for _, v in run_args if v is not _MISSING]

    def _classify(self, name, ann: A.Ann, value, allow_runtime, dyns, extents) -> dict:
        fname = self.__name__
        if value is RUNTIME:
            if not allow_runtime:
                raise TypeError(f"{fname}(): pl.RUNTIME marks a scalar parameter in "
                                f"compile()/lower(); a call passes the value itself")
            if ann.kind == "tensor":
                raise TypeError(f"{fname}(): pl.RUNTIME is for scalar parameters; "
                                f"'{name}' is a tensor")
            dtype = ann.dtype if ann.kind == "scalar" else None
            if dtype is None:
                raise TypeError(f"{fname}(): '{name}' needs a scalar dtype annotation "
                                f"(e.g. {name}: pl.INDEX) to stay a runtime scalar")
            return {"kind": "scalar", "dtype": dtype, "value": None}
        if value is _MISSING:
            if ann.kind == "tensor" and not ann.bare:
                return self._annotated_tensor(name, ann, dyns)
            if ann.kind == "scalar":
                raise TypeError(f"{fname}() missing scalar argument '{name}': pass a value "
                                f"or pl.RUNTIME")
            if ann.direction == "Out":
                raise TypeError(f"{fname}() missing Out argument '{name}': returning outputs "
                                f"needs their shape, and a bare pl.Tensor annotation has none; "
                                f"pass the output tensor or annotate it fully "
                                f"(pl.Out[pl.Tensor[[rows, cols], pl.FP32]])")
            raise TypeError(f"{fname}() missing required argument: '{name}' (a bare "
                            f"pl.Tensor annotation takes its shape from a sample tensor)")
        try:
            info = _tensor_info(value)
        except _UnsupportedDtype as e:
            raise TypeError(f"{fname}(): '{name}' has dtype {e.name}: {e} (convert it first, "
                            f"e.g. .float() for float32)") from None
        if info is not None:
            if ann.kind == "scalar":
                raise TypeError(f"{fname}(): '{name}' is a scalar parameter, got a tensor")
            shape, dtype = info
            if ann.kind == "tensor" and not ann.bare and len(ann.shape) == len(shape):
                for i, node in enumerate(ann.shape):
                    dyn = self._dim_dyn(node, dyns)
                    if dyn is not None:
                        # one dynamic dim has one size per call, whichever tensor shows it
                        size, first = extents.setdefault(dyn, (shape[i], name))
                        if size != shape[i]:
                            raise TypeError(
                                f"{fname}(): dynamic dim '{dyn}' is {size} for '{first}' but "
                                f"{shape[i]} for '{name}'; tensors that share a pl.dynamic dim "
                                f"must agree on its size in a call (use two dims if they differ)")
                        shape[i] = dyn
            return {"kind": "tensor", "shape": shape, "dtype": dtype}
        if _is_scalar(value):
            if ann.kind == "tensor":
                raise TypeError(f"{fname}(): '{name}' is a tensor parameter, got "
                                f"{type(value).__name__} {value!r}")
            dtype = ann.dtype if ann.kind == "scalar" else None
            if dtype is None:
                dtype = "bool" if _is_bool(value) else (
                    "index" if isinstance(value, numbers.Integral) else "fp32")
            return {"kind": "scalar", "dtype": dtype, "value": _coerce(fname, name, value, dtype)}
        raise TypeError(f"{fname}(): cannot pass {type(value).__name__} as '{name}'; expected "
                        f"a torch tensor, a numpy array or a Python scalar")

    def _dim_dyn(self, node, dyns) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in dyns:
                return node.id
            dyn = _dyn_name(self._resolve(node.id))
            if dyn is not None:
                return node.id
        return None

    def _annotated_tensor(self, name, ann: A.Ann, dyns) -> dict:
        dims = []
        for node in ann.shape:
            dyn = self._dim_dyn(node, dyns)
            if dyn is not None:
                dims.append(dyn)
                continue
            value = self._eval_int(node)
            if value is None:
                raise TypeError(f"{self.__name__}(): cannot read dim `{ast.unparse(node)}` "
                                f"of the annotation of '{name}'; pass a sample tensor")
            dims.append(value)
        dtype = ann.dtype
        if dtype is None:
            inner = ann.inner.slice.elts[1] if isinstance(ann.inner, ast.Subscript) else None
            obj = self._resolve(inner.id) if isinstance(inner, ast.Name) else None
            dtype = obj.text if isinstance(obj, _dt.DataType) else None
            if dtype is None:
                raise TypeError(f"{self.__name__}(): cannot read the dtype of the annotation "
                                f"of '{name}'; pass a sample tensor")
        return {"kind": "tensor", "shape": dims, "dtype": dtype}

    def _eval_int(self, node):
        from pypto.jit.literals import _NO, _const
        consts = {}
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                obj = self._resolve(n.id)
                if type(obj) is int:
                    consts[n.id] = obj
        v = _const(node, consts)
        return v if v is not _NO and type(v) is int else None


# ----------------------------------------------------------------------------- helpers
def _run(compiled, ordered, config):
    if config is None:
        return compiled(*ordered)
    if getattr(config, "codegen_only", False):         # compiled, not run
        return compiled
    if type(compiled).__name__ == "CompiledProgram":      # (its __call__ takes config)
        return compiled(*ordered, config=config)
    try:
        ps = inspect.signature(compiled).parameters.values()
        accepts = any(p.name == "config" or p.kind is p.VAR_KEYWORD for p in ps)
    except (TypeError, ValueError):
        accepts = False
    return compiled(*ordered, config=config) if accepts else compiled(*ordered)


class _UnsupportedDtype(TypeError):
    def __init__(self, name: str):
        super().__init__(f"tensors of dtype {name} are not supported; use one of "
                         f"{', '.join(sorted(_TENSOR_DTYPES))}")
        self.name = name


def _tensor_info(x) -> tuple[list, str] | None:
    """(shape, dtype text) of a torch tensor, numpy array or device tensor; else None."""
    if isinstance(x, (str, bytes, numbers.Number)) or not hasattr(x, "shape") \
            or not hasattr(x, "dtype"):
        return None
    mod = type(x).__module__ or ""
    dtype = x.dtype
    if isinstance(dtype, _dt.DataType):
        text = dtype.text
    else:
        name = str(dtype)
        if mod.startswith("torch") or name.startswith("torch."):
            name = name[len("torch."):] if name.startswith("torch.") else name
        text = _TENSOR_DTYPES.get(name)
        if text is None and name in {d.text for d in _dt.ALL}:
            text = name
        if text is None:
            raise _UnsupportedDtype(name)
    try:
        shape = [int(d) for d in x.shape]
    except (TypeError, ValueError):
        return None
    return shape, text


def _is_bool(v) -> bool:
    return isinstance(v, bool) or type(v).__name__ in ("bool_", "bool8")


def _is_scalar(v) -> bool:
    return _is_bool(v) or isinstance(v, numbers.Real)


def _coerce(fname, name, value, dtype):
    d = A.dtype_by_text(dtype)
    if dtype == "bool":
        return bool(value)
    if d.is_float:
        return float(value)
    if _is_bool(value) or (isinstance(value, numbers.Integral)):
        return int(value)
    f = float(value)
    if f.is_integer():
        return int(f)
    raise TypeError(f"{fname}(): '{name}' is a {dtype} scalar, got {value!r}")


def _dyn_name(obj) -> str | None:
    """The dim name of a `pl.dynamic("M")` object, recognised without importing the
    language package."""
    from pypto.ir.nodes import DynDim
    if isinstance(obj, DynDim):
        return obj.name
    if type(obj).__name__ in ("DynVar", "DynDim", "DynamicDim", "Dynamic") \
            and isinstance(getattr(obj, "name", None), str):
        return obj.name
    return None


def _constant(obj):
    """A module-level value the specializer may write into the program, as JSON data."""
    if type(obj) in (int, float, bool):
        return obj
    if isinstance(obj, _dt.DataType):
        return {"dtype": obj.text}
    if type(obj) in (list, tuple) and obj:
        items = [_constant(x) for x in obj]
        if all(i is not None and not isinstance(i, dict) for i in items):
            return items
    return None


def _canon(v) -> str:
    return json.dumps(v, sort_keys=True, default=_json_default)


def _json_default(v):
    if isinstance(v, enum.Enum):
        return v.name
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    if isinstance(v, (set, frozenset)):
        return sorted(map(repr, v))
    name = getattr(v, "name", None)
    return name if isinstance(name, str) else repr(v)


def compile_options(config) -> dict:
    """The fields of a RunConfig that decide what gets compiled (run-only ones left out)."""
    if config is None:
        return {}
    if dataclasses.is_dataclass(config):
        items = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    elif isinstance(config, dict):
        items = dict(config)
    else:
        items = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    return {k: v for k, v in sorted(items.items()) if k not in _RUN_ONLY}


def cache_key(spec: dict, config=None) -> str:
    """Digest of what one compile depends on: the sources of the entry and its deps (and
    where they sit, since locations reach the artifacts), the platform, the tensor shapes
    (dynamic dims by name, not size) and dtypes, scalar values, module constants and the
    compile options of the config."""
    platform = getattr(config, "platform", None) if config is not None else None
    blob = _canon({"spec": spec, "platform": platform, "options": compile_options(config)})
    return hashlib.sha256(blob.encode()).hexdigest()
