"""Feature extractors for image observations."""

import gymnasium as gym
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


class SmallAtariCNN(BaseFeaturesExtractor):
    """
    The convolutions of the classic A3C implementations (universe-starter-agent, pytorch-a3c), made for
    42x42 frames: four 3x3 convolutions of stride 2 with 32 channels and ELU, then a dense ReLU layer.

    At 42x42 it is about four times cheaper per frame than ``NatureCNN`` at 84x84, which matters on a CPU,
    where the policy's forward pass costs as much as the emulator step. Use it with
    ``AtariWrapper(screen_size=42)``.

    :param observation_space: channel-first image observations
    :param features_dim: units of the dense layer (the features given to the actor and critic heads)
    :param normalized_image: whether images are already normalised (disables the uint8 checks)
    """

    def __init__(self, observation_space: gym.spaces.Box, features_dim: int = 256, normalized_image: bool = False) -> None:
        super().__init__(observation_space, features_dim)
        if not is_image_space(observation_space, check_channels=False, normalized_image=normalized_image):
            raise ValueError(
                f"SmallAtariCNN expects channel-first image observations (e.g. AtariWrapper frames), got {observation_space}"
            )
        n_input_channels = observation_space.shape[0]
        layers: list[nn.Module] = []
        for in_channels in (n_input_channels, 32, 32, 32):
            layers += [nn.Conv2d(in_channels, 32, kernel_size=3, stride=2, padding=1), nn.ELU()]
        self.cnn = nn.Sequential(*layers, nn.Flatten())
        with th.no_grad():
            n_flatten = self.cnn(th.as_tensor(observation_space.sample()[None]).float()).shape[1]
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.linear(self.cnn(observations))
