"""What A3C's workers need of the model: the policy to build and the hyperparameters, in one frozen record."""

from dataclasses import dataclass
from typing import Any

import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule

from sb3_a3c.common.update import UpdateSettings


@dataclass(frozen=True)
class A3CConfig:
    """
    The hyperparameters of an ``A3C`` model and how to build its policy, built once by ``A3C.config()``. This
    is what travels in place of the model: the forked workers inherit it, and each Ray machine gets it with
    the policy's state dict.

    :param policy_class: the policy class
    :param policy_kwargs: its keyword arguments (the optimizer is the shared-memory version)
    :param observation_space: the env's observation space
    :param action_space: the env's action space
    :param lr_schedule: the learning rate as a function of the global progress remaining (1 to 0)
    :param n_steps: transitions per env in one rollout
    :param gamma: discount factor
    :param gae_lambda: GAE lambda
    :param update: the hyperparameters of one update
    :param use_sde: whether to use gSDE exploration
    :param sde_sample_freq: gSDE noise resampling frequency
    """

    policy_class: type[ActorCriticPolicy]
    policy_kwargs: dict[str, Any]
    observation_space: spaces.Space
    action_space: spaces.Space
    lr_schedule: Schedule
    n_steps: int
    gamma: float
    gae_lambda: float
    update: UpdateSettings
    use_sde: bool
    sde_sample_freq: int

    def make_policy(self, **policy_kwargs: Any) -> ActorCriticPolicy:
        """A new policy of this architecture (``policy_kwargs`` replace the config's)."""
        return self.policy_class(
            self.observation_space,
            self.action_space,
            self.lr_schedule,
            use_sde=self.use_sde,
            **{**self.policy_kwargs, **policy_kwargs},
        )

    def make_shared_policy(self, state_dict: dict[str, th.Tensor], optimizer_state: dict[str, Any]) -> ActorCriticPolicy:
        """The policy with the given parameters and optimizer statistics, both in shared memory."""
        policy = self.make_policy(ortho_init=False)
        policy.load_state_dict(state_dict)
        policy.optimizer.load_state_dict(optimizer_state)
        policy.share_memory()
        policy.optimizer.share_memory()
        return policy

    def make_local_policy(self) -> ActorCriticPolicy:
        """
        A private policy for a worker. It only computes gradients and its parameters are overwritten from
        the shared policy before each rollout, so it skips the (slow) orthogonal initialisation, and its own
        optimizer is a stateless placeholder. Its convolution weights are kept channels-last: on a CPU
        that makes the forward and backward passes of the Atari networks cheaper (``load_state_dict``
        copies the shared parameters into that layout, and the gradients handed to the shared
        optimizer keep it; both work across layouts).
        """
        local_policy = self.make_policy(ortho_init=False, optimizer_class=th.optim.SGD, optimizer_kwargs={})
        return local_policy.to(memory_format=th.channels_last)
