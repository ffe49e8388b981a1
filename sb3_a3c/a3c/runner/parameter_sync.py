"""
Parameter exchange between machines: each machine sends what its workers changed since the last exchange
(a delta), the main process adds every machine's delta to the global parameters and sends them back.

No machine's update is lost: a machine that receives the global parameters keeps its own changes that
the main process has not added yet (``MachineParameters.exchange``). Only floating-point tensors travel
(parameters and e.g. BatchNorm running statistics); integer buffers stay per machine. They travel as one
flat float vector (``state_vector``), in ``floating_state`` order: one buffer for Ray to copy, not one per tensor.
"""

import numpy as np
import torch as th


def floating_state(module: th.nn.Module) -> dict[str, th.Tensor]:
    """
    The floating-point tensors of ``module``'s state dict (parameters and float buffers), by name, each once:
    a module reachable under several names (SB3's shared features extractor is also ``pi_features_extractor``
    and ``vf_features_extractor``) keeps its first name.
    """
    state: dict[str, th.Tensor] = {}
    seen: set[int] = set()
    for name, tensor in module.state_dict().items():
        if tensor.is_floating_point() and tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            state[name] = tensor
    return state


def state_vector(module: th.nn.Module, out: np.ndarray | None = None) -> np.ndarray:
    """``module``'s floating tensors, flattened one after the other into ``out`` (default: a new float32 array)."""
    tensors = list(floating_state(module).values())
    if out is None:
        out = np.empty(sum(tensor.numel() for tensor in tensors), dtype=np.float32)
    offset = 0
    for tensor in tensors:
        out[offset : offset + tensor.numel()] = tensor.detach().numpy().reshape(-1)
        offset += tensor.numel()
    return out


def _tensor_views(module: th.nn.Module, vector: np.ndarray) -> list[tuple[th.Tensor, np.ndarray]]:
    """Each floating tensor of ``module`` with its part of ``vector``, shaped as the tensor."""
    views, offset = [], 0
    for tensor in floating_state(module).values():
        views.append((tensor, vector[offset : offset + tensor.numel()].reshape(tensor.shape)))
        offset += tensor.numel()
    return views


def add_delta(module: th.nn.Module, delta: np.ndarray) -> None:
    """Add ``delta`` (a vector from ``MachineParameters.exchange``) to ``module``'s tensors, in place."""
    with th.no_grad():
        for tensor, change in _tensor_views(module, delta):
            array = tensor.numpy()  # a view: Ray hands out read-only arrays, which torch would copy
            np.add(array, change, out=array)


def set_state(module: th.nn.Module, vector: np.ndarray) -> None:
    """Copy ``vector`` into ``module``'s floating tensors."""
    with th.no_grad():
        for tensor, values in _tensor_views(module, vector):
            tensor.copy_(th.from_numpy(np.ascontiguousarray(values)))


class MachineParameters:
    """
    One machine's side of the exchange, for its shared policy.

    :param module: the machine's shared policy (its workers update it in place)
    """

    def __init__(self, module: th.nn.Module) -> None:
        self.module = module
        self.base = state_vector(module)

    def exchange(self, global_state: np.ndarray | None) -> np.ndarray:
        """
        Take what the workers changed since the last exchange, and move to ``global_state`` plus that change.

        Call it while no worker writes the shared policy (under the machine's update lock).

        :param global_state: the main process's parameters, as ``state_vector`` gives them (None: keep this machine's)
        :return: the change since the last exchange, for the main process to add (``add_delta``)
        """
        current = state_vector(self.module)
        delta = current - self.base
        if global_state is not None:
            current = global_state + delta
            set_state(self.module, current)
        self.base = current
        return delta
