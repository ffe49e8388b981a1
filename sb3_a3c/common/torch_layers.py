"""Network pieces for the image policies of the A2C tutorial."""

import gymnasium as gym
from stable_baselines3.common.torch_layers import NatureCNN
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
