"""`from pypto.pypto_core.passes import MemoryPlanner`: the planner enum that
`ir.compile(memory_planner=...)` takes."""
from pypto.ir.options import MemoryPlanner

__all__ = ["MemoryPlanner"]
