"""TensorSpec / ScalarSpec: a named tensor (shape, torch dtype, how to fill it, whether
it is an output to check) and a named scalar argument, as PyPTO's model examples build
their inputs. torch is imported when a tensor is made, not with this module."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SCALAR_CTYPES = ("int64", "int32", "uint64", "uint32", "float", "double")


@dataclass
class TensorSpec:
    """init_value: None (zeros), a number (every element), a tensor (cast to dtype), a
    torch factory (torch.randn / rand / zeros / ones, called with the shape) or any
    callable returning the values."""
    name: str
    shape: list
    dtype: Any
    init_value: Any = None
    is_output: bool = False

    def create_tensor(self):
        import torch
        v = self.init_value
        if v is None:
            return torch.zeros(self.shape, dtype=self.dtype)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if isinstance(v, torch.Tensor):
                return v.to(dtype=self.dtype)
            if callable(v):
                if v in (torch.randn, torch.rand, torch.zeros, torch.ones):
                    return v(self.shape, dtype=self.dtype)
                return torch.as_tensor(v(), dtype=self.dtype)
            raise TypeError(f"TensorSpec {self.name!r}: init_value {type(v).__name__} is not a number, "
                            f"a tensor or a callable")
        return torch.full(self.shape, v, dtype=self.dtype)


@dataclass
class ScalarSpec:
    """A scalar argument: its value and C type (int64, int32, uint64, uint32, float, double)."""
    name: str
    value: Any
    ctype: str = "int64"

    def __post_init__(self):
        if self.ctype not in _SCALAR_CTYPES:
            raise ValueError(f"ScalarSpec {self.name!r}: ctype {self.ctype!r} is not one of "
                             f"{', '.join(_SCALAR_CTYPES)}")


__all__ = ["TensorSpec", "ScalarSpec"]
