from typing import Any, ClassVar, TypeVar

import torch as th
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.ppo_recurrent import RecurrentPPO
from stable_baselines3 import A2C
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.vec_env import VecEnv

from sb3_a3c.common.buffers import initial_lstm_states, make_rollout_buffer
from sb3_a3c.common.loading import ClearLoadErrorsMixin
from sb3_a3c.common.policies import (
    POLICY_ALIASES,
    build_policy,
    check_policy_kwargs,
    is_recurrent_policy_class,
    with_default_optimizer,
)
from sb3_a3c.common.train_logging import record_train_metrics
from sb3_a3c.common.update import UpdateSettings, clip_gradients, compute_gradients
from sb3_a3c.common.validation import check_action_space, check_hyperparameters

SelfSyncA2C = TypeVar("SelfSyncA2C", bound="SyncA2C")


class SyncA2C(ClearLoadErrorsMixin, A2C):
    """
    Synchronous Advantage Actor Critic: the synchronous variant of A3C, with LSTM policies

    Paper: https://arxiv.org/abs/1602.01783 (A3C), synchronous variant as in OpenAI Baselines' A2C.
    The envs of the VecEnv (the workers) are stepped in turn for ``n_steps`` each, then one update is
    made on all their transitions together, on the GPU when there is one. With ``gae_lambda=1`` the
    targets are n-step returns bootstrapped by the critic at the end of each worker's batch, never
    across a terminal state. Same policy classes and hyperparameter names as ``A3C``, so that the two
    compare asynchronous and synchronous updates and nothing else. A subclass of SB3's ``A2C`` with its
    defaults: with a feed-forward policy it makes ``A2C``'s updates; LSTM policies get sb3-contrib's recurrent
    collection and the masked loss.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, CnnTwoHeadPolicy, MlpLstmPolicy, CnnLstmPolicy, ...)
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: The learning rate, it can be a function of the current progress remaining (from 1 to 0)
    :param n_steps: The number of steps to run for each environment per update
        (i.e. batch size is n_steps * n_env where n_env is number of environment copies running in parallel)
    :param gamma: Discount factor
    :param gae_lambda: Factor for trade-off of bias vs variance for Generalized Advantage Estimator.
        Equivalent to classic advantage when set to 1.
    :param ent_coef: Entropy coefficient for the loss calculation
    :param vf_coef: Value function coefficient for the loss calculation
    :param max_grad_norm: The maximum value for the gradient clipping
    :param rms_prop_eps: RMSProp epsilon. It stabilizes square root computation in denominator
        of RMSProp update
    :param use_rms_prop: Whether to use RMSprop (default, ``th.optim.RMSprop`` with SB3 A2C's settings) or Adam
    :param use_sde: Whether to use generalized State Dependent Exploration (gSDE)
        instead of action noise exploration (default: False)
    :param sde_sample_freq: Sample a new noise matrix every n steps when using gSDE
        Default: -1 (only sample at the beginning of the rollout)
    :param rollout_buffer_class: Rollout buffer class to use for feed-forward policies. If ``None``, it will be
        automatically selected (LSTM policies always use sb3-contrib's recurrent buffers).
    :param rollout_buffer_kwargs: Keyword arguments to pass to the rollout buffer on creation.
    :param normalize_advantage: Whether to normalize or not the advantage
    :param stats_window_size: Window size for the rollout logging, specifying the number of episodes to average
        the reported success rate, mean episode length, and mean reward over
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation
    :param verbose: Verbosity level: 0 for no output, 1 for info messages (such as device or wrappers used), 2 for
        debug messages
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...) on which the code should be run.
        Setting it to auto, the code will be run on the GPU if possible.
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = POLICY_ALIASES

    def __init__(
        self,
        policy: str | type[BasePolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 7e-4,
        n_steps: int = 5,
        gamma: float = 0.99,
        gae_lambda: float = 1.0,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        rms_prop_eps: float = 1e-5,
        use_rms_prop: bool = True,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[RolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        normalize_advantage: bool = False,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ):
        if env is not None and not isinstance(env, str):
            check_action_space(env.action_space, type(self).__name__)
        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            rms_prop_eps=rms_prop_eps,
            # A2C would write its RMSprop into policy_kwargs; _setup_model adds it at build time instead
            use_rms_prop=False,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            normalize_advantage=normalize_advantage,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=dict(policy_kwargs or {}),
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        self.rms_prop_eps = rms_prop_eps
        self.use_rms_prop = use_rms_prop
        self._last_lstm_states = None
        check_hyperparameters(self)
        check_policy_kwargs(self.policy_class, self.policy_kwargs)

        if _init_setup_model:
            self._setup_model()

    @property
    def recurrent(self) -> bool:
        return is_recurrent_policy_class(self.policy_class)

    def _setup_model(self) -> None:
        # SB3's set-up order (the buffers draw no random numbers): with the same seed, SB3 A2C's initial parameters
        build_policy(self, with_default_optimizer(self.policy_kwargs, self.use_rms_prop, self.rms_prop_eps))
        if self.recurrent:
            self._last_lstm_states = initial_lstm_states(self.policy, self.n_envs, self.device)
        self.rollout_buffer = make_rollout_buffer(
            self.policy,
            self.n_steps,
            self.n_envs,
            self.gamma,
            self.gae_lambda,
            self.device,
            buffer_class=self.rollout_buffer_class,
            buffer_kwargs=self.rollout_buffer_kwargs,
        )

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        if isinstance(self.policy, RecurrentActorCriticPolicy):
            # sb3-contrib's collection: LSTM states carried across rollouts, reset at episode starts
            return RecurrentPPO.collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps)  # type: ignore[arg-type]
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def train(self) -> None:
        """
        Update policy using the currently gathered rollout buffer (one gradient step over all of it).
        """
        # Update optimizer learning rate
        self._update_learning_rate(self.policy.optimizer)

        # Loss of all transitions of all envs, and its gradient
        metrics = compute_gradients(self.policy, self.rollout_buffer, self._update_settings())

        # Clip grad norm
        clip_gradients(self.policy, self.max_grad_norm)

        # Optimization step
        self.policy.optimizer.step()

        self._n_updates += 1
        record_train_metrics(
            self.logger,
            self.policy,
            n_updates=self._n_updates,
            explained_variance=metrics.explained_variance,
            entropy_loss=metrics.entropy_loss,
            policy_loss=metrics.policy_loss,
            value_loss=metrics.value_loss,
        )

    def _update_settings(self) -> UpdateSettings:
        return UpdateSettings(self.ent_coef, self.vf_coef, self.max_grad_norm, self.normalize_advantage)  # type: ignore[arg-type]

    def learn(
        self: SelfSyncA2C,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 100,
        tb_log_name: str = "SyncA2C",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfSyncA2C:
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_last_lstm_states"]
