"""The key of a whole compile (served.program_key) covers the code of every stage a
device program's graph may run: an edit to any of them -- the external-kernel stage
too -- must miss the whole-compile cache instead of serving the old artifacts."""
from __future__ import annotations

import pytest

import pypto_pipeline.stages as stages
from pypto_pipeline import served
from pypto_pipeline.graph import STAGES
from pypto_pipeline.options import BuildOptions


@pytest.mark.parametrize("edited", [s for s in STAGES if s not in ("pass", "host")])
def test_an_edit_to_any_device_stage_changes_the_whole_compile_key(edited, monkeypatch):
    opts = BuildOptions()
    real = stages.stage_impl
    before = served.program_key("00" * 16, opts, False)
    monkeypatch.setattr(stages, "stage_impl",
                        lambda s, extra="": ("edited" if s == edited else "") + real(s, extra))
    assert served.program_key("00" * 16, opts, False) != before
