"""Rollout collection in an A3C worker, reusing SB3's and sb3-contrib's ``collect_rollouts``."""

from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.ppo_recurrent import RecurrentPPO
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv

from sb3_a3c.a3c.job import CollectorState
from sb3_a3c.a3c.messages import RolloutSteps
from sb3_a3c.a3c.worker.step_recorder import StepRecorder
from sb3_a3c.common.buffers import initial_lstm_states, make_rollout_buffer

# The attributes of ``self`` that SB3's ``OnPolicyAlgorithm.collect_rollouts`` and sb3-contrib's
# ``RecurrentPPO.collect_rollouts`` read or write (private ones included). ``RolloutCollector`` provides
# each of them; tests/test_rollout_collector.py fails when a new SB3 release uses another one.
COLLECT_ROLLOUTS_ATTRIBUTES = frozenset(
    {
        "_last_episode_starts",
        "_last_lstm_states",
        "_last_obs",
        "_update_info_buffer",
        "action_space",
        "device",
        "gamma",
        "num_timesteps",
        "policy",
        "sde_sample_freq",
        "use_sde",
    }
)


class RolloutCollector:
    """
    The state SB3's ``collect_rollouts`` reads and writes, for one actor-learner and its environment.

    ``collect()`` calls ``OnPolicyAlgorithm.collect_rollouts`` (``RecurrentPPO.collect_rollouts`` for
    LSTM policies) on this object, so action clipping, time-limit bootstrapping, LSTM state carrying
    and the GAE of the buffer are exactly SB3's. The attributes those functions use are listed in
    ``COLLECT_ROLLOUTS_ATTRIBUTES``.

    :param policy: the policy that acts (the worker's local copy)
    :param env: the environment it steps
    :param n_steps: transitions per rollout and env
    :param gamma: discount factor
    :param gae_lambda: GAE lambda
    :param use_sde: whether to use generalized State Dependent Exploration
    :param sde_sample_freq: sample a new gSDE noise matrix every n steps (-1: once per rollout)
    :param record_step_locals: record every step's locals for the main process's callbacks (otherwise only the
        episodes that ended)
    :param resume_from: continue from this state (the envs' episodes in progress) instead of resetting ``env``
    """

    device = th.device("cpu")

    def __init__(
        self,
        policy: ActorCriticPolicy,
        env: VecEnv,
        n_steps: int,
        gamma: float,
        gae_lambda: float,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        record_step_locals: bool = False,
        resume_from: CollectorState | None = None,
    ) -> None:
        self.policy = policy
        self.env = env
        self.n_steps = n_steps
        self.gamma = gamma
        self.use_sde = use_sde
        self.sde_sample_freq = sde_sample_freq
        self.action_space = env.action_space
        self.num_timesteps = 0
        self.recurrent = isinstance(policy, RecurrentActorCriticPolicy)
        self.rollout_buffer = make_rollout_buffer(policy, n_steps, env.num_envs, gamma, gae_lambda, self.device)
        if resume_from is None:
            self._last_obs = env.reset()
            self._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
            self._last_lstm_states = initial_lstm_states(policy, env.num_envs, self.device) if self.recurrent else None  # type: ignore[arg-type]
        else:
            self._last_obs = resume_from.last_obs
            self._last_episode_starts = resume_from.last_episode_starts
            self._last_lstm_states = resume_from.last_lstm_states
        self._collect_rollouts = RecurrentPPO.collect_rollouts if self.recurrent else OnPolicyAlgorithm.collect_rollouts
        self._recorder = StepRecorder(record_step_locals)

    def collect(self) -> RolloutSteps:
        """
        Fill the rollout buffer with ``n_steps`` transitions per env and compute returns and advantages.

        :return: what SB3 would have shown a callback at each step (or the episodes that ended)
        """
        self._recorder.start()
        self._collect_rollouts(self, self.env, self._recorder, self.rollout_buffer, self.n_steps)  # type: ignore[arg-type]
        return self._recorder.rollout_steps(self.env.num_envs)

    def state(self) -> CollectorState:
        """Where the envs stand now (pass it as ``resume_from`` to continue their episodes)."""
        return CollectorState(self._last_obs, self._last_episode_starts, self._last_lstm_states)

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        """Called by ``collect_rollouts`` after each step: the main process keeps the episode statistics instead."""
