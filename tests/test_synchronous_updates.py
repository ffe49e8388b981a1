"""With ``synchronous_updates=True`` each step applies the workers' mean gradient, from common parameters."""

import copy
import threading
import time
from collections import defaultdict
from typing import ClassVar

import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from sb3_a3c import A3C
from sb3_a3c.a3c.job import GradientExchange
from sb3_a3c.a3c.worker import actor_learner
from sb3_a3c.a3c.worker.rollout_collector import RolloutCollector
from sb3_a3c.a3c.worker.updates import wait_until

from .conftest import live_children
from .test_gradients import SharedSGD, independent_gradient, record_optimizer_steps


class RecordingCollectorPerWorker(RolloutCollector):
    """Keeps a copy of every rollout buffer, per collector (one collector per worker)."""

    collected_buffers: ClassVar[dict[int, list]] = defaultdict(list)

    def collect(self):
        steps = super().collect()
        RecordingCollectorPerWorker.collected_buffers[id(self)].append(copy.deepcopy(self.rollout_buffer))
        return steps


def run_two_synchronous_workers(monkeypatch, max_grad_norm: float, n_updates: int = 4):
    """Run the real worker loop of 2 workers (threads of this process) for ``n_updates`` synchronous updates."""
    n_steps, learning_rate = 8, 0.05
    model = A3C(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=4, seed=0),
        n_workers=2,
        synchronous_updates=True,
        n_steps=n_steps,
        learning_rate=learning_rate,
        max_grad_norm=max_grad_norm,
        seed=0,
        policy_kwargs=dict(optimizer_class=SharedSGD),
    )
    applied_steps = record_optimizer_steps(model)
    RecordingCollectorPerWorker.collected_buffers = defaultdict(list)
    monkeypatch.setattr(actor_learner, "RolloutCollector", RecordingCollectorPerWorker)

    job = model._make_backend(n_steps * 4 * n_updates, record_step_locals=False, reset_num_timesteps=True).job
    workers = [
        threading.Thread(target=actor_learner.run_actor_learner, args=(job, rank, lambda report: None)) for rank in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers)
    return model, applied_steps, list(RecordingCollectorPerWorker.collected_buffers.values()), learning_rate


@pytest.mark.parametrize("max_grad_norm", [1e9, 0.05], ids=["unclipped", "clipped"])
def test_each_step_applies_the_mean_gradient_of_both_workers_rollouts_clipped_once(monkeypatch, max_grad_norm):
    n_updates = 4
    model, applied_steps, buffers_per_worker, learning_rate = run_two_synchronous_workers(monkeypatch, max_grad_norm)

    # One step per update for both workers together (Hogwild would make one per worker)
    assert len(applied_steps) == n_updates
    assert len(buffers_per_worker) == 2 and all(len(buffers) == n_updates for buffers in buffers_per_worker)
    fresh_policy = copy.deepcopy(model.policy)
    clipped = 0
    for update, (params_before, applied_gradient) in enumerate(applied_steps):
        with th.no_grad():
            for param, value in zip(fresh_policy.parameters(), params_before):
                param.copy_(value)
        # Both rollouts started from the parameters of the previous step: their gradients at these parameters
        # are the ones the workers computed
        gradients = [independent_gradient(fresh_policy, b[update], model.ent_coef, model.vf_coef) for b in buffers_per_worker]
        mean_gradient = [(first + second) / 2 for first, second in zip(*gradients)]
        norm = th.linalg.vector_norm(th.stack([th.linalg.vector_norm(g) for g in mean_gradient]))
        scale = min(1.0, max_grad_norm / (float(norm) + 1e-6))
        clipped += scale < 1.0
        for applied, expected in zip(applied_gradient, mean_gradient):
            th.testing.assert_close(applied, expected * scale, rtol=1e-4, atol=1e-6)

    if max_grad_norm < 1:
        assert clipped == n_updates
    final_params = [p.detach() for p in model.policy.parameters()]
    last_params, last_gradient = applied_steps[-1]
    for final, before, gradient in zip(final_params, last_params, last_gradient):
        th.testing.assert_close(final, before - learning_rate * gradient)


class StopAt(BaseCallback):
    """Stops training (returns False) once ``timestep`` steps are done."""

    def __init__(self, timestep: int):
        super().__init__()
        self.timestep = timestep

    def _on_step(self) -> bool:
        return self.num_timesteps < self.timestep


def test_callback_stopping_training_stops_workers_that_wait_for_each_other():
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=0), n_workers=2, synchronous_updates=True, seed=0)
    started = time.monotonic()
    model.learn(1_000_000, callback=StopAt(2_000))
    assert time.monotonic() - started < 30
    assert 2_000 <= model.num_timesteps < 1_000_000
    assert live_children() == []
    # The model goes on learning from where it stopped
    model.learn(1_000, reset_num_timesteps=False)
    assert live_children() == []


def test_a_seeded_run_with_synchronous_updates_repeats_exactly():
    def train() -> list[th.Tensor]:
        env = make_vec_env("CartPole-v1", n_envs=4, seed=0)
        model = A3C("MlpPolicy", env, n_workers=2, synchronous_updates=True, n_steps=5, seed=3)
        model.learn(2_000)
        return [parameter.detach().clone() for parameter in model.policy.parameters()]

    first, second = train(), train()
    for a, b in zip(first, second):
        th.testing.assert_close(a, b, rtol=0, atol=0)


def module_with_gradient(value: float, channels_last: bool = False) -> th.nn.Module:
    module = th.nn.Sequential(th.nn.Conv2d(2, 3, 2), th.nn.Flatten(), th.nn.Linear(3, 2))
    if channels_last:
        module = module.to(memory_format=th.channels_last)
    for parameter in module.parameters():
        parameter.grad = th.full_like(parameter, value)
    return module


def test_gradient_exchange_gives_the_mean_of_the_workers_rows():
    exchange = GradientExchange.for_policy(module_with_gradient(0.0), n_workers=3)
    exchange.put(0, module_with_gradient(1.0), update_number=1)
    exchange.put(1, module_with_gradient(2.0, channels_last=True), update_number=1)  # a worker's local layout
    no_gradient = module_with_gradient(3.0)
    no_gradient[2].weight.grad = None  # a parameter the loss did not reach
    exchange.put(2, no_gradient, update_number=2)
    assert list(exchange.gradients_ready) == [1, 1, 2]

    target = module_with_gradient(0.0)
    exchange.set_mean_gradient(target)
    linear_weight = target[2].weight
    for parameter in target.parameters():
        expected = 1.0 if parameter is linear_weight else 2.0
        th.testing.assert_close(parameter.grad, th.full_like(parameter, expected))
        assert parameter.grad.data_ptr() != exchange.gradients.data_ptr()  # its own copy


def test_waiting_for_the_other_workers_gives_up_when_a_stop_is_requested():
    assert wait_until(lambda: True, stop_requested=lambda: True)
    assert not wait_until(lambda: False, stop_requested=lambda: True)
    calls = iter([False, False, True])
    assert wait_until(lambda: next(calls), stop_requested=lambda: False, poll_interval=0.0)
