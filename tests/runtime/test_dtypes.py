import struct

import numpy as np
import pytest
import torch

from pypto import dtype as dt
from pypto.runtime import dtypes


def test_scalar_bits():
    assert dtypes.scalar_bits(1.5, dt.FP32) == struct.unpack("<I", struct.pack("<f", 1.5))[0]
    assert dtypes.scalar_bits(-2.0, dt.FP16) == 0xC000
    assert dtypes.scalar_bits(1.0, dt.BF16) == 0x3F80
    assert dtypes.scalar_bits(-1, dt.INT32) == (1 << 64) - 1
    assert dtypes.scalar_bits(7, dt.INDEX) == 7
    assert dtypes.scalar_bits(True, dt.BOOL) == 1
    assert dtypes.scalar_bits(np.float32(0.5), dt.FP32) == 0x3F000000
    with pytest.raises(ValueError, match="fit"):
        dtypes.scalar_bits(300, dt.INT8)
    with pytest.raises(TypeError):
        dtypes.scalar_bits(1.5, dt.INT32)


def test_to_dtype_spellings():
    for spelling in ("fp32", "FP32", "f32", 0, dt.FP32, torch.float32, np.float32):
        assert dtypes.to_dtype(spelling) is dt.FP32
    assert dtypes.to_dtype("bfloat16") is dt.BF16 and dtypes.to_dtype(torch.bfloat16) is dt.BF16
    with pytest.raises(ValueError, match="fp32"):
        dtypes.to_dtype("float128")


def test_element_types():
    assert dtypes.torch_dtype(dt.BF16) is torch.bfloat16
    assert dtypes.numpy_dtype(dt.BF16) == np.uint16      # raw bf16 bits on the numpy side
    assert dtypes.accepts(dt.INDEX, dt.INT64) and not dtypes.accepts(dt.INT32, dt.INT64)
    assert dtypes.accepts(dt.UINT16, dt.INT16) and dtypes.accepts(dt.UINT32, dt.INT32)
    assert not dtypes.accepts(dt.INT16, dt.UINT16) and not dtypes.accepts(dt.UINT16, dt.INT32)
