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

from .pooling import board_pool, global_pool
from .quantized import ConvNormReluInt8, FullyConnectedHeadsInt8, GlobalPoolingBlockInt8, PooledHeadsInt8, ResidualBlockInt8


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

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """`mask` float [B, 1, H, W]: 1 on each board's points (azero/pooling.py); None: all of them."""
        y = F.relu(self.bn1(self.conv1(x)))
        if mask is None:
            return F.relu(x + self.bn2(self.conv2(y)))
        return F.relu(x + self.bn2(self.conv2(y * mask))) * mask


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

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """As ResidualBlock's."""
        pooled = global_pool(F.relu(self.pool_bn(self.pool_conv(x))), mask)
        y = F.relu(self.bn1(self.conv1(x)) + self.pool_fc(pooled)[:, :, None, None])
        if mask is None:
            return F.relu(x + self.bn2(self.conv2(y)))
        return F.relu(x + self.bn2(self.conv2(y * mask))) * mask


def _value(out: torch.Tensor, wdl: bool) -> torch.Tensor:
    """The value head's last layer's output [B, 1] (tanh) or [B, 3] (win, draw, loss) -> float [B]."""
    return wdl_value(out) if wdl else torch.tanh(out).squeeze(1)


def _masked(logits: torch.Tensor, legal: torch.Tensor | None) -> torch.Tensor:
    return logits if legal is None else logits.masked_fill(~legal, float("-inf"))


class FullyConnectedHeads:
    """The policy head (a 1x1 convolution to 2 planes, then a linear layer over all actions, so a pass
    or a Connect Four column has its own output) and the value head (a 1x1 convolution to one
    plane, a hidden layer, then tanh or win/draw/loss logits) over the trunk's output float [B, c, H, W]
    of one board size (network.heads = "fully_connected").

    Not a module of its own: its layers are the network's (checkpoints name them policy_conv.0.weight,
    value_fc.2.bias, ...); it groups them as the network's last part. Its int8 form: azero/quantized.py's
    FullyConnectedHeadsInt8."""

    int8_form = FullyConnectedHeadsInt8

    def __init__(self, policy_conv: ConvNormRelu, policy_fc: nn.Linear, value_conv: ConvNormRelu,
                 value_fc: nn.Sequential, wdl: bool, opponent_policy_fc: nn.Linear | None = None):
        self.policy_conv, self.policy_fc, self.value_conv, self.value_fc = policy_conv, policy_fc, value_conv, value_fc
        self.wdl, self.opponent_policy_fc = wdl, opponent_policy_fc

    def __call__(self, x: torch.Tensor, legal: torch.Tensor | None = None,
                 mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x float [B, c, H, W], legal bool [B, A] -> (logits float [B, A], value float [B])."""
        _one_size(mask)
        logits = _masked(self.policy_fc(self.policy_conv(x).flatten(1)), legal)
        return logits, _value(self.value_fc(self.value_conv(x).flatten(1)), self.wdl)

    def outputs(self, x: torch.Tensor, legal: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """policy, value, value_logits (wdl), opponent_policy (if it has one) as PolicyValueNet.outputs,
        and value_hidden float [B, hidden] (the score head reads it)."""
        _one_size(mask)
        policy_features = self.policy_conv(x).flatten(1)
        hidden = self.value_fc[1](self.value_fc[0](self.value_conv(x).flatten(1)))
        return _head_outputs(self.policy_fc(policy_features), hidden, self.value_fc[2](hidden), self.wdl, legal,
                             None if self.opponent_policy_fc is None else self.opponent_policy_fc(policy_features))


def _one_size(mask: torch.Tensor | None) -> None:
    if mask is not None:
        raise ValueError("fully connected heads read boards of one size: boards of several sizes in a batch "
                         "need network.heads = pooled")


def _head_outputs(logits, hidden, value_out, wdl: bool, legal, opponent) -> dict[str, torch.Tensor]:
    out = {"policy": _masked(logits, legal), "value": _value(value_out, wdl), "value_hidden": hidden}
    if wdl:
        out["value_logits"] = value_out
    if opponent is not None:
        out["opponent_policy"] = opponent
    return out


class PooledHeads(nn.Module):
    """Heads for boards of any size (network.heads = "pooled"): the policy is a 1x1 convolution's
    logit at each point, the pass (where the game has one) a linear layer over the policy planes
    pooled over the board (`board_pool`); the value is a hidden layer over the value planes pooled
    over the board, then tanh or win/draw/loss logits. With `opponent_policy`, a second logit per
    point (and pass) is the opponent's reply. Over the trunk's output float [B, c, H, W], `mask`
    float [B, 1, H, W] marking each board's points (None: all of them); logits [B, H * W (+ 1)]
    number the points row * W + col of the tensor, the pass last. Its int8 form:
    azero/quantized.py's PooledHeadsInt8."""

    int8_form = PooledHeadsInt8

    def __init__(self, channels: int, planes: int, hidden: int, wdl: bool, has_pass: bool, opponent_policy: bool):
        super().__init__()
        outputs = 2 if opponent_policy else 1
        self.policy_conv = ConvNormRelu(channels, planes, 1)
        self.policy_points = nn.Conv2d(planes, outputs, 1)
        self.policy_pass = nn.Linear(3 * planes, outputs) if has_pass else None
        self.value_conv = ConvNormRelu(channels, planes, 1)
        self.value_fc = nn.Sequential(nn.Linear(3 * planes, hidden), nn.ReLU(), nn.Linear(hidden, 3 if wdl else 1))
        self.wdl = wdl

    def _policy(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """float [B, outputs, H * W (+ 1)]: the logits of every point (off the board -inf) and the pass."""
        planes = self.policy_conv(x)
        if mask is not None:
            planes = planes * mask
        logits = self.policy_points(planes).flatten(2)
        if mask is not None:
            logits = logits.masked_fill(mask.flatten(2) == 0, float("-inf"))
        if self.policy_pass is None:
            return logits
        return torch.cat([logits, self.policy_pass(board_pool(planes, mask))[:, :, None]], dim=2)

    def _hidden(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        planes = self.value_conv(x)
        return self.value_fc[1](self.value_fc[0](board_pool(planes if mask is None else planes * mask, mask)))

    def forward(self, x: torch.Tensor, legal: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x float [B, c, H, W], legal bool [B, H * W (+ 1)] -> (logits float [B, H * W (+ 1)], value float [B])."""
        logits = _masked(self._policy(x, mask)[:, 0], legal)
        return logits, _value(self.value_fc[2](self._hidden(x, mask)), self.wdl)

    def outputs(self, x: torch.Tensor, legal: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """As FullyConnectedHeads.outputs."""
        policy, hidden = self._policy(x, mask), self._hidden(x, mask)
        opponent = policy[:, 1] if policy.shape[1] == 2 else None
        return _head_outputs(policy[:, 0], hidden, self.value_fc[2](hidden), self.wdl, legal, opponent)


def wdl_value(logits: torch.Tensor) -> torch.Tensor:
    """float [B, 3] logits of (win, draw, loss) -> float [B]: P(win) - P(loss)."""
    probs = torch.softmax(logits, dim=1)
    return probs[:, 0] - probs[:, 2]
