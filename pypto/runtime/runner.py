"""`from pypto.runtime.runner import RunConfig, RunResult, run`: the reference's import
path for the run configuration and the compile-run-check helper."""
from pypto.runtime.config import RunConfig
from pypto.runtime.harness import RunResult, run

__all__ = ["RunConfig", "RunResult", "run"]
