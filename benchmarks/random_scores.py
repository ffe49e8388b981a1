"""
The score of a uniformly random policy on each env of the side-by-side benchmark.

Goal 2 of the Zoo entries ("no entry collapses") measures a run's last evaluation against the range from a random
policy's score to the run's best evaluation; this script supplies the random end of that range. Each env is made
as the Zoo makes it (``rl_zoo3.import_envs`` registers the PyBullet and Atari ids), without the training wrappers,
so the score is the raw episode return the Zoo's evaluations report. Writes
``benchmarks/results/side_by_side/random_scores.json``:

    python benchmarks/random_scores.py --episodes 10
    python benchmarks/random_scores.py --envs Hopper-v5 LunarLanderContinuous-v3
"""

import argparse
import json
import statistics
import time

import gymnasium as gym
import rl_zoo3.import_envs  # noqa: F401  (registers the PyBullet and Atari envs)
from zoo_side_by_side import RANDOM_SCORES, ZOO_A2C_ENVS


def random_returns(env_id: str, episodes: int, seed: int) -> list[float]:
    """Returns of ``episodes`` episodes of uniformly random actions, each to its end or truncation."""
    env = gym.make(env_id)
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=ZOO_A2C_ENVS)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    scores = json.loads(RANDOM_SCORES.read_text()) if RANDOM_SCORES.exists() else {}
    for env_id in args.envs:
        start = time.perf_counter()
        returns = random_returns(env_id, args.episodes, args.seed)
        scores[env_id] = {"mean": statistics.mean(returns), "std": statistics.pstdev(returns), "episodes": len(returns)}
        print(f"{env_id}: {scores[env_id]['mean']:.1f} ± {scores[env_id]['std']:.1f} ({time.perf_counter() - start:.0f} s)")
        RANDOM_SCORES.write_text(json.dumps(dict(sorted(scores.items())), indent=2) + "\n")


if __name__ == "__main__":
    main()
