"""RMSprop whose running average starts at one: what the shipped feed-forward Atari entries use."""

from typing import Any

import torch as th


def rmsprop_state(param: th.Tensor, group: dict[str, Any], square_avg: th.Tensor) -> dict[str, th.Tensor]:
    """The state ``torch.optim.RMSprop`` keeps for ``param`` (the step count as a tensor, as torch creates it)."""
    state = {"step": th.zeros((), dtype=th.float32), "square_avg": square_avg}
    if group["momentum"] > 0:
        state["momentum_buffer"] = th.zeros_like(param, memory_format=th.preserve_format)
    if group["centered"]:
        state["grad_avg"] = th.zeros_like(param, memory_format=th.preserve_format)
    return state


class RMSpropFromOne(th.optim.RMSprop):
    """
    ``torch.optim.RMSprop`` whose running average of squared gradients starts at one, as in TensorFlow's
    RMSProp (the optimizer of the A3C paper and of OpenAI's A2C), instead of zero.

    Started at zero, the average after the first step is ``(1 - alpha) * grad**2``, so every parameter moves
    by about ``lr / sqrt(1 - alpha)`` (10 times the learning rate for ``alpha=0.99``) in the direction of its
    gradient's sign, however small that gradient is. On Atari these first steps move all the weights of a
    layer together and switch off ReLU units for good: the policy can stay uniform for millions of steps
    (docs/benchmarks.md, "Optimizers"). Started at one, the first steps are about ``lr * grad``, and the
    average decays to the squared gradients within a few hundred updates; from then on the updates are
    PyTorch's (epsilon outside the square root, unlike SB3's ``RMSpropTFLike``).

    Takes the arguments of ``torch.optim.RMSprop``.
    """

    def __init__(self, params: Any, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        for group in self.param_groups:
            for param in group["params"]:
                self.state[param].update(self._initial_state(param, group))

    def _initial_state(self, param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
        return rmsprop_state(param, group, square_avg=th.ones_like(param, memory_format=th.preserve_format))
