"""
What an SB3 user's own callbacks and training scripts see, for A3C and SyncA2C, checked against SB3's A2C
itself: the per-step ``locals``, exact early stopping, and chunked ``learn()`` calls.
"""

import threading
import warnings

import numpy as np
import pytest
import torch as th
from stable_baselines3 import A2C
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    ConvertCallback,
    EvalCallback,
    ProgressBarCallback,
    StopTrainingOnMaxEpisodes,
)
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import load_results
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from sb3_a3c import A3C, SyncA2C
from sb3_a3c.a3c.runner.report_merger import callback_reads_step_locals
from tests.helpers.counting_envs import UnpicklableCountingEnv, counting_vec_env, shared_step_counter

# What SB3's collect_rollouts shows a callback at each step, one row per env
PER_ENV_LOCALS = ("actions", "clipped_actions", "values", "log_probs", "new_obs", "rewards", "dones", "infos")

ALGORITHMS = [A2C, SyncA2C, A3C]


def make(algorithm, env, n_steps: int = 5, **kwargs):
    """The same small model for each algorithm (A3C: one worker per env)."""
    return algorithm("MlpPolicy", env, n_steps=n_steps, seed=0, device="cpu", **kwargs)


class StepLocalsRecorder(BaseCallback):
    """A user's callback: keeps, at each on_step, the infos per env and the shapes of the per-env locals."""

    def __init__(self):
        super().__init__()
        self.steps: list[dict] = []

    def _on_step(self) -> bool:
        self.steps.append(
            {
                "missing": [key for key in PER_ENV_LOCALS if key not in self.locals],
                "lengths": {key: len(self.locals[key]) for key in PER_ENV_LOCALS if key in self.locals},
                "types": {key: type(self.locals[key]) for key in ("values", "log_probs", "new_obs", "rewards")},
                "infos": [dict(info) for info in self.locals.get("infos", [])],
                "num_timesteps": self.num_timesteps,
            }
        )
        return True


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_callback_sees_the_locals_of_each_step_for_each_env(algorithm):
    n_envs = 4
    kwargs = {"n_workers": 2} if algorithm is A3C else {}  # two envs per worker: the main process merges them
    model = make(algorithm, counting_vec_env(n_envs, episode_length=7), **kwargs)
    recorder = StepLocalsRecorder()
    model.learn(400, callback=recorder)

    assert len(recorder.steps) == 100
    for k, step in enumerate(recorder.steps, start=1):
        assert step["missing"] == []
        assert set(step["lengths"].values()) == {n_envs}
        assert step["types"] == {"values": th.Tensor, "log_probs": th.Tensor, "new_obs": np.ndarray, "rewards": np.ndarray}
        # Entry i is env i's, and on_step number k shows each env's k-th step, as in SB3
        assert [info["env_index"] for info in step["infos"]] == list(range(n_envs))
        assert [info["lifetime_step"] for info in step["infos"]] == [k] * n_envs
        assert step["num_timesteps"] == k * n_envs
    # A custom info key is there at every step, and finished episodes carry Monitor's statistics
    assert all(info["episode"]["l"] == 7 for step in recorder.steps for info in step["infos"] if info["episode_step"] == 7)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_stop_on_max_episodes_stops_at_the_step_the_episode_ends(algorithm):
    steps_taken = shared_step_counter()
    model = make(algorithm, counting_vec_env(2, episode_length=100, steps_taken=steps_taken), n_steps=20)
    recorder = StepLocalsRecorder()
    model.learn(1_000_000, callback=CallbackList([recorder, StopTrainingOnMaxEpisodes(max_episodes=1)]))

    # Both envs end their first episode at their 100th step: SB3 stops at that on_step
    assert len(recorder.steps) == 100
    assert recorder.steps[-1]["num_timesteps"] == 200
    # num_timesteps counts every step taken (for A3C also the workers' rollouts in flight at the stop)
    assert model.num_timesteps == steps_taken.value
    assert model.num_timesteps == 200 if algorithm is not A3C else model.num_timesteps >= 200


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_learn_takes_as_many_steps_as_sb3_a2c(algorithm):
    model = make(algorithm, counting_vec_env(2, episode_length=30))
    model.learn(1000)
    assert model.num_timesteps == 1000
    model.learn(1001)
    assert model.num_timesteps == 1010  # whole rollouts of n_steps * n_envs


class EpisodeStepsAtBounds(BaseCallback):
    """Each env's episode step and lifetime step at the first and the last on_step of each learn()."""

    def __init__(self):
        super().__init__()
        self.first: dict | None = None
        self.last: dict | None = None
        self.finished_episodes = 0

    def _on_step(self) -> bool:
        seen = {key: [info[key] for info in self.locals["infos"]] for key in ("episode_step", "lifetime_step")}
        if self.first is None:
            self.first = seen
        self.last = seen
        self.finished_episodes += int(np.sum(self.locals["dones"]))
        return True


def learn_twice(algorithm, reset_num_timesteps: bool, env=None):
    model = make(algorithm, env if env is not None else counting_vec_env(2, episode_length=30))
    first, second = EpisodeStepsAtBounds(), EpisodeStepsAtBounds()
    model.learn(170, callback=first)  # 85 steps per env: the envs are mid-episode (step 25 of 30)
    model.learn(170, callback=second, reset_num_timesteps=reset_num_timesteps)
    return model, first, second


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_chunked_learn_continues_the_episodes_in_progress(algorithm):
    model, first, second = learn_twice(algorithm, reset_num_timesteps=False)
    assert first.last["episode_step"] == [25, 25]
    assert second.first["episode_step"] == [26, 26]
    assert second.first["lifetime_step"] == [86, 86]
    # The training env's own Monitors saw every episode of both calls
    episodes_per_env = [len(env.get_episode_rewards()) for env in model.get_env().envs]
    assert sum(episodes_per_env) == first.finished_episodes + second.finished_episodes
    assert episodes_per_env == [5, 5]  # 170 steps per env in all


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_chunked_learn_with_reset_starts_new_episodes_on_the_same_envs(algorithm):
    model, _, second = learn_twice(algorithm, reset_num_timesteps=True)
    # SB3 resets the envs at the start of learn(reset_num_timesteps=True): new episodes, but the envs go on
    # (the first call's episodes are not replayed)
    assert second.first["episode_step"] == [1, 1]
    assert second.first["lifetime_step"] == [86, 86]
    assert [len(env.get_episode_rewards()) for env in model.get_env().envs] == [2 + 2, 2 + 2]


def test_a3c_workers_write_the_monitor_files_the_training_env_counts(tmp_path):
    model = make(A3C, counting_vec_env(2, episode_length=30, monitor_dir=str(tmp_path)))
    counter = EpisodeStepsAtBounds()
    model.learn(600, callback=counter)
    model.learn(600, callback=counter, reset_num_timesteps=False)
    assert counter.finished_episodes == 2 * 600 // 30  # 2 envs, 600 steps each, 30 per episode
    assert len(load_results(str(tmp_path))) == counter.finished_episodes
    assert sum(len(env.get_episode_rewards()) for env in model.get_env().envs) == counter.finished_episodes


def test_a3c_with_envs_that_cannot_travel_warns_and_starts_the_next_learn_from_the_training_env():
    env = counting_vec_env(2, episode_length=30, env_class=UnpicklableCountingEnv)
    with pytest.warns(UserWarning, match="could not bring the envs of worker 0 back"):
        model, _, second = learn_twice(A3C, reset_num_timesteps=False, env=env)
    assert second.first["lifetime_step"] == [1, 1]  # the training env's envs never advanced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.learn(100)  # and training still works


def test_a3c_chunked_learn_continues_lstm_states():
    model = A3C("MlpLstmPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=5, seed=0)
    model.learn(100)
    states = [start.collector_state for start in model._worker_starts[2]]
    assert all(not np.all(state.last_lstm_states.pi[0].numpy() == 0) for state in states)
    model.learn(100, reset_num_timesteps=False)
    assert model.num_timesteps == 200


class UsersCallback(BaseCallback):
    def _on_step(self) -> bool:
        return True


@pytest.mark.parametrize(
    "callback, may_read",
    [
        (CallbackList([CheckpointCallback(1000, "/tmp"), ProgressBarCallback(), StopTrainingOnMaxEpisodes(5)]), False),
        (EvalCallback(make_vec_env("CartPole-v1", n_envs=1)), False),
        (EvalCallback(make_vec_env("CartPole-v1", n_envs=1), callback_after_eval=UsersCallback()), True),
        (CallbackList([CheckpointCallback(1000, "/tmp"), UsersCallback()]), True),
        (ConvertCallback(lambda locals_, globals_: True), True),
        (ConvertCallback(None), False),  # what SB3 makes of callback=None
    ],
)
def test_observations_travel_to_the_main_process_only_when_a_users_callback_may_read_them(callback, may_read):
    assert callback_reads_step_locals(callback) is may_read


def test_a3c_without_a_users_callback_gives_callbacks_the_dones_and_the_finished_episodes_infos():
    seen = []

    class LibraryLikeCallback(BaseCallback):
        def _on_step(self) -> bool:
            keys = sorted(key for key in PER_ENV_LOCALS if key in self.locals)
            seen.append((keys, self.locals["dones"].copy(), [dict(info) for info in self.locals["infos"]]))
            return True

    # Named as a library callback would be: its module is stable_baselines3's
    LibraryLikeCallback.__module__ = "stable_baselines3.common.callbacks"
    make(A3C, counting_vec_env(2, episode_length=30)).learn(100, callback=LibraryLikeCallback())
    assert len(seen) == 50 and all(keys == ["dones", "infos"] for keys, _, _ in seen)
    # Each env's episode ends at its 30th step, with that step's info; the infos of other steps are empty
    for t, (_, dones, infos) in enumerate(seen):
        episode_ends = t == 29
        assert dones.tolist() == [episode_ends, episode_ends]
        for env_index, info in enumerate(infos):
            assert info == ({} if not episode_ends else {**info, "env_index": env_index, "episode_step": 30})
            assert ("episode" in info) is episode_ends


class DropoutMlp(BaseFeaturesExtractor):
    """An extractor whose output depends on the training mode (as in SB3's train/eval mode test)."""

    def __init__(self, observation_space, features_dim: int = 16):
        super().__init__(observation_space, features_dim)
        self.net = th.nn.Sequential(th.nn.Linear(observation_space.shape[0], features_dim), th.nn.Dropout(0.5))

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.net(observations)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_predict_runs_in_eval_mode_after_training_with_dropout(algorithm):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = make(algorithm, env, policy_kwargs={"features_extractor_class": DropoutMlp})
    model.learn(200)
    observations = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    first, _ = model.predict(observations, deterministic=True)
    second, _ = model.predict(observations, deterministic=True)
    np.testing.assert_array_equal(first, second)


def test_a3c_worker_waits_while_it_is_too_far_ahead_of_the_slowest_worker():
    """The main process shows step t of all workers together; a worker may only run a few rollouts ahead."""
    model = make(A3C, counting_vec_env(2, episode_length=30))
    job = model._make_backend(1000, record_step_locals=False, reset_num_timesteps=True).job
    job.rollouts_done[0] = job.max_rollouts_ahead - 1
    job.wait_for_slower_workers(0)  # within the bound: no wait
    job.rollouts_done[0] = job.max_rollouts_ahead
    released = threading.Timer(0.3, lambda: job.rollouts_done.__setitem__(1, 1))
    released.start()
    job.wait_for_slower_workers(0)
    assert job.rollouts_done[1] == 1  # it waited for the slower worker
    job.rollouts_done[0] = 2 * job.max_rollouts_ahead
    threading.Timer(0.3, job.stop_event.set).start()
    job.wait_for_slower_workers(0)  # a stop request ends the wait
    assert job.stop_event.is_set()
