"""What a SubWorker callback is given: `args`, one torch tensor per argument of its call,
views of the host tensors as they are when it runs (valid during the call).
`_tensor_from_continuous(args[i])` is the tensor, as PyPTO's callbacks write it."""
from __future__ import annotations


def _tensor_from_continuous(x):
    from .tensors import is_torch_tensor
    if not is_torch_tensor(x):
        raise TypeError(f"_tensor_from_continuous: expected a SubWorker argument (a torch tensor), got "
                        f"{type(x).__name__}")
    return x


__all__ = ["_tensor_from_continuous"]


def __getattr__(name: str):
    if name == "DistributedWorker":           # (where PyPTO's own code imports it from)
        from .distributed_worker import DistributedWorker
        return DistributedWorker
    raise AttributeError(name)
