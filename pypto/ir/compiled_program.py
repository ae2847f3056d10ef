"""`from pypto.ir.compiled_program import CompiledProgram`: the reference's import path
for what `ir.compile` returns (the class lives in pypto.runtime.compiled)."""
from pypto.runtime.compiled import CompiledProgram

__all__ = ["CompiledProgram"]
