"""The main process's merger of worker reports (``reporting.ReportMerger``), fed synthetic reports."""

import numpy as np
import torch as th

from sb3_a3c.a3c.messages import RolloutReport, RolloutSteps
from sb3_a3c.a3c.runner.report_merger import IterationEnd, ReportMerger, VecEnvStep
from sb3_a3c.common.update import UpdateMetrics

N_STEPS = 3


def metrics(value: float) -> UpdateMetrics:
    return UpdateMetrics(value, value, value, value, value)


def episodes_report(rank: int, n_envs: int, episode_ends=(), loss: float = 0.0) -> RolloutReport:
    steps = RolloutSteps(N_STEPS, n_envs, episode_ends=list(episode_ends))
    return RolloutReport(rank, N_STEPS * n_envs, metrics(loss), steps)


def full_report(rank: int, n_envs: int) -> RolloutReport:
    """Every step's locals; each array's entries are 100 * rank + 10 * t + env."""
    steps = []
    for t in range(N_STEPS):
        values = np.array([100 * rank + 10 * t + env for env in range(n_envs)], dtype=np.float32)
        steps.append(
            {
                "actions": values,
                "clipped_actions": values,
                "rewards": values,
                "dones": np.zeros(n_envs, dtype=bool),
                "values": values[:, None],
                "log_probs": values,
                "infos": [{"value": float(value)} for value in values],
                "new_obs": values[:, None],
            }
        )
    return RolloutReport(rank, N_STEPS * n_envs, metrics(rank), RolloutSteps(N_STEPS, n_envs, steps=steps))


def test_nothing_is_shown_until_every_worker_has_reported_the_same_rollout():
    merger = ReportMerger(n_workers=2)
    assert merger.add(episodes_report(1, n_envs=2)) == []
    assert merger.add(episodes_report(1, n_envs=2)) == []
    progress = merger.add(episodes_report(0, n_envs=2))
    assert [type(item) for item in progress] == [VecEnvStep] * N_STEPS + [IterationEnd]
    assert [item.locals["n_steps"] for item in progress[:N_STEPS]] == list(range(N_STEPS))
    # The second rollout of worker 1 waits for worker 0's second
    assert len(merger.add(episodes_report(0, n_envs=2))) == N_STEPS + 1


def test_step_t_of_every_worker_is_one_step_of_the_training_vec_env_in_rank_order():
    merger = ReportMerger(n_workers=2)
    merger.add(full_report(1, n_envs=2))
    progress = merger.add(full_report(0, n_envs=2))
    for t, step in enumerate(progress[:N_STEPS]):
        expected = [10 * t, 10 * t + 1, 100 + 10 * t, 100 + 10 * t + 1]
        for key in ("actions", "clipped_actions", "rewards", "log_probs"):
            assert step.locals[key].tolist() == expected
        assert isinstance(step.locals["values"], th.Tensor) and step.locals["values"].flatten().tolist() == expected
        assert step.locals["new_obs"].flatten().tolist() == expected
        assert [info["value"] for info in step.locals["infos"]] == expected
    assert [m.policy_loss for m in progress[-1].metrics] == [0.0, 1.0]


def test_finished_episodes_become_the_dones_and_infos_of_their_step_and_env():
    merger = ReportMerger(n_workers=2)
    merger.add(episodes_report(0, n_envs=2, episode_ends=[(1, 1, {"episode": {"r": 5.0}})]))
    progress = merger.add(episodes_report(1, n_envs=2, episode_ends=[(1, 0, {"episode": {"r": 7.0}}), (2, 1, {"x": 1})]))
    dones = [step.locals["dones"].tolist() for step in progress[:N_STEPS]]
    assert dones == [[False] * 4, [False, True, True, False], [False, False, False, True]]
    assert progress[1].locals["infos"] == [{}, {"episode": {"r": 5.0}}, {"episode": {"r": 7.0}}, {}]
    assert progress[2].locals["infos"] == [{}, {}, {}, {"x": 1}]
    assert set(progress[0].locals) == {"dones", "infos", "n_steps"}


def test_reports_no_other_worker_matched_are_handed_back_as_their_own_steps():
    merger = ReportMerger(n_workers=2)
    merger.add(episodes_report(0, n_envs=2, episode_ends=[(0, 1, {"episode": {"r": 1.0}})]))
    merger.add(episodes_report(0, n_envs=2))
    leftovers = merger.unmerged_steps()
    assert len(leftovers) == 2 * N_STEPS
    assert all(len(step.locals["dones"]) == 2 for step in leftovers)
    assert sum(step.locals["dones"].sum() for step in leftovers) == 1
    assert merger.unmerged_steps() == []
