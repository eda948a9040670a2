"""The residual policy-value network.

    net = PolicyValueNet(NetworkConfig(blocks=4, channels=64), game)
    logits, value = net(planes, legal)    # planes float [B, C, H, W], legal bool [B, A]
                                          # -> logits float [B, A] (illegal = -inf), value float [B] in [-1, 1]

The value is from the view of the player to move (the view of `game.encode`).
A stem convolution, `blocks` residual blocks (two 3x3 convolutions with batch
norm), then a policy head (1x1 convolution, then a linear layer over all actions,
so a pass or a Connect Four column has its own output) and a value head (1x1
convolution, a hidden layer, tanh).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

from games import Game, State


@dataclass
class NetworkConfig:
    """Shape of the residual network."""

    blocks: int = 4
    """residual blocks"""
    channels: int = 64
    """convolution channels in the trunk"""
    value_hidden: int = 64
    """units of the value head's hidden layer"""

    def validate(self) -> None:
        for key in ("blocks", "channels", "value_hidden"):
            if getattr(self, key) < 1:
                raise ValueError(f"network.{key} must be at least 1")


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class PolicyValueNet(nn.Module):
    """Residual policy-value network for one game's board, planes and actions."""

    def __init__(self, config: NetworkConfig, game: Game):
        super().__init__()
        config.validate()
        self.config = config
        self.game_spec = game.spec
        height, width = game.board_shape
        self.num_actions = game.num_actions
        c = config.channels
        self.stem = nn.Sequential(
            nn.Conv2d(game.num_planes, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()
        )
        self.trunk = nn.Sequential(*[ResidualBlock(c) for _ in range(config.blocks)])
        self.policy_conv = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU())
        self.policy_fc = nn.Linear(2 * height * width, game.num_actions)
        self.value_conv = nn.Sequential(nn.Conv2d(c, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU())
        self.value_fc = nn.Sequential(
            nn.Linear(height * width, config.value_hidden), nn.ReLU(), nn.Linear(config.value_hidden, 1)
        )

    def forward(self, planes: torch.Tensor, legal: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """planes float [B, C, H, W], legal bool [B, A] -> (logits float [B, A], value float [B])."""
        x = self.trunk(self.stem(planes))
        logits = self.policy_fc(self.policy_conv(x).flatten(1))
        if legal is not None:
            logits = logits.masked_fill(~legal, float("-inf"))
        value = torch.tanh(self.value_fc(self.value_conv(x).flatten(1))).squeeze(1)
        return logits, value

    def describe(self) -> dict:
        """What a checkpoint needs to rebuild the network (plain values only)."""
        return {"game": self.game_spec, "network": asdict(self.config)}


def masked_softmax(logits: torch.Tensor) -> torch.Tensor:
    """Probabilities from logits where illegal actions are -inf; rows with no legal action give zeros."""
    finite = torch.isfinite(logits)
    probs = torch.softmax(logits.masked_fill(~finite, -1e30), dim=1) * finite
    return probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-30)


class NetworkEvaluator:
    """The search's leaf evaluator: one forward pass for all leaves of all trees.

    Returns priors (probabilities over legal actions) and values from the first
    player's view, as the search engine expects.
    """

    def __init__(self, net: PolicyValueNet, game: Game, device: torch.device | str = "cpu"):
        self.net, self.game, self.device = net, game, torch.device(device)
        self.calls = 0
        self.positions = 0

    @torch.inference_mode()
    def __call__(self, states: State, keys: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        planes = self.game.encode(states).to(self.device)
        legal = self.game.legal_mask(states)
        logits, value = self.net(planes, legal.to(self.device))
        self.calls += 1
        self.positions += states.batch_size
        prior = masked_softmax(logits.float()).to(states.device)
        sign = 1.0 - 2.0 * states.to_play.float()  # the network's view (player to move) -> first player's
        return prior, value.float().to(states.device) * sign
