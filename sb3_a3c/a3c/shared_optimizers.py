"""Optimizers whose statistics live in shared memory, as in the A3C paper ("shared RMSProp")."""

from typing import Any

import torch as th
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

from sb3_a3c.common.optimizers import RMSpropFromOne, rmsprop_state


class SharedOptimizerMixin:
    """
    Create the optimizer state eagerly and move every state tensor into shared memory.

    ``torch.optim`` creates its state lazily, inside the first ``step()``: in a worker process that
    state would be private to the worker. Creating it before the workers fork and sharing it makes all
    actor-learners update one set of statistics in place, which is what the A3C paper calls shared
    RMSProp. ``load_state_dict`` replaces the state by ordinary tensors, so call ``share_memory()``
    again after loading and before starting workers.
    """

    param_groups: list[dict[str, Any]]
    state: dict[th.Tensor, dict[str, Any]]

    def __init__(self, params: Any, **kwargs: Any) -> None:
        super().__init__(params, **kwargs)  # type: ignore[call-arg]
        self.share_memory()

    def _initial_state(self, param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
        raise NotImplementedError

    def share_memory(self) -> None:
        """Initialise missing state and move all state tensors to shared memory (idempotent)."""
        for group in self.param_groups:
            for param in group["params"]:
                state = self.state[param]
                if len(state) == 0:
                    state.update(self._initial_state(param, group))
                for value in state.values():
                    if isinstance(value, th.Tensor):
                        value.share_memory_()


class SharedRMSprop(SharedOptimizerMixin, th.optim.RMSprop):
    """
    ``torch.optim.RMSprop`` with its running averages in shared memory.

    Takes the same arguments as ``torch.optim.RMSprop``.
    """

    def _initial_state(self, param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
        return rmsprop_state(param, group, square_avg=th.zeros_like(param, memory_format=th.preserve_format))


class SharedRMSpropFromOne(SharedOptimizerMixin, RMSpropFromOne):
    """
    ``sb3_a3c.common.optimizers.RMSpropFromOne`` (the running average of squared gradients starts at one: the
    shipped feed-forward Atari entries use it) with its running averages in shared memory.

    Takes the same arguments as ``torch.optim.RMSprop``.
    """

    _initial_state = RMSpropFromOne._initial_state


class SharedRMSpropTFLike(SharedOptimizerMixin, RMSpropTFLike):
    """
    SB3's ``RMSpropTFLike`` (TensorFlow's RMSprop: running average started at one, epsilon inside the
    square root) with its running averages in shared memory. The Zoo's A2C uses it on Atari; PyTorch's
    RMSprop starts the average at zero, so its first updates are large.

    Takes the same arguments as ``RMSpropTFLike``.
    """

    def _initial_state(self, param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
        return rmsprop_state(param, group, square_avg=th.ones_like(param, memory_format=th.preserve_format))


def _adam_state(param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
    """The state Adam and AdamW create at their first step."""
    state = {
        "step": th.zeros((), dtype=th.float32),
        "exp_avg": th.zeros_like(param, memory_format=th.preserve_format),
        "exp_avg_sq": th.zeros_like(param, memory_format=th.preserve_format),
    }
    if group["amsgrad"]:
        state["max_exp_avg_sq"] = th.zeros_like(param, memory_format=th.preserve_format)
    return state


class SharedAdam(SharedOptimizerMixin, th.optim.Adam):
    """
    ``torch.optim.Adam`` with its moment estimates in shared memory.

    Takes the same arguments as ``torch.optim.Adam``.
    """

    def _initial_state(self, param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
        return _adam_state(param, group)


class SharedAdamW(SharedOptimizerMixin, th.optim.AdamW):
    """
    ``torch.optim.AdamW`` (Adam with decoupled weight decay) with its moment estimates in shared memory.

    Takes the same arguments as ``torch.optim.AdamW``.
    """

    def _initial_state(self, param: th.Tensor, group: dict[str, Any]) -> dict[str, th.Tensor]:
        return _adam_state(param, group)


# The optimizers users select in SB3 style (``policy_kwargs=dict(optimizer_class=th.optim.Adam)``)
# and the shared-memory versions A3C uses in their place.
SHARED_OPTIMIZER_FOR = {
    RMSpropFromOne: SharedRMSpropFromOne,
    th.optim.RMSprop: SharedRMSprop,
    RMSpropTFLike: SharedRMSpropTFLike,
    th.optim.Adam: SharedAdam,
    th.optim.AdamW: SharedAdamW,
}


def shared_optimizer_class(optimizer_class: type[th.optim.Optimizer]) -> type[th.optim.Optimizer]:
    """
    Return the shared-memory version of ``optimizer_class``.

    :param optimizer_class: ``RMSpropFromOne``, ``th.optim.RMSprop``, SB3's ``RMSpropTFLike``, ``th.optim.Adam``,
        ``th.optim.AdamW`` or a class that already keeps its state in shared memory (a ``SharedOptimizerMixin`` subclass)
    :return: an optimizer class whose statistics all workers share
    """
    if isinstance(optimizer_class, type) and issubclass(optimizer_class, SharedOptimizerMixin):
        return optimizer_class
    if optimizer_class in SHARED_OPTIMIZER_FOR:
        return SHARED_OPTIMIZER_FOR[optimizer_class]
    raise ValueError(
        f"policy_kwargs['optimizer_class']={optimizer_class!r} cannot be shared between A3C workers. "
        "Allowed: sb3_a3c.RMSpropFromOne, th.optim.RMSprop, RMSpropTFLike, th.optim.Adam, th.optim.AdamW (replaced by "
        "sb3_a3c.SharedRMSpropFromOne / SharedRMSprop / SharedRMSpropTFLike / SharedAdam / SharedAdamW), "
        "or a subclass of sb3_a3c.a3c.shared_optimizers.SharedOptimizerMixin."
    )
