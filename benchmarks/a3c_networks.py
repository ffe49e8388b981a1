"""
A3C steps per second on PongNoFrameskip-v4 for each candidate network, frame size and split of envs
between workers: the comparison behind the shipped Atari entry of ``hyperparams/a3c.yml``.

Runs the configurations one after another (never two at once) and writes a JSON file.

    python benchmarks/a3c_networks.py --steps 20000
    python benchmarks/a3c_networks.py --configurations small84_8envs_per_worker_n5 --output x.json
    python benchmarks/a3c_networks.py --configurations lstm42_1envs_per_worker_n20 lstm42_2envs_per_worker_n20 \
        lstm42_4envs_per_worker_n20 lstm42_8envs_per_worker_n20 --output benchmarks/results/a3c_networks_lstm42.json
"""

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import ale_py
import gymnasium as gym
from stable_baselines3.common.env_util import make_atari_env, make_vec_env
from stable_baselines3.common.vec_env import VecFrameStack

from sb3_a3c import A3C
from sb3_a3c.common.atari_wrappers import A3CAtariWrapper
from sb3_a3c.common.torch_layers import ClassicA3CCNN

gym.register_envs(ale_py)

# name: (policy, policy_kwargs, frame size, n_envs, n_workers, n_steps); all with frame stack 4 (84x84: a3c_cnn.yml)
CONFIGURATIONS = {
    "nature84_1env_per_worker_n20": ("CnnPolicy", {}, 84, 2, 2, 20),
    "nature84_8envs_per_worker_n5": ("CnnPolicy", {}, 84, 16, 2, 5),
    "classic42_8envs_per_worker_n5": ("CnnPolicy", {"features_extractor_class": ClassicA3CCNN}, 42, 16, 2, 5),
    "small42_1env_per_worker_n20": ("SmallCnnPolicy", {}, 42, 2, 2, 20),
    "small42_8envs_per_worker_n5": ("SmallCnnPolicy", {}, 42, 16, 2, 5),
    "small84_8envs_per_worker_n5": ("SmallCnnPolicy", {}, 84, 16, 2, 5),
    "twohead84_8envs_per_worker_n5": ("CnnTwoHeadPolicy", {}, 84, 16, 2, 5),
    "smalltwohead84_8envs_per_worker_n5": ("SmallCnnTwoHeadPolicy", {}, 84, 16, 2, 5),
}
# name: n_envs of the 2 workers; the LSTM agent of a3c.yml's Atari entry (A3CAtariWrapper, one 42x42 frame, n_steps 20)
LSTM_AGENT_CONFIGURATIONS = {f"lstm42_{n_envs // 2}envs_per_worker_n20": n_envs for n_envs in (2, 4, 8, 16)}
# The configuration of the shipped Atari entry of hyperparams/a3c.yml
SHIPPED = "lstm42_4envs_per_worker_n20"


def make_model(name: str) -> A3C:
    if name in LSTM_AGENT_CONFIGURATIONS:
        env = make_vec_env("PongNoFrameskip-v4", n_envs=LSTM_AGENT_CONFIGURATIONS[name], seed=0, wrapper_class=A3CAtariWrapper)
        return A3C("A3CCnnLstmPolicy", env, n_workers=2, n_steps=20, use_rms_prop=False, learning_rate=2e-4, max_grad_norm=40)
    policy, policy_kwargs, frame_size, n_envs, n_workers, n_steps = CONFIGURATIONS[name]
    env = make_atari_env("PongNoFrameskip-v4", n_envs=n_envs, seed=0, wrapper_kwargs=dict(screen_size=frame_size))
    return A3C(policy, VecFrameStack(env, n_stack=4), n_workers=n_workers, n_steps=n_steps, policy_kwargs=policy_kwargs)


def measure(name: str, steps: int, warmup_steps: int) -> dict:
    model = make_model(name)
    model.learn(warmup_steps)  # process start-up and first allocations are not counted
    start = time.perf_counter()
    model.learn(steps)
    elapsed = time.perf_counter() - start
    steps, steps_per_second = model.num_timesteps, round(model.num_timesteps / elapsed, 1)
    return {"configuration": name, "shipped": name == SHIPPED, "steps": steps, "steps_per_second": steps_per_second}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--warmup-steps", type=int, default=1_000)
    names = [*CONFIGURATIONS, *LSTM_AGENT_CONFIGURATIONS]
    parser.add_argument("--configurations", nargs="+", choices=names, default=names)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "a3c_networks.json")
    args = parser.parse_args()
    results = []
    for name in args.configurations:
        results.append(measure(name, args.steps, args.warmup_steps))
        print(f"{results[-1]['steps_per_second']:8.1f} steps/s  {name}", flush=True)
    machine = {"cpus": len(os.sched_getaffinity(0)), "platform": platform.platform()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps({"command": shlex.join(["python", *sys.argv]), "machine": machine, "results": results}, indent=2) + "\n"
    )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
