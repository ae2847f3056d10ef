"""`from pypto.ir.pass_manager import OptimizationStrategy`: where the reference's
programs import the strategy enum from (the same enum as `ir.OptimizationStrategy`)."""
from pypto.ir.options import OptimizationStrategy

__all__ = ["OptimizationStrategy"]
