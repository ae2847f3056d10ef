"""Code generators: post-pass IR -> `.pto` per kernel, C++ host orchestration,
kernel_config.py and compiled_meta.json.

Each generator is a pure function of the Program (text out, no file system). Build
keys cover a generator through its stage's import closure (pypto_pipeline.closure).
"""
from __future__ import annotations

from pypto.codegen.config import (assign_kernel_ids, compiled_meta_text, core_type,
                                  default_kernel_entries, kernel_config_text)
from pypto.codegen.orchestration import generate_orchestration
from pypto.codegen.pto import generate_kernel, generate_kernels, ptoas_level

__all__ = ["assign_kernel_ids", "compiled_meta_text", "core_type",
           "default_kernel_entries", "generate_kernel", "generate_kernels",
           "generate_orchestration", "kernel_config_text", "ptoas_level"]
