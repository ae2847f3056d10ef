"""The DSL parser: reads the Python AST of kernels (never runs them) and builds IR."""
from pypto.language.parser.entry import FunctionMarker, function, loads, parse, program

__all__ = ["FunctionMarker", "function", "loads", "parse", "program"]
