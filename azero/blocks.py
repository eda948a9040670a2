"""The parts of the policy-value network (azero/network.py puts them together): the stem's and
heads' convolution, the residual blocks, the heads.

    x = ResidualBlock(channels)(x)             # float [B, c, H, W] -> float [B, c, H, W]
    logits, value = heads(x, legal)            # -> float [B, A], float [B]

Each part's class names its int8 form in azero/quantized.py (`int8_form`); building an int8
module checks each form against its part, so a new or changed block needs its form there.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .quantized import ConvNormReluInt8, FullyConnectedHeadsInt8, GlobalPoolingBlockInt8, ResidualBlockInt8


def global_pool(x: torch.Tensor) -> torch.Tensor:
    """float [B, C, H, W] -> float [B, 2C]: each channel's mean over the board, then each one's maximum.

    (KataGo also pools the mean scaled by the board's width, which tells boards of several
    sizes apart; one network here plays one board size, where that feature is the mean again.)
    """
    return torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3))], dim=1)


class ConvNormRelu(nn.Sequential):
    """A convolution without bias, batch norm and ReLU (the stem; the heads' 1x1 convolutions):
    float [B, C, H, W] -> float [B, out, H, W]."""

    int8_form = ConvNormReluInt8

    def __init__(self, channels: int, out: int, kernel: int):
        super().__init__(nn.Conv2d(channels, out, kernel, padding=kernel // 2, bias=False), nn.BatchNorm2d(out), nn.ReLU())


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a skip connection: float [B, c, H, W] -> the same.

    Its int8 form is azero/quantized.py's ResidualBlockInt8 (`int8_form`): a change here is one
    there (building the int8 module checks that they agree)."""

    int8_form = ResidualBlockInt8

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class GlobalPoolingBlock(nn.Module):
    """A residual block whose first convolution's output gets a bias per channel computed from
    the whole board: `pooled` channels of a 3x3 convolution (batch norm, ReLU) are pooled
    (`global_pool`) and mapped by a linear layer to one value per trunk channel (KataGo's
    global pooling, in this network's post-activation order). Its int8 form: azero/quantized.py's
    GlobalPoolingBlockInt8."""

    int8_form = GlobalPoolingBlockInt8

    def __init__(self, channels: int, pooled: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pool_conv = nn.Conv2d(channels, pooled, 3, padding=1, bias=False)
        self.pool_bn = nn.BatchNorm2d(pooled)
        self.pool_fc = nn.Linear(2 * pooled, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = global_pool(F.relu(self.pool_bn(self.pool_conv(x))))
        y = F.relu(self.bn1(self.conv1(x)) + self.pool_fc(pooled)[:, :, None, None])
        return F.relu(x + self.bn2(self.conv2(y)))


class FullyConnectedHeads:
    """The policy head (a 1x1 convolution to 2 planes, then a linear layer over all actions, so a pass
    or a Connect Four column has its own output) and the value head (a 1x1 convolution to one
    plane, a hidden layer, then tanh or win/draw/loss logits) over the trunk's output float [B, c, H, W].

    Not a module of its own: its layers are the network's (checkpoints name them policy_conv.0.weight,
    value_fc.2.bias, ...); it groups them as the network's last part. Its int8 form: azero/quantized.py's
    FullyConnectedHeadsInt8."""

    int8_form = FullyConnectedHeadsInt8

    def __init__(self, policy_conv: ConvNormRelu, policy_fc: nn.Linear, value_conv: ConvNormRelu,
                 value_fc: nn.Sequential, wdl: bool):
        self.policy_conv, self.policy_fc, self.value_conv, self.value_fc = policy_conv, policy_fc, value_conv, value_fc
        self.wdl = wdl

    def __call__(self, x: torch.Tensor, legal: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x float [B, c, H, W], legal bool [B, A] -> (logits float [B, A], value float [B])."""
        logits = self.policy_fc(self.policy_conv(x).flatten(1))
        if legal is not None:
            logits = logits.masked_fill(~legal, float("-inf"))
        return logits, self.value(self.value_fc(self.value_conv(x).flatten(1)))

    def value(self, out: torch.Tensor) -> torch.Tensor:
        """The value head's last layer's output [B, 1] (tanh) or [B, 3] (win, draw, loss) -> float [B]."""
        return wdl_value(out) if self.wdl else torch.tanh(out).squeeze(1)


def wdl_value(logits: torch.Tensor) -> torch.Tensor:
    """float [B, 3] logits of (win, draw, loss) -> float [B]: P(win) - P(loss)."""
    probs = torch.softmax(logits, dim=1)
    return probs[:, 0] - probs[:, 2]
