"""pypto.backend's process-wide backend (the reference's set_backend_type): what passes
run directly plan against when given no backend; set once, the same again is a no-op,
another is refused until reset_for_testing()."""
import pytest

from pypto import backend
from pypto.backend import BackendType
from pypto.passes.base import PassOptions


@pytest.fixture(autouse=True)
def fresh():
    backend.reset_for_testing()
    yield
    backend.reset_for_testing()


def test_passes_plan_against_the_configured_backend():
    assert not backend.is_backend_configured() and PassOptions().backend_type is BackendType.Ascend910B
    with pytest.raises(ValueError, match="no backend is configured"):
        backend.get_backend_type()
    backend.set_backend_type(BackendType.Ascend950)
    backend.set_backend_type(BackendType.Ascend950)            # the same again: fine
    assert backend.get_backend_type() is BackendType.Ascend950
    assert PassOptions().backend_type is BackendType.Ascend950 and PassOptions().chip.arch == "a5"
    assert PassOptions(backend_type=BackendType.Ascend910B).chip.arch == "a2a3"
    with pytest.raises(ValueError, match="cannot change to Ascend910B"):
        backend.set_backend_type(BackendType.Ascend910B)
    backend.reset_for_testing()
    backend.set_backend_type(BackendType.Ascend910B)
    assert PassOptions().chip.arch == "a2a3"
