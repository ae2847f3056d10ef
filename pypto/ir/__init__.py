"""`from pypto import ir`: the IR, `ir.compile`, and the enums of its parameters."""
from pypto.ir.nodes import (Program, Function, FunctionType, Level, Role, MemorySpace,
                            ParamDirection, ArgDir)
from pypto.ir.options import (PassDumpLevel, VerificationLevel, MemoryPlanner, RuntimeKind,
                              OptimizationStrategy, DiagnosticPhase, DiagnosticCheck)
from pypto.ir.printer import print_program as python_print

__all__ = ["Program", "Function", "FunctionType", "Level", "Role", "MemorySpace",
           "ParamDirection", "ArgDir", "PassDumpLevel", "VerificationLevel", "MemoryPlanner",
           "RuntimeKind", "OptimizationStrategy", "DiagnosticPhase", "DiagnosticCheck",
           "python_print", "compile", "CompiledProgram", "assert_structural_equal",
           "structural_equal", "serialize", "deserialize"]


def serialize(node) -> bytes:
    """A Program or Function as bytes: its DSL text (what pass dumps and the build graph's
    objects hold), UTF-8. deserialize(serialize(x)) is structurally equal to x."""
    return node.as_python().encode("utf-8")


def deserialize(data: bytes):
    """The Program or Function serialize() wrote."""
    from pypto.language import parse
    return parse(bytes(data).decode("utf-8"), filename="<serialized>")


def __getattr__(name):
    if name == "compile":
        from pypto.ir.compiling import compile
        return compile
    # kept lazy: CompiledProgram pulls in the runtime
    if name == "CompiledProgram":
        from pypto.runtime.compiled import CompiledProgram
        return CompiledProgram
    if name in ("assert_structural_equal", "structural_equal"):
        from pypto.ir import equal
        return getattr(equal, name)
    raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")
