"""Code generators: post-pass IR -> `.pto` per kernel, C++ host orchestration,
kernel_config.py and compiled_meta.json.

Each generator is a pure function of the Program (text out, no file system). Its
module's `IMPL_FILES` lists the source files that implement it, for build keys.
"""
from __future__ import annotations

from pypto.codegen import config as _config
from pypto.codegen import orchestration as _orchestration
from pypto.codegen import pto as _pto
from pypto.codegen.config import (assign_kernel_ids, compiled_meta_text, core_type,
                                  default_kernel_entries, kernel_config_text)
from pypto.codegen.orchestration import generate_orchestration
from pypto.codegen.pto import generate_kernel, generate_kernels, ptoas_level

IMPL_FILES = {"pto": _pto.IMPL_FILES, "orchestration": _orchestration.IMPL_FILES,
              "config": _config.IMPL_FILES}

__all__ = ["IMPL_FILES", "assign_kernel_ids", "compiled_meta_text", "core_type",
           "default_kernel_entries", "generate_kernel", "generate_kernels",
           "generate_orchestration", "kernel_config_text", "ptoas_level"]
