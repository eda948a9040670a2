"""Networks for tests."""

from __future__ import annotations

import torch

from azero.network import NetworkConfig, PolicyValueNet


def small_net(game, seed: int = 0, **heads) -> PolicyValueNet:
    """A small network in eval mode whose batch norms do something (int8 folds their statistics);
    `heads`: NetworkConfig's head switches (value_head=, ownership=, ...)."""
    torch.manual_seed(seed)
    net = PolicyValueNet(NetworkConfig(blocks=2, channels=16, value_hidden=16, **heads), game).eval()
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return net
