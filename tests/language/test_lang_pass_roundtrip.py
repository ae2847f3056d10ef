"""Every pass's output prints as DSL that parses back to an equal program (the
ROUNDTRIP verification level relies on this). Passes are other modules' work: a pass
that rejects a program skips, a round trip that breaks fails."""
import importlib

import pytest

import lang_programs as lp
import pypto.language as pl
from pypto.errors import PyptoError
from pypto.ir.equal import assert_structural_equal


@pytest.mark.parametrize("build", lp.ALL, ids=lambda b: b.__name__)
def test_each_pass_output_roundtrips(build):
    try:
        passes = importlib.import_module("pypto.passes")
        base = importlib.import_module("pypto.passes.base")
    except ImportError:
        pytest.skip("pypto.passes is not available")
    opts = base.PassOptions()
    prog = build()
    for p in passes.pipeline(opts):
        try:
            prog = passes.run_pass(p, prog, opts, verify=False)
        except PyptoError as e:
            pytest.skip(f"{p.name} rejects {build.__name__}: {e.message}")
        text = prog.as_python()
        again = pl.parse(text, filename="<ir>")
        assert_structural_equal(prog, again)
        assert again.as_python() == text, p.name
