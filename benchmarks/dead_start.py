"""
Dead starts: how many ReLU units of a feed-forward Atari network each optimizer switches off in its first updates.

SyncA2C (one process, repeatable) trains ``a3c_cnn.yml``'s Atari network (``SmallCnnTwoHeadPolicy``: two
convolutions, separate 256-unit ReLU heads) on Pong, 16 envs x 5 steps, learning rate 7e-4, ent_coef 0.01,
vf_coef 0.5, max_grad_norm 0.5, with each optimizer in turn. Every 2000 steps it records the share of each head's
units that are zero on every frame of a fixed probe set (480 frames of random play), and the policy's mean
entropy on those frames (ln 6 = 1.792: uniform). A unit zero on all frames gets no gradient from them.

    python benchmarks/dead_start.py --seeds 0 1 --steps 10000

Optimizers: ``torch`` (``th.optim.RMSprop``, average started at zero: SB3 A2C's default), ``bias_corrected``
(the same with Adam's bias correction of the average), ``from_one`` (``RMSpropFromOne``, the default of A3C and
SyncA2C), ``tf_like`` (SB3's ``RMSpropTFLike``), ``adam`` (``th.optim.Adam``, as ``use_rms_prop=False``).
"""

import argparse
from pathlib import Path
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import torch as th
from result_files import write_result
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage

from sb3_a3c import RMSpropFromOne, SyncA2C

gym.register_envs(ale_py)


class BiasCorrectedRMSprop(th.optim.RMSprop):
    """RMSprop whose average of squared gradients is divided by ``1 - alpha**step``, as Adam's second moment."""

    @th.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state.update(step=0, square_avg=th.zeros_like(param))
                state["step"] += 1
                state["square_avg"].mul_(group["alpha"]).addcmul_(param.grad, param.grad, value=1 - group["alpha"])
                denominator = (state["square_avg"] / (1 - group["alpha"] ** state["step"])).sqrt_().add_(group["eps"])
                param.addcdiv_(param.grad, denominator, value=-group["lr"])


RMSPROP_SETTINGS = dict(alpha=0.99, eps=1e-5, weight_decay=0)
OPTIMIZERS = {
    "torch": dict(optimizer_class=th.optim.RMSprop, optimizer_kwargs=RMSPROP_SETTINGS),
    "bias_corrected": dict(optimizer_class=BiasCorrectedRMSprop, optimizer_kwargs=RMSPROP_SETTINGS),
    "from_one": dict(optimizer_class=RMSpropFromOne, optimizer_kwargs=RMSPROP_SETTINGS),
    "tf_like": dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(alpha=0.99, eps=1e-5)),
    "adam": dict(optimizer_class=th.optim.Adam, optimizer_kwargs=dict(eps=1e-5)),
}


def probe_frames(env: VecTransposeImage, n_steps: int = 30) -> th.Tensor:
    env.reset()
    frames = [env.step(np.array([env.action_space.sample() for _ in range(env.num_envs)]))[0] for _ in range(n_steps)]
    return th.as_tensor(np.concatenate(frames))


def dead_shares_and_entropy(model: SyncA2C, frames: th.Tensor) -> tuple[float, float, float]:
    """Share of the actor's and of the critic's head units zero on every frame, and the mean entropy."""
    policy = model.policy
    with th.no_grad():
        latent_pi, latent_vf = policy.mlp_extractor(policy.extract_features(frames))
        entropy = policy.get_distribution(frames).entropy().mean().item()
    dead_pi = (latent_pi.abs().sum(dim=0) == 0).float().mean().item()
    dead_vf = (latent_vf.abs().sum(dim=0) == 0).float().mean().item()
    return round(dead_pi, 3), round(dead_vf, 3), round(entropy, 4)


def run(optimizer: str, seed: int, steps: int, interval: int) -> list[dict]:
    env = VecTransposeImage(VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=16, seed=seed), n_stack=4))
    model = SyncA2C(
        "SmallCnnTwoHeadPolicy", env, n_steps=5, ent_coef=0.01, vf_coef=0.5, seed=seed, policy_kwargs=OPTIMIZERS[optimizer]
    )
    frames = probe_frames(env)
    rows = []
    for done in range(0, steps + 1, interval):
        if done:
            model.learn(interval, reset_num_timesteps=False)
        dead_pi, dead_vf, entropy = dead_shares_and_entropy(model, frames)
        rows.append(dict(optimizer=optimizer, seed=seed, steps=done, dead_actor=dead_pi, dead_critic=dead_vf, entropy=entropy))
        print(f"{optimizer:<15} seed {seed} {done:>7} steps: dead {dead_pi:.3f} (actor) {dead_vf:.3f} (critic), H {entropy}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--optimizers", nargs="+", default=list(OPTIMIZERS), choices=list(OPTIMIZERS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--interval", type=int, default=2_000)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "dead_start.json")
    args = parser.parse_args()
    rows = [
        row for optimizer in args.optimizers for seed in args.seeds for row in run(optimizer, seed, args.steps, args.interval)
    ]
    write_result(args.output, {"command": "python benchmarks/dead_start.py " + " ".join(
        f"--{key} {' '.join(map(str, value)) if isinstance(value, list) else value}"
        for key, value in vars(args).items() if key != "output"), "rows": rows})  # fmt: skip


if __name__ == "__main__":
    main()
