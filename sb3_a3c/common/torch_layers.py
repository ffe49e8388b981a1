"""Feature extractors for image observations."""

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, NatureCNN
from torch import nn


class NatureCnnConvolutions(NatureCNN):
    """
    The three convolutions of SB3's ``NatureCNN``, flattened, without its shared 512-unit dense layer.

    With it the actor and the critic each get their own hidden layer on top of the convolutions.

    :param observation_space: channel-first image observations
    :param normalized_image: whether images are already normalised (disables the uint8 checks)
    """

    def __init__(self, observation_space: gym.Space, normalized_image: bool = False) -> None:
        super().__init__(observation_space, features_dim=1, normalized_image=normalized_image)
        self._features_dim = self.linear[0].in_features
        self.linear = nn.Identity()


def small_atari_convolutions(n_input_channels: int) -> list[nn.Module]:
    """The two convolutions of the A3C paper's network (8x8/4 with 16 channels, 4x4/2 with 32), ReLU."""
    return [
        nn.Conv2d(n_input_channels, 16, kernel_size=8, stride=4),
        nn.ReLU(),
        nn.Conv2d(16, 32, kernel_size=4, stride=2),
        nn.ReLU(),
    ]


def classic_a3c_convolutions(n_input_channels: int) -> list[nn.Module]:
    """The four convolutions of the classic A3C code for 42x42 frames: 3x3, stride 2, 32 channels, ELU."""
    convolutions: list[nn.Module] = []
    for in_channels in (n_input_channels, 32, 32, 32):
        convolutions += [nn.Conv2d(in_channels, 32, kernel_size=3, stride=2, padding=1), nn.ELU()]
    return convolutions


# The largest batch for which ``acting_convolutions`` costs less than oneDNN's convolutions: with the classic A3C
# network on 42x42 frames and one torch thread, 0.18 against 0.22 ms for 1 frame, 0.46 against 0.51 for 4, 0.83
# against 0.75 for 8
MAX_ACTING_BATCH = 4


def acting_convolutions(convolutions: nn.Sequential, observations: th.Tensor) -> th.Tensor:
    """
    ``convolutions(observations)`` for a small batch on a CPU, computed with channels-last weights and without
    oneDNN, which reorders every weight at every call: for a few frames that reordering is a large part of the cost,
    and torch's own channels-last kernels skip it. oneDNN is switched off with torch's process-wide flag for the call
    and switched back after it. The weights are read from the modules at each call (a parameter sync or
    ``load_state_dict`` changes what this computes) and their layout is left as it is.

    :param convolutions: the modules to run in order (``nn.Conv2d`` and activations, a final ``nn.Flatten``)
    :param observations: channel-first images
    """
    onednn_enabled = th.backends.mkldnn.enabled
    th.backends.mkldnn.enabled = False
    try:
        x = observations.contiguous(memory_format=th.channels_last)
        for module in convolutions:
            if isinstance(module, nn.Conv2d):
                x = module._conv_forward(x, module.weight.contiguous(memory_format=th.channels_last), module.bias)
            else:
                x = module(x)
        return x
    finally:
        th.backends.mkldnn.enabled = onednn_enabled


class ConvolutionsThenDense(BaseFeaturesExtractor):
    """
    Image features: the convolutions of ``make_convolutions`` (flattened), then a dense ReLU layer of
    ``features_dim`` units (none when ``features_dim`` is None: the flattened convolutions are the features).
    """

    make_convolutions: Callable[[int], list[nn.Module]]

    def __init__(
        self, observation_space: gym.spaces.Box, features_dim: int | None = 256, normalized_image: bool = False
    ) -> None:
        super().__init__(observation_space, features_dim or 1)
        if not is_image_space(observation_space, check_channels=False, normalized_image=normalized_image):
            raise ValueError(
                f"{type(self).__name__} expects channel-first image observations (e.g. AtariWrapper frames), "
                f"got {observation_space}"
            )
        self.cnn = nn.Sequential(*type(self).make_convolutions(observation_space.shape[0]), nn.Flatten())
        with th.no_grad():
            n_flatten = self.cnn(th.as_tensor(observation_space.sample()[None]).float()).shape[1]
        if features_dim is None:
            self._features_dim = n_flatten
            self.linear: nn.Module = nn.Identity()
        else:
            self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.linear(self.cnn(observations))

    def forward_for_acting(self, observations: th.Tensor) -> th.Tensor:
        """
        ``forward`` for the few observations of one acting step (one per env), without gradient: the same
        features, computed as cheaply as a CPU allows (``acting_convolutions``). Other batches and devices take
        ``forward``.
        """
        if observations.device.type != "cpu" or observations.shape[0] > MAX_ACTING_BATCH or th.is_grad_enabled():
            return self(observations)
        return self.linear(acting_convolutions(self.cnn, observations))


class SmallAtariCNN(ConvolutionsThenDense):
    """
    The network of the A3C paper (Mnih et al. 2016, after the 2013 DQN): a 8x8 stride-4 convolution
    with 16 channels, a 4x4 stride-2 convolution with 32 channels, then a dense layer, all ReLU.

    On 84x84 frames it costs less than ``NatureCNN`` per sample, which matters on a CPU, where the
    forward and backward passes otherwise cost more than the emulator step.

    :param observation_space: channel-first image observations
    :param features_dim: units of the dense layer (the features given to the actor and critic heads)
    :param normalized_image: whether images are already normalised (disables the uint8 checks)
    """

    make_convolutions = staticmethod(small_atari_convolutions)


class SmallCnnConvolutions(ConvolutionsThenDense):
    """
    The two convolutions of ``SmallAtariCNN``, flattened, without its shared dense layer (2592 features
    on 84x84 frames). With it the actor and the critic each get their own hidden layer on top.

    :param observation_space: channel-first image observations
    :param normalized_image: whether images are already normalised (disables the uint8 checks)
    """

    make_convolutions = staticmethod(small_atari_convolutions)

    def __init__(self, observation_space: gym.spaces.Box, normalized_image: bool = False) -> None:
        super().__init__(observation_space, None, normalized_image)


class ClassicA3CCNN(ConvolutionsThenDense):
    """
    The convolutions of the classic A3C code (universe-starter-agent, pytorch-a3c) for 42x42 frames:
    four 3x3 convolutions of stride 2 with 32 channels and ELU, then a dense ReLU layer.

    Use it with ``policy_kwargs=dict(features_extractor_class=ClassicA3CCNN)``.

    :param observation_space: channel-first image observations
    :param features_dim: units of the dense layer (the features given to the actor and critic heads)
    :param normalized_image: whether images are already normalised (disables the uint8 checks)
    """

    make_convolutions = staticmethod(classic_a3c_convolutions)


class ClassicA3CConvolutions(ConvolutionsThenDense):
    """
    The four convolutions of ``ClassicA3CCNN``, flattened, without its dense layer (288 features on 42x42
    frames): the input of the classic A3C agent's LSTM.

    :param observation_space: channel-first image observations, uint8 or already normalised floats
        (``A3CAtariWrapper``'s)
    """

    make_convolutions = staticmethod(classic_a3c_convolutions)

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space, None, normalized_image=observation_space.dtype != np.uint8)
