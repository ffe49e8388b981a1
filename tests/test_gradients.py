"""The update a worker applies is exactly the gradient of its own rollout's loss, and the optimizer is shared."""

import copy
from typing import ClassVar

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

from sb3_a3c import A3C, RMSpropFromOne, SharedAdam, SharedAdamW, SharedRMSprop, SharedRMSpropFromOne, SharedRMSpropTFLike
from sb3_a3c.a3c.shared_optimizers import SharedOptimizerMixin
from sb3_a3c.a3c.worker import actor_learner
from sb3_a3c.a3c.worker.rollout_collector import RolloutCollector

# Four channels: with one, channels-first and channels-last tensors have the same layout
FOUR_CHANNEL_FIRST_FRAMES = dict(channel_first=True, n_channels=4)


class SharedSGD(SharedOptimizerMixin, th.optim.SGD):
    """Plain SGD (no state): the parameter change of a step is exactly -lr * gradient."""

    def _initial_state(self, param, group):
        return {}


class RecordingCollector(RolloutCollector):
    """Keeps a copy of every rollout buffer the worker fills."""

    collected_buffers: ClassVar[list] = []

    def collect(self):
        infos = super().collect()
        RecordingCollector.collected_buffers.append(copy.deepcopy(self.rollout_buffer))
        return infos


def record_optimizer_steps(model) -> list[tuple[list[th.Tensor], list[th.Tensor]]]:
    """From now on, each step of the shared optimizer appends (parameters before the step, gradients it applies)."""
    applied_steps = []

    def record_step(optimizer, args, kwargs):
        applied_steps.append(
            (
                [p.detach().clone() for p in model.policy.parameters()],
                [p.grad.detach().clone() for p in model.policy.parameters()],
            )
        )

    model.policy.optimizer.register_step_pre_hook(record_step)
    return applied_steps


def independent_gradient(policy, buffer, ent_coef: float, vf_coef: float) -> list[th.Tensor]:
    """The A2C loss of one rollout, written out again from the buffer contents, and its gradient."""
    observations = th.as_tensor(buffer.observations.reshape(-1, *buffer.obs_shape))
    actions = th.as_tensor(buffer.actions.reshape(-1)).long()
    advantages = th.as_tensor(buffer.advantages.reshape(-1))
    returns = th.as_tensor(buffer.returns.reshape(-1))
    values, log_prob, entropy = policy.evaluate_actions(observations, actions)
    loss = -(advantages * log_prob).mean() + vf_coef * ((returns - values.flatten()) ** 2).mean() - ent_coef * entropy.mean()
    return [gradient.detach() for gradient in th.autograd.grad(loss, list(policy.parameters()))]


@pytest.mark.parametrize(
    "policy, make_env",
    [
        ("MlpPolicy", lambda: make_vec_env("CartPole-v1", n_envs=1, seed=0)),
        # The worker's local policy keeps its convolutions channels-last; the shared one does not
        ("SmallCnnPolicy", lambda: make_vec_env(FakeImageEnv, n_envs=1, seed=0, env_kwargs=FOUR_CHANNEL_FIRST_FRAMES)),
    ],
    ids=["mlp", "cnn"],
)
def test_worker_gradients_are_not_accumulated(monkeypatch, policy, make_env):
    """Run the real worker loop for 4 updates; each update must equal -lr * (gradient of that rollout only)."""
    n_steps, n_updates, learning_rate = 16, 4, 0.05
    env = make_env()
    model = A3C(
        policy,
        env,
        n_steps=n_steps,
        learning_rate=learning_rate,
        max_grad_norm=1e9,  # no clipping: compare raw gradients
        ent_coef=0.01,
        seed=0,
        policy_kwargs=dict(optimizer_class=SharedSGD),
    )
    applied_updates = record_optimizer_steps(model)
    RecordingCollector.collected_buffers = []
    monkeypatch.setattr(actor_learner, "RolloutCollector", RecordingCollector)

    job = model._make_backend(n_steps * n_updates, record_step_locals=False, reset_num_timesteps=True).job
    actor_learner.run_actor_learner(job, 0, send_report=lambda report: None)  # in this process, not forked

    assert len(applied_updates) == n_updates == len(RecordingCollector.collected_buffers)
    fresh_policy = copy.deepcopy(model.policy)
    previous_gradient = None
    for (params_before, applied_gradient), buffer in zip(applied_updates, RecordingCollector.collected_buffers):
        with th.no_grad():
            for param, value in zip(fresh_policy.parameters(), params_before):
                param.copy_(value)
        expected_gradient = independent_gradient(fresh_policy, buffer, model.ent_coef, model.vf_coef)
        for applied, expected in zip(applied_gradient, expected_gradient):
            th.testing.assert_close(applied, expected, rtol=1e-4, atol=1e-6)
        if previous_gradient is not None:
            # Accumulation would have been detectable: consecutive rollouts have different gradients
            assert not all(th.allclose(a, b) for a, b in zip(expected_gradient, previous_gradient))
        previous_gradient = expected_gradient

    # The shared parameters moved by exactly -lr * gradient at each step
    final_params = [p.detach() for p in model.policy.parameters()]
    last_params, last_gradient = applied_updates[-1]
    for final, before, gradient in zip(final_params, last_params, last_gradient):
        th.testing.assert_close(final, before - learning_rate * gradient)


def test_local_policy_does_not_share_memory_with_shared_policy():
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), seed=0)
    model._share_model()
    local = model.config().make_local_policy()  # as each worker makes its own
    local.load_state_dict(model.policy.state_dict())  # as before each rollout
    for local_param, shared_param in zip(local.parameters(), model.policy.parameters()):
        assert shared_param.is_shared()
        assert not local_param.is_shared()
        assert local_param.data_ptr() != shared_param.data_ptr()


@pytest.mark.parametrize(
    "optimizer_class, shared_class, statistic, initial_value",
    [
        (None, SharedRMSprop, "square_avg", 0.0),
        (RMSpropFromOne, SharedRMSpropFromOne, "square_avg", 1.0),
        (RMSpropTFLike, SharedRMSpropTFLike, "square_avg", 1.0),
        (th.optim.Adam, SharedAdam, "exp_avg_sq", 0.0),
        (th.optim.AdamW, SharedAdamW, "exp_avg_sq", 0.0),
    ],
)
def test_both_workers_update_the_same_optimizer_statistics(optimizer_class, shared_class, statistic, initial_value):
    policy_kwargs = {} if optimizer_class is None else dict(optimizer_class=optimizer_class)
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0, policy_kwargs=policy_kwargs)
    optimizer = model.policy.optimizer
    assert type(optimizer) is shared_class
    model.learn(2000)

    # The main process never steps the optimizer: its statistics moved only through shared memory.
    # Every update of both workers counted in the same step counter.
    assert model._n_updates == model.num_timesteps // model.n_steps
    assert model._n_updates >= 2000 // 10
    for param in model.policy.parameters():
        state = optimizer.state[param]
        assert int(state["step"].item()) == model._n_updates
        assert state[statistic].is_shared()
        assert (state[statistic] != initial_value).any()


@pytest.mark.parametrize(
    "reference_class, shared_class", [(RMSpropTFLike, SharedRMSpropTFLike), (RMSpropFromOne, SharedRMSpropFromOne)]
)
def test_shared_optimizer_makes_the_same_updates_as_its_unshared_version(reference_class, shared_class):
    th.manual_seed(0)
    reference = th.nn.Linear(4, 3)
    shared = copy.deepcopy(reference)
    reference_optimizer = reference_class(reference.parameters(), lr=7e-4, eps=1e-5)
    shared_optimizer = shared_class(shared.parameters(), lr=7e-4, eps=1e-5)
    for _ in range(3):
        inputs = th.randn(8, 4)
        for module, optimizer in ((reference, reference_optimizer), (shared, shared_optimizer)):
            optimizer.zero_grad()
            module(inputs).pow(2).sum().backward()
            optimizer.step()
    for reference_param, shared_param in zip(reference.parameters(), shared.parameters()):
        assert th.equal(reference_param, shared_param)
        assert shared_optimizer.state[shared_param]["square_avg"].is_shared()


def test_default_optimizer_is_shared_torch_rmsprop_with_a2c_settings():
    model = A3C("MlpPolicy", "CartPole-v1", n_envs=1, rms_prop_eps=1e-5)
    optimizer = model.policy.optimizer
    assert type(optimizer) is SharedRMSprop
    assert all(th.equal(optimizer.state[param]["square_avg"], th.zeros_like(param)) for param in model.policy.parameters())
    group = optimizer.param_groups[0]
    assert (group["alpha"], group["eps"], group["weight_decay"], group["lr"]) == (0.99, 1e-5, 0, 7e-4)


def test_learning_rate_schedule_follows_global_progress():
    """A schedule that drops to 0 at half the budget freezes the shared parameters from then on."""

    def schedule(progress_remaining: float) -> float:
        return 1e-3 if progress_remaining > 0.5 else 0.0

    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, learning_rate=schedule, seed=0)
    snapshots = []

    from stable_baselines3.common.callbacks import BaseCallback

    class SnapshotAfterTwoThirds(BaseCallback):
        def _on_step(self) -> bool:
            if not snapshots and self.num_timesteps >= 4000:
                snapshots.append([p.detach().clone() for p in self.model.policy.parameters()])
            return True

    initial = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(6000, callback=SnapshotAfterTwoThirds())
    final = [p.detach() for p in model.policy.parameters()]
    assert any(not th.equal(a, b) for a, b in zip(initial, snapshots[0]))
    for snapshot, param in zip(snapshots[0], final):
        assert th.equal(snapshot, param)
    assert model.policy.optimizer.param_groups[0]["lr"] == 0.0
    assert np.isclose(model._current_progress_remaining, 0.0, atol=0.02)


def test_rmsprop_from_one_first_step_is_the_gradient_times_the_learning_rate():
    """Torch's RMSprop moves every parameter by about 10 x lr at its first step, whatever its gradient; ours by lr x grad."""
    gradient = th.tensor([1e-3, 1e-1])
    parameter = th.nn.Parameter(th.ones(2))
    parameter.grad = gradient.clone()
    RMSpropFromOne([parameter], lr=1e-3, alpha=0.99, eps=1e-5).step()
    th.testing.assert_close(1.0 - parameter.detach(), 1e-3 * gradient / ((0.99 + 0.01 * gradient**2).sqrt() + 1e-5))

    torch_parameter = th.nn.Parameter(th.ones(2))
    torch_parameter.grad = gradient.clone()
    th.optim.RMSprop([torch_parameter], lr=1e-3, alpha=0.99, eps=1e-5).step()
    assert (1.0 - torch_parameter.detach()).min() > 9e-3  # 10 x lr, even for a gradient of 1e-3
