"""Parameter exchange between Ray machines and the main process (``parameter_sync``), in this process."""

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_a3c import A3C
from sb3_a3c.a3c.runner.parameter_sync import MachineParameters, add_delta, floating_state, state_vector


def small_module(seed: int = 0) -> th.nn.Module:
    th.manual_seed(seed)
    return th.nn.Sequential(th.nn.Linear(3, 4), th.nn.BatchNorm1d(4))


def shift(module: th.nn.Module, amount: float) -> None:
    with th.no_grad():
        for tensor in floating_state(module).values():
            tensor.add_(amount)


def test_floating_state_names_each_tensor_once_and_leaves_integer_buffers_out():
    # SB3's shared features extractor is reachable under three names
    policy = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), seed=0).policy
    state = floating_state(policy)
    pointers = [tensor.data_ptr() for tensor in state.values()]
    assert len(pointers) == len(set(pointers))
    assert sum(tensor.numel() for tensor in state.values()) == sum(p.numel() for p in policy.parameters())

    batch_norm_state = floating_state(small_module())
    assert "1.num_batches_tracked" not in batch_norm_state and "1.running_mean" in batch_norm_state


def test_exchange_returns_the_machines_change_and_moves_it_to_the_global_parameters_plus_that_change():
    global_module, machine_module = small_module(), small_module()
    machine = MachineParameters(machine_module)
    shift(machine_module, 1.0)  # the machine's workers changed every tensor by +1
    shift(global_module, 10.0)  # meanwhile the main process added the other machines' changes
    global_state = state_vector(global_module)

    delta = machine.exchange(global_state)

    np.testing.assert_allclose(delta, 1.0, rtol=0, atol=1e-6)
    # The machine keeps its own change on top of the global parameters, until the main process has added it
    np.testing.assert_allclose(state_vector(machine_module), global_state + 1.0, atol=1e-6)


def test_no_update_of_two_machines_is_lost():
    global_module = small_module()
    machines = [small_module(), small_module()]
    sides = [MachineParameters(module) for module in machines]
    start = state_vector(global_module)
    shift(machines[0], 1.0)
    shift(machines[1], 2.0)

    for side in sides:  # each machine syncs in turn, with the global parameters of that moment
        add_delta(global_module, side.exchange(state_vector(global_module)))

    np.testing.assert_allclose(state_vector(global_module), start + 3.0, atol=1e-5)
    # The second machine already holds both changes; the first gets the second's at its next exchange
    add_delta(global_module, sides[0].exchange(state_vector(global_module)))
    for module in machines:
        np.testing.assert_allclose(state_vector(module), start + 3.0, atol=1e-5)


def test_exchange_without_global_state_keeps_the_machines_parameters():
    module = small_module()
    side = MachineParameters(module)
    shift(module, 0.5)
    before = state_vector(module)
    delta = side.exchange(None)
    np.testing.assert_allclose(delta, 0.5, atol=1e-6)
    np.testing.assert_array_equal(state_vector(module), before)
    np.testing.assert_allclose(side.exchange(None), 0.0)


def test_a_state_vector_reads_back_into_the_tensors_it_came_from():
    module = small_module()
    vector = state_vector(module)
    assert vector.dtype == np.float32 and vector.size == sum(t.numel() for t in floating_state(module).values())
    other = small_module(seed=1)
    assert not np.array_equal(state_vector(other), vector)
    add_delta(other, vector - state_vector(other))
    np.testing.assert_allclose(state_vector(other), vector, atol=1e-6)
    buffer = np.zeros_like(vector)
    assert state_vector(module, out=buffer) is buffer and np.array_equal(buffer, vector)
