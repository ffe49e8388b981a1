"""
Parameter exchange between machines: each machine sends what its workers changed since the last exchange
(a delta), the main process adds every machine's delta to the global parameters and sends them back.

No machine's update is lost: a machine that receives the global parameters keeps its own changes that
the main process has not added yet (``MachineParameters.exchange``). Only floating-point tensors travel
(parameters and e.g. BatchNorm running statistics); integer buffers stay per machine.
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


def as_numpy(state: dict[str, th.Tensor]) -> dict[str, np.ndarray]:
    """A private numpy copy of ``state``."""
    return {name: tensor.detach().cpu().numpy().copy() for name, tensor in state.items()}


def add_delta(module: th.nn.Module, delta: dict[str, np.ndarray]) -> None:
    """Add ``delta`` (from ``MachineParameters.exchange``) to ``module``'s tensors, in place."""
    state = floating_state(module)
    with th.no_grad():
        for name, change in delta.items():
            state[name].add_(th.from_numpy(np.array(change)))  # a copy: Ray hands out read-only arrays


def size_in_bytes(arrays: dict[str, np.ndarray]) -> int:
    return sum(array.nbytes for array in arrays.values())


class MachineParameters:
    """
    One machine's side of the exchange, for its shared policy.

    :param module: the machine's shared policy (its workers update it in place)
    """

    def __init__(self, module: th.nn.Module) -> None:
        self.module = module
        self.base = as_numpy(floating_state(module))

    def exchange(self, global_state: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
        """
        Take what the workers changed since the last exchange, and move to ``global_state`` plus that change.

        Call it while no worker writes the shared policy (under the machine's update lock).

        :param global_state: the main process's parameters (None: keep this machine's)
        :return: the change since the last exchange, for the main process to add (``add_delta``)
        """
        current = as_numpy(floating_state(self.module))
        delta = {name: current[name] - self.base[name] for name in current}
        if global_state is not None:
            state = floating_state(self.module)
            with th.no_grad():
                for name, tensor in state.items():
                    tensor.copy_(th.from_numpy(global_state[name] + delta[name]))  # a new array
            current = {name: global_state[name] + delta[name] for name in current}
        self.base = current
        return delta
