"""`from pypto.ir.pass_manager import OptimizationStrategy, PassManager`: where the
reference's programs import them from. OptimizationStrategy is `ir.OptimizationStrategy`;
a PassManager runs a strategy's passes in memory, in order (what ir.compile runs as
graph tasks, without the graph: no dumps, no cache)."""
from __future__ import annotations

from pypto.ir.options import OptimizationStrategy

__all__ = ["OptimizationStrategy", "PassManager"]


class PassManager:
    def __init__(self, strategy=OptimizationStrategy.Default, *, memory_planner: str = "PYPTO",
                 l0c_double_buffer: bool = False, backend_type=None,
                 analyze_auto_scopes_for_deps: bool = False):
        self.strategy = OptimizationStrategy(strategy)
        from pypto.backend import BackendType
        from pypto.passes.base import PassOptions
        planner = getattr(memory_planner, "name", memory_planner)
        self.options = PassOptions(backend_type=BackendType(backend_type or BackendType.Ascend910B),
                                   memory_planner=str(planner).upper(),
                                   analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps,
                                   l0c_double_buffer=l0c_double_buffer)

    @classmethod
    def get_strategy(cls, strategy=OptimizationStrategy.Default, **options) -> "PassManager":
        return cls(strategy, **options)

    @property
    def passes(self) -> list[str]:
        """The names of the passes, in the order they run."""
        from pypto.passes import pipeline
        return [p.name for p in pipeline(self.options)]

    def run_passes(self, program, verify: bool = True):
        """The program after every pass (each verified unless verify=False)."""
        from pypto.passes import run_pipeline
        return run_pipeline(program, self.options, verify)
