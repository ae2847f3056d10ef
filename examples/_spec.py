"""A stand-in for a tensor argument: shape and dtype are all specialisation reads, so
the build graph can be laid out without importing torch."""
from dataclasses import dataclass


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple
    dtype: object
