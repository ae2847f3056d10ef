"""`from pypto.pypto_core import ir`: the names of the reference's native IR module
that its programs use, each ours (CoreType: the SoC model's core kinds)."""
from pypto.backend.soc import CoreType
from pypto.ir.nodes import Function, Program

__all__ = ["CoreType", "Function", "Program"]
