"""`from pypto.pypto_core.passes import MemoryPlanner`: the planner enum that
`ir.compile(memory_planner=...)` takes; `passes.l0_tile_chooser`: the cube's L0 tile
cost model (pypto/passes/l0_tile_chooser.py)."""
from pypto.ir.options import MemoryPlanner
from pypto.passes import l0_tile_chooser

__all__ = ["MemoryPlanner", "l0_tile_chooser"]
