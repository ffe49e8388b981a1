"""
The network compute of one A3C worker on PongNoFrameskip-v4 frames, per sample, with ways of running it that the
shipped worker does not use: what each would save before the emulator and the evaluations are counted.

One process, one torch thread (as a worker), the shipped entry's policy with channels-last weights (as a worker's
local policy) and its envs per worker and ``n_steps``; random frames, no env. One update: the policy acts on
``n_steps`` batches of frames, then the A2C loss of those samples is back-propagated, the gradient clipped and
RMSprop steps. Variants:

  shipped            acting under ``th.no_grad()`` (SB3's ``collect_rollouts``), then ``evaluate_actions``
                     on the rollout buffer's frames (channels first) for the loss (SB3's ``A2C.train``)
  loss_frames_channels_last
                     the rollout's frames converted to channels-last (the local policy's weights' layout)
                     before ``evaluate_actions``
  inference_mode     acting under ``th.inference_mode()``
  graph_from_acting  acting with autograd on and the loss built from the acting passes' log-probabilities,
                     values and entropies (the classic A3C code's way): no second forward pass
  bf16_autocast      the shipped update under ``th.autocast("cpu", dtype=th.bfloat16)`` (fast only on CPUs
                     with bfloat16 instructions, e.g. AMX)

    python benchmarks/network_compute.py --updates 200 --rounds 3
"""

import contextlib
import platform
import time
from collections.abc import Callable

import numpy as np
import torch as th
from gymnasium import spaces
from result_files import alternating_rounds, median_of_rounds, rounds_parser, write_result
from throughput import shipped_a3c_entry

from sb3_a3c import A3C

FRAMES = spaces.Box(0, 255, (4, 84, 84), np.uint8)
PONG_ACTIONS = spaces.Discrete(6)


class WorkerNetwork:
    """The shipped entry's local policy, its optimizer and one rollout of random frames."""

    def __init__(self) -> None:
        entry = shipped_a3c_entry()
        self.entry = entry
        policy_class = A3C.policy_aliases[entry["policy"]]
        self.policy = policy_class(FRAMES, PONG_ACTIONS, lambda _: entry["learning_rate"]).to(memory_format=th.channels_last)
        self.optimizer = th.optim.RMSprop(self.policy.parameters(), lr=entry["learning_rate"], alpha=0.99, eps=1e-5)
        envs_per_worker = entry["n_envs"] // (entry.get("n_workers") or entry["n_envs"])
        rng = np.random.default_rng(0)
        height_width_channels = (envs_per_worker, *FRAMES.shape[1:], FRAMES.shape[0])
        frames = [rng.integers(0, 256, height_width_channels, dtype=np.uint8) for _ in range(entry["n_steps"])]
        # Acting sees VecTransposeImage's views of the frame stack (channels-last strides); the loss sees
        # the rollout buffer's copy of them (contiguous, channels first)
        self.frames = [th.as_tensor(np.transpose(stack, (0, 3, 1, 2))) for stack in frames]
        self.rollout_frames = th.cat(self.frames).contiguous()
        self.samples = envs_per_worker * entry["n_steps"]
        self.advantages = th.as_tensor(rng.standard_normal(self.samples), dtype=th.float32)
        self.returns = th.as_tensor(rng.standard_normal(self.samples), dtype=th.float32)

    def step(self, values: th.Tensor, log_prob: th.Tensor, entropy: th.Tensor) -> None:
        """The A2C loss of the rollout from its terms, then the gradient and RMSprop step of a worker."""
        loss = (
            -(self.advantages * log_prob).mean()
            + self.entry["vf_coef"] * ((self.returns - values.flatten()) ** 2).mean()
            - self.entry["ent_coef"] * entropy.mean()
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.entry["max_grad_norm"])
        self.optimizer.step()

    def act_then_evaluate(
        self,
        acting_context: Callable[[], contextlib.AbstractContextManager] = th.no_grad,
        loss_memory_format: th.memory_format = th.contiguous_format,
    ) -> None:
        """One update as a worker runs it: acting under ``acting_context``, the loss on frames in ``loss_memory_format``."""
        actions = []
        for frames in self.frames:
            with acting_context():
                action, _, _ = self.policy(frames)
            actions.append(action.clone())
        rollout_frames = self.rollout_frames.contiguous(memory_format=loss_memory_format)
        values, log_prob, entropy = self.policy.evaluate_actions(rollout_frames, th.cat(actions))
        self.step(values, log_prob, entropy)

    def graph_from_acting(self) -> None:
        """One update whose loss is built from the acting passes' outputs, autograd on while acting."""
        values, log_probs, entropies = [], [], []
        policy = self.policy
        for frames in self.frames:
            # SB3's ActorCriticPolicy.forward, keeping the distribution for the entropy
            features = policy.extract_features(frames)
            latent_pi, latent_vf = policy.mlp_extractor(features)  # the entry's heads share the convolutions
            distribution = policy._get_action_dist_from_latent(latent_pi)
            action = distribution.get_actions()
            log_probs.append(distribution.log_prob(action))
            entropies.append(distribution.entropy())
            values.append(policy.value_net(latent_vf))
        self.step(th.cat(values), th.cat(log_probs), th.cat(entropies))


def _bf16_autocast(network: WorkerNetwork) -> None:
    with th.autocast("cpu", dtype=th.bfloat16):
        network.act_then_evaluate()


VARIANTS: dict[str, Callable[[WorkerNetwork], None]] = {
    "shipped": WorkerNetwork.act_then_evaluate,
    "loss_frames_channels_last": lambda network: network.act_then_evaluate(loss_memory_format=th.channels_last),
    "inference_mode": lambda network: network.act_then_evaluate(th.inference_mode),
    "graph_from_acting": WorkerNetwork.graph_from_acting,
    "bf16_autocast": _bf16_autocast,
}


def measure(network: WorkerNetwork, variant: str, updates: int) -> float:
    """Samples per second of ``variant`` over ``updates`` updates (after 10 not counted)."""
    update = VARIANTS[variant]
    for _ in range(10):
        update(network)
    start = time.perf_counter()
    for _ in range(updates):
        update(network)
    return updates * network.samples / (time.perf_counter() - start)


def main() -> None:
    parser = rounds_parser(__doc__, "network_compute")
    parser.add_argument("--updates", type=int, default=200, help="updates per variant and round")
    args = parser.parse_args()
    th.set_num_threads(1)
    network = WorkerNetwork()
    rates: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for round_index, variant in alternating_rounds(list(VARIANTS), args.rounds):
        rate = measure(network, variant, args.updates)
        rates[variant].append(round(rate, 1))
        print(f"round {round_index}: {variant:<26} {rate:8.1f} samples/s", flush=True)
    medians = median_of_rounds(rates)
    ratios = {variant: round(medians[variant] / medians["shipped"], 2) for variant in VARIANTS}
    for variant, ratio in ratios.items():
        print(f"{variant:<26} {medians[variant]:8.1f} samples/s  {ratio:.2f}x shipped")
    write_result(
        args.output,
        {
            "command": f"python benchmarks/network_compute.py --updates {args.updates} --rounds {args.rounds}",
            "date": time.strftime("%Y-%m-%d"),
            "machine": platform.processor() or platform.machine(),
            "torch": th.__version__,
            "samples_per_second_rounds": rates,
            "samples_per_second_median": medians,
            "ratio_to_shipped": ratios,
        },
    )


if __name__ == "__main__":
    main()
