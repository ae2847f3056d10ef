"""`@pl.jit`: kernels specialized on the shapes and dtypes of their arguments.

`jit` is what the language package exposes as `pl.jit`; `RUNTIME` is `pl.RUNTIME`.
`specialize(spec)` is the pure build-graph stage that turns a spec into `@pl.program`
source text. Importing this package never imports torch.
"""
from pypto.jit.decorator import RUNTIME, JITFunction, cache_key, jit
from pypto.jit.specialize import SpecializeError, specialize

__all__ = ["jit", "JITFunction", "RUNTIME", "specialize", "SpecializeError", "cache_key"]
