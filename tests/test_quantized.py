"""The int8 network follows the float network's structure: each part (stem, trunk block, heads)
names its int8 form, a change the form can follow carries over, and a part it cannot follow is
one error naming azero/quantized.py and the part's type (the accuracy of int8 itself is tested
in test_learner.py and test_katago.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import games
from azero.blocks import ConvNormRelu, ResidualBlock
from azero.network import NetworkEvaluator
from azero.quantized import Int8FormError, Int8Network, calibration_positions
from networks import small_net

GAME = games.make("gomoku", size=8, k=5)


class DoublingBlock(nn.Module):
    """A trunk block azero/quantized.py has no int8 form of."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * x


class HalfSkipBlock(ResidualBlock):
    """A residual block changed (half the skip connection) without a change to its int8 form."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(0.5 * x + self.bn2(self.conv2(y)))


class DenseBlock(ResidualBlock):
    """A residual block whose second convolution reads its input beside the first's output: its
    layers have ResidualBlock's names, but not its shapes."""

    def __init__(self, channels: int):
        super().__init__(channels)
        self.conv2 = nn.Conv2d(2 * channels, channels, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(torch.cat([x, y], dim=1))))


class RenamedBlock(nn.Module):
    """A block that names ResidualBlock's int8 form but whose layers have other names."""

    int8_form = ResidualBlock.int8_form

    def __init__(self, channels: int):
        super().__init__()
        self.first = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.first(x))


def _positions(batch: int = 32):
    state = GAME.initial_state(batch)
    generator = torch.Generator().manual_seed(1)
    for _ in range(6):
        state = GAME.step(state, games.sample_uniform_legal(GAME.legal_mask(state), generator))
    return state, GAME.encode(state), GAME.legal_mask(state)


def test_a_block_without_an_int8_form_is_one_error_naming_the_file_and_the_block():
    net = small_net(GAME)
    net.trunk[1] = DoublingBlock()
    message = "azero/quantized.py has no int8 form of DoublingBlock: write one there"
    with pytest.raises(Int8FormError, match=message):
        Int8Network(net, calibration_positions(GAME))
    state, _, _ = _positions()
    with pytest.raises(Int8FormError, match=message):  # as the search meets it
        NetworkEvaluator(net, GAME, precision="int8")(state)
    prior, _ = NetworkEvaluator(net, GAME, precision="float32")(state)  # the float network still runs
    assert torch.allclose(prior.sum(dim=1), torch.ones(len(prior)))


def test_a_block_changed_without_its_int8_form_is_refused_not_answered_wrongly():
    net = small_net(GAME)
    changed = HalfSkipBlock(16).eval()
    changed.load_state_dict(net.trunk[0].state_dict())
    net.trunk[0] = changed
    with pytest.raises(Int8FormError, match=r"azero/quantized.py's ResidualBlockInt8 does not compute what "
                                            r"HalfSkipBlock does \(off by up to .* update it to HalfSkipBlock.forward"):
        Int8Network(net, calibration_positions(GAME))
    net.trunk[0] = DenseBlock(16).eval()
    with pytest.raises(Int8FormError, match="azero/quantized.py's ResidualBlockInt8 cannot compute DenseBlock "
                                            r"\(.*\): update it to DenseBlock.forward"):
        Int8Network(net, calibration_positions(GAME))
    net.trunk[0] = RenamedBlock(16)
    with pytest.raises(Int8FormError, match="azero/quantized.py's ResidualBlockInt8 cannot read RenamedBlock "
                                            r"\(.*conv1.*\): update it to RenamedBlock's layers"):
        Int8Network(net, calibration_positions(GAME))


def test_parts_that_do_not_chain_as_forward_does_are_refused():
    net = small_net(GAME)
    forward = net.forward
    net.forward = lambda planes, legal=None: tuple(out * 0.5 for out in forward(planes, legal))
    with pytest.raises(Int8FormError, match=r"PolicyValueNet.parts\(\) does not list the parts its forward runs"):
        Int8Network(net, calibration_positions(GAME))


def test_a_change_the_int8_form_can_follow_carries_over():
    """A 5x5 stem: the forms read each convolution's geometry and shapes from its layers."""
    net = small_net(GAME)
    net.stem = ConvNormRelu(GAME.num_planes, 16, 5).eval()
    with torch.no_grad():
        net.stem[1].running_mean.uniform_(-0.5, 0.5)
        net.stem[1].running_var.uniform_(0.5, 2.0)
    _, planes, legal = _positions()
    module = Int8Network(net, calibration_positions(GAME))
    with torch.inference_mode():
        logits, value = net(planes, legal)
        logits8, value8 = module(planes, legal)
    assert torch.equal(torch.isinf(logits8), ~legal)
    assert (logits8 - logits)[legal].abs().max() < 0.1 * logits[legal].std()
    assert (value8 - value).abs().max() < 5e-3
