"""pypto.runtime.TensorSpec / ScalarSpec: inputs described by name, shape, dtype and how to
fill them (PyPTO's model examples build their tensors with them)."""
import pytest
import torch

from pypto.runtime import ScalarSpec, TensorSpec


def test_each_way_of_filling_a_tensor():
    assert torch.equal(TensorSpec("z", [2, 3], torch.float32).create_tensor(), torch.zeros(2, 3))
    assert torch.equal(TensorSpec("c", [2], torch.int32, init_value=7).create_tensor(),
                       torch.tensor([7, 7], dtype=torch.int32))
    t = TensorSpec("r", [4, 4], torch.bfloat16, init_value=torch.randn).create_tensor()
    assert t.shape == (4, 4) and t.dtype is torch.bfloat16
    given = TensorSpec("g", [3], torch.float16, init_value=torch.tensor([1.0, 2.0, 3.0])).create_tensor()
    assert given.dtype is torch.float16 and given.tolist() == [1.0, 2.0, 3.0]
    made = TensorSpec("f", [2], torch.int64, init_value=lambda: [4, 5]).create_tensor()
    assert made.tolist() == [4, 5] and made.dtype is torch.int64
    assert TensorSpec("o", [1], torch.float32, is_output=True).is_output
    with pytest.raises(TypeError, match="init_value str"):
        TensorSpec("bad", [1], torch.float32, init_value="x").create_tensor()


def test_a_scalar_spec_names_a_known_c_type():
    assert ScalarSpec("n", 3).ctype == "int64"
    with pytest.raises(ValueError, match="ctype 'short'"):
        ScalarSpec("n", 3, ctype="short")
