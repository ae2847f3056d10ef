"""Import doit without paying for the modules our runs never use.

doit imports at module level, for features our runs do not use: `importlib.metadata`
(to scan installed plugins' entry points), `multiprocessing` and `cloudpickle` (to
run tasks in worker processes), `pdb` (post-mortem debugging), `hashlib` (checksums
of file dependencies), `datetime` (its JSON reporter's timestamps) and `configparser`
(doit.cfg files). Our runs name their own loader, backend and reporter, run tasks on
threads and have no file dependencies; in a fresh process those modules cost 30-45 ms,
more than half of what the passes and PTO printing of an 8-kernel program cost.
`load()` imports doit with a stand-in for each in `sys.modules`: a module that loads
the real one on first use of any attribute, so code that does use them (a `doit`
command line with plugins or file dependencies, process mode) behaves exactly as
before. The stand-ins leave `sys.modules` once doit is imported; later imports of
those modules get the real ones.
"""
from __future__ import annotations

import sys
import threading
import types

# module -> the names doit takes from it while it is imported (`from m import name`)
_LAZY = {"importlib.metadata": ("entry_points",), "cloudpickle": ("dumps",),
         "multiprocessing": ("Process", "Queue"), "pdb": (), "hashlib": (), "datetime": (),
         "configparser": ("ConfigParser",)}
_lock = threading.Lock()


class _StandIn(types.ModuleType):
    """Forwards every attribute to the real module, importing it on first use."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_real"] = None
        for attr in _LAZY[name]:                 # bound now, resolved when called
            self.__dict__[attr] = _forward(self, attr)

    def _load(self):
        real = self.__dict__["_real"]
        if real is None:
            with _lock:
                if sys.modules.get(self.__name__) is self:
                    del sys.modules[self.__name__]
                real = self.__dict__["_real"] = _import_real(self.__name__)
        return real

    def __getattr__(self, attr):
        if attr == "__path__":    # asked by every `from ... import`: not a package here
            raise AttributeError(attr)
        return getattr(self._load(), attr)


def _import_real(name: str):
    # literal imports: a computed one would put the whole project in the import
    # closure of every stage whose code reaches this module (pipeline/closure.py)
    if name == "importlib.metadata":
        import importlib.metadata as real
    elif name == "cloudpickle":
        import cloudpickle as real
    elif name == "multiprocessing":
        import multiprocessing as real
    elif name == "pdb":
        import pdb as real
    elif name == "hashlib":
        import hashlib as real
    elif name == "datetime":
        import datetime as real
    else:
        import configparser as real
    return real


def _forward(stand_in: _StandIn, attr: str):
    def call(*args, **kwargs):
        return getattr(stand_in._load(), attr)(*args, **kwargs)
    call.__name__ = call.__qualname__ = attr
    return call


def load():
    """`import doit`, with the stand-ins in place while it runs; returns the package."""
    if "doit" in sys.modules:
        return sys.modules["doit"]
    placed = []
    with _lock:
        for name in _LAZY:
            if name not in sys.modules:
                sys.modules[name] = stand_in = _StandIn(name)
                placed.append(name)
                parent, _, child = name.rpartition(".")
                if parent:      # what `import importlib.metadata` then reads; it forwards,
                    setattr(sys.modules[parent], child, stand_in)   # so it may stay
    try:
        import doit
        import doit.runner  # noqa: F401  (imports cloudpickle)
    finally:
        with _lock:
            for name in placed:
                if isinstance(sys.modules.get(name), _StandIn):
                    del sys.modules[name]
    return doit
