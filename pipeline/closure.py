"""Which source files decide a stage's output: the static import closure of its
modules inside the project, and the `#include "..."` closure of the headers it
compiles with.

A pure function of a source tree (package name -> folder), so a test can edit a copy
of the tree and recompute. Conservative on purpose:
- an import anywhere in a module counts, also in a function body (lazy imports);
- importing a submodule counts its parent packages' __init__.py (they run first);
- `from pkg import name` counts pkg.name when that is a module;
- `importlib.import_module(...)` / `__import__(...)` with a literal name counts that
  module (`__name__` and `__package__` are known literals); with a computed name it
  counts every module its literal prefix can name (an f-string's leading text;
  nothing literal: the whole project), unless the caller binds that prefix to the
  modules it knows are loaded (see `closure`).
Nothing is imported or executed: files are read and parsed.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from pypto_cache import digest_bytes as file_digest   # a file's digest is its object digest

# import name -> folder under the project root
PACKAGES = {"pypto": "pypto", "pypto_pipeline": "pipeline", "pypto_cache": "cache"}
_INCLUDE = re.compile(rb'^\s*#\s*include\s+"([^"]+)"', re.M)


@dataclass(frozen=True)
class Facts:
    """What one file contributes: its content digest and what it pulls in. For a
    module: absolute module names it imports (some `pkg.name` may be plain names,
    resolved later) and literal prefixes of computed imports. For a header: the
    quoted file names it includes."""
    digest: str
    imports: tuple[str, ...] = ()
    dynamic: tuple[str, ...] = ()


def python_facts(data: bytes, module: str, is_package: bool) -> Facts:
    package = module if is_package else module.rpartition(".")[0]
    imports: set[str] = set()
    dynamic: set[str] = set()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        # cannot be imported as it stands, so it imports nothing; its bytes still count
        return Facts(file_digest(data))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            if base:
                imports.add(base)
                imports.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            name, whole = _leading_text(node.args[0], {"__name__": module, "__package__": package})
            if not whole:
                dynamic.add(name)
            elif name.startswith("."):
                stripped = name.lstrip(".")
                imports.add(_absolute(stripped, len(name) - len(stripped), package))
            else:
                imports.add(name)
    return Facts(file_digest(data), tuple(sorted(imports)), tuple(sorted(dynamic)))


def header_facts(data: bytes) -> Facts:
    names = sorted({m.decode() for m in _INCLUDE.findall(data)})
    return Facts(file_digest(data), tuple(names))


def _absolute(module: str, level: int, package: str) -> str:
    if level == 0:
        return module
    parts = package.split(".")
    if level - 1 >= len(parts):
        return ""                  # beyond the top: would fail at import time
    base = ".".join(parts[:len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def _is_import_call(func) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("import_module", "__import__")


def _leading_text(arg, known: dict[str, str]) -> tuple[str, bool]:
    """The text a module-name expression starts with, and whether that is all of it:
    literals, f-strings and `+` of them, with the module's own `__name__` and
    `__package__` known. f"{__name__}.{where}" in pypto.runtime -> ("pypto.runtime.",
    False); a name computed from anything else -> ("", False): every module."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value, True
    if isinstance(arg, ast.Name) and arg.id in known:
        return known[arg.id], True
    if isinstance(arg, ast.JoinedStr):
        out = []
        for v in arg.values:
            if isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None:
                v = v.value
            text, whole = _leading_text(v, known)
            out.append(text)
            if not whole:
                return "".join(out), False
        return "".join(out), True
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
        left, whole = _leading_text(arg.left, known)
        if not whole:
            return left, False
        right, whole = _leading_text(arg.right, known)
        return left + right, whole
    return "", False


class ContentFacts:
    """Facts from reading each file, memoised by content (an edited file is re-read
    and re-parsed; an unchanged one only re-read and re-hashed)."""

    def __init__(self):
        self._memo: dict[tuple, Facts] = {}

    def facts(self, path: Path, module: str | None) -> Facts:
        data = path.read_bytes()
        key = (module, path.name == "__init__.py", file_digest(data))
        got = self._memo.get(key)
        if got is None:
            got = header_facts(data) if module is None else \
                python_facts(data, module, path.name == "__init__.py")
            self._memo[key] = got
        return got


class Tree:
    """The project's source tree: the packages' folders and where their files'
    facts come from (`ContentFacts`, or a stat-validated index)."""

    def __init__(self, packages: dict[str, Path], facts=None):
        self.packages = {k: Path(v) for k, v in packages.items()}
        self.source = facts if facts is not None else ContentFacts()
        self._files: dict[str, Path | None] = {}
        self._facts: dict[Path, Facts] = {}     # a Tree is a snapshot: each file read once
        self._labels: dict[Path, str] = {}
        self._edges: dict[Path, list[str]] = {}
        self._modules: list[str] | None = None

    @classmethod
    def at(cls, root, facts=None) -> "Tree":
        return cls({name: Path(root) / folder for name, folder in PACKAGES.items()}, facts)

    # -- names and files
    def file_of(self, module: str) -> Path | None:
        """The file that defines a project module, None if it is not one."""
        if module not in self._files:
            top, _, rest = module.partition(".")
            path = None
            if top in self.packages:
                base = self.packages[top].joinpath(*rest.split(".")) if rest else self.packages[top]
                for cand in (base / "__init__.py", base.with_name(base.name + ".py")):
                    if cand.is_file():
                        path = cand
                        break
            self._files[module] = path
        return self._files[module]

    def label(self, path: Path) -> str:
        """A file's name independent of where the tree lives: pypto_pipeline/graph.py."""
        got = self._labels.get(path)
        if got is None:
            got = path.name
            for name, folder in self.packages.items():
                if path.is_relative_to(folder):
                    got = f"{name}/{path.relative_to(folder).as_posix()}"
                    break
            self._labels[path] = got
        return got

    def modules(self, prefix: str = "") -> list[str]:
        """Every project module whose name starts with prefix."""
        if self._modules is None:
            self._modules = []
            for name, folder in self.packages.items():
                for p in sorted(folder.rglob("*.py")):
                    if "__pycache__" in p.parts:
                        continue
                    rel = p.relative_to(folder).with_suffix("").parts
                    self._modules.append(".".join((name,) + (rel[:-1] if rel[-1] == "__init__"
                                                             else rel)))
        return [m for m in self._modules if m.startswith(prefix)]

    def facts(self, path: Path, module: str | None = None) -> Facts:
        got = self._facts.get(path)
        if got is None:
            got = self._facts[path] = self.source.facts(path, module)
        return got

    def digest(self, path: Path, module: str | None = None) -> str:
        return self.facts(path, module).digest

    # -- closures
    def closure(self, roots, bind: dict[str, list[str]] | None = None) -> dict[Path, str]:
        """Files of the modules `roots` (and their parents) import, transitively,
        as file -> module name. `bind` maps a computed-import prefix to the modules
        the caller knows it loads (instead of every module under that prefix)."""
        bind = bind or {}
        seen: dict[Path, str] = {}
        done: set[str] = set()
        todo = list(roots)
        while todo:
            mod = todo.pop()
            if mod in done:
                continue
            done.add(mod)
            parent = mod.rpartition(".")[0]
            if parent:                      # parents run first
                todo.append(parent)
            path = self.file_of(mod)        # None: not a project module (or a plain name)
            if path is None:
                continue
            seen[path] = mod
            f = self.facts(path, mod)
            todo.extend(self._project_imports(path, f))
            for prefix in f.dynamic:
                todo.extend(bind[prefix] if prefix in bind else self.modules(prefix))
        return seen

    def _project_imports(self, path: Path, f: Facts) -> list[str]:
        got = self._edges.get(path)
        if got is None:
            got = self._edges[path] = [m for m in f.imports if m.partition(".")[0] in self.packages]
        return got

    def includes(self, roots) -> list[Path]:
        """Headers `roots` (paths) include with `#include "..."`, transitively:
        looked up next to the including file (the compilers' rule for quotes)."""
        seen: list[Path] = []
        todo = [Path(r) for r in roots]
        while todo:
            path = todo.pop()
            if path in seen or not path.is_file():
                continue
            seen.append(path)
            todo.extend(path.parent / n for n in self.facts(path, None).imports)
        return sorted(seen)
