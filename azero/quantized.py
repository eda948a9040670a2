"""Int8 inference of a policy-value network on the CPU.

    module = Int8Network(net, calibration_positions(game))   # net in eval mode
    logits, value = module(planes, legal)                    # as net(planes, legal), in float32

Batch norm is folded into each convolution. Weights are int8 with one scale per
output channel; activations are uint8 with one scale per tensor (0/1 planes are
their own uint8 values). The trunk's convolutions and the two heads' 1x1
convolutions (one convolution with three output channels) are PyTorch's quantized
CPU operators, fused with their ReLU; with the oneDNN engine each residual block's
addition happens inside its second convolution. The policy layer and the value
head's hidden layer are one float32 matrix product over the head planes, then the
value's last layer and tanh.

Each activation's range is the largest value it takes on the calibration
positions, which are positions of random play at every depth of the game (never
finished ones), drawn with a fixed seed: the module depends on the weights alone,
not on which batch happened to build it, so a resumed run builds the same one.
Ranges are not clipped at a percentile: the largest activations carry the network's
sharpest judgements (docs/benchmarks.md has the accuracy of both choices).

On CPUs with VNNI (AVX-512 VNNI, AVX-VNNI, AMX) the uint8 x int8 products are
accumulated in 32 bits and activations use all 256 levels; without it, x86 kernels
add pairs of products in 16 bits, which can overflow, so activations get 128
levels (what PyTorch's own x86 configuration does with `reduce_range`).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from pathlib import Path
from types import SimpleNamespace

import torch
from torch.nn import functional as F

from games import Game, sample_uniform_legal

QUANTIZED_ENGINES = ("x86", "fbgemm", "onednn")
VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


@contextlib.contextmanager
def _quiet():
    """PyTorch 2.13 warns that its quantized tensors are deprecated (torchao is to replace them);
    they are what runs int8 convolutions on the CPU without a compiler toolchain, and
    `int8_runs` checks that they still work, so "auto" falls back where they do not."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*quantized tensor creation functions.*deprecated")
        yield


def _cpu_flags() -> set[str]:
    try:
        return set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return set()


@functools.cache
def int8_runs() -> bool:
    """Whether PyTorch's quantized convolutions run here under an x86 quantized engine."""
    if torch.backends.quantized.engine not in QUANTIZED_ENGINES:
        return False
    try:  # a 1x1 convolution of one pixel, as Int8Network runs them
        with _quiet():
            weight = torch.quantize_per_channel(torch.ones(1, 1, 1, 1), torch.ones(1, dtype=torch.double),
                                                torch.zeros(1, dtype=torch.long), 0, torch.qint8)
            packed = torch.ops.quantized.conv2d_prepack(weight, None, [1, 1], [0, 0], [1, 1], 1)
            x = torch.quantize_per_tensor(torch.ones(1, 1, 1, 1), 1.0, 0, torch.quint8)
            return float(torch.ops.quantized.conv2d_relu(x, packed, 1.0, 0).dequantize()) == 1.0
    except (AttributeError, RuntimeError, NotImplementedError):
        return False


@functools.cache
def native_int8() -> bool:
    """Whether this CPU multiplies int8 with 32-bit accumulation (VNNI) and int8 runs here."""
    return bool(_cpu_flags() & set(VNNI_FLAGS)) and int8_runs()


@functools.cache
def fast_int8() -> bool:
    """Whether int8 runs here faster than float32: with VNNI, or with AVX2, whose kernels add
    pairs of products in 16 bits (128 activation levels). On a Zen 3 (AVX2, no VNNI) int8 ran
    1.9-3.1x float32 on every preset's network at batches of 16-256, and played even with it
    at equal simulations (docs/journal/benchmarks.md, "Int8 without VNNI")."""
    return bool(_cpu_flags() & {*VNNI_FLAGS, "avx2"}) and int8_runs()


def calibration_positions(game: Game, count: int = 256, seed: int = 0) -> torch.Tensor:
    """Planes float [count, C, H, W] of unfinished positions of random play, at depths 0 .. A/2.

    Row i is the position after i mod (A/2 + 1) random moves, or the last unfinished
    position of its game if that game ended sooner.
    """
    generator = torch.Generator().manual_seed(seed)
    deepest = max(1, game.num_actions // 2)
    depth = torch.arange(count) % (deepest + 1)
    state = game.initial_state(count)
    out = None
    for ply in range(deepest + 1):
        planes = game.encode(state).float()
        if out is None:
            out = torch.empty_like(planes)
        rows = (depth >= ply) & ~state.done
        out[rows] = planes[rows]
        if ply < deepest:
            state = game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    return out


@functools.cache
def _operators() -> SimpleNamespace:
    """The quantized operators Int8Network calls, each as its overload's C++ callable where torch
    exposes one. Through `torch.ops.quantized.NAME(...)` every call first runs a Python check for
    the stand-in objects of torch.export's tracing (never given here), a couple of microseconds a
    call: a forward pass makes about two dozen of these calls."""
    ops = torch.ops.quantized
    overloads = {"conv2d_relu": ops.conv2d_relu.new, "conv2d": ops.conv2d.new,
                 "conv2d_add_relu": ops.conv2d_add_relu.default, "add_relu": ops.add_relu.default}
    return SimpleNamespace(**{name: getattr(overload, "_op", overload) for name, overload in overloads.items()})


@contextlib.contextmanager
def _engine(name: str | None):
    """PyTorch's quantized engine set to `name` for the block (None: leave it)."""
    before = torch.backends.quantized.engine
    if name is not None and name != before:
        torch.backends.quantized.engine = name
    try:
        yield
    finally:
        if torch.backends.quantized.engine != before:
            torch.backends.quantized.engine = before


def _folded(conv: torch.nn.Conv2d, norm: torch.nn.BatchNorm2d) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, bias) of the convolution followed by the batch norm in eval mode."""
    scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
    weight = conv.weight * scale[:, None, None, None]
    bias = norm.bias - norm.running_mean * scale
    if conv.bias is not None:
        bias = bias + conv.bias * scale
    return weight.detach().float(), bias.detach().float()


def _int8_weight(weight: torch.Tensor) -> torch.Tensor:
    """Symmetric int8, one scale per output channel."""
    scale = weight.abs().amax(dim=(1, 2, 3)).clamp(min=1e-8) / 127
    zero = torch.zeros(weight.shape[0], dtype=torch.long)
    return torch.quantize_per_channel(weight, scale.double(), zero, 0, torch.qint8)


class Int8Network:
    """A PolicyValueNet in eval mode as int8 operators (see the module's docstring)."""

    def __init__(self, net, calibration: torch.Tensor, levels: int | None = None):
        if net.training:
            raise ValueError("Int8Network needs the network in eval mode (its batch norm statistics are folded)")
        self.levels = levels or (255 if native_int8() else 127)
        with torch.no_grad():
            convs = [_folded(net.stem[0], net.stem[1])]
            # per block: None, or the pooling branch's (channels of the first convolution, linear layer)
            self.pooling: list[tuple[int, torch.Tensor, torch.Tensor] | None] = []
            for block in net.trunk:
                first = _folded(block.conv1, block.bn1)
                if hasattr(block, "pool_conv"):
                    pool_w, pool_b = _folded(block.pool_conv, block.pool_bn)
                    first = (torch.cat([first[0], pool_w]), torch.cat([first[1], pool_b]))
                    self.pooling.append((block.conv1.out_channels, block.pool_fc.weight.detach().float(),
                                         block.pool_fc.bias.detach().float()))
                else:
                    self.pooling.append(None)
                convs += [first, _folded(block.conv2, block.bn2)]
            policy_w, policy_b = _folded(net.policy_conv[0], net.policy_conv[1])
            value_w, value_b = _folded(net.value_conv[0], net.value_conv[1])
            head = (torch.cat([policy_w, value_w]), torch.cat([policy_b, value_b]))
            self.policy_planes = policy_w.shape[0]
            ranges = self._ranges(calibration.float(), convs, head)
        # planes of small whole numbers (0/1) are their own uint8 values: no rounding, no scaling
        self.whole_planes = bool((calibration == calibration.round()).all() and calibration.min() >= 0
                                 and calibration.max() <= self.levels)
        self.input_q = (1.0, 0) if self.whole_planes else self._qparams(*ranges[0])
        self.output_q = [self._qparams(*r) for r in ranges[1:]]
        # oneDNN adds the residual inside the block's second convolution (one rounding, not two)
        self.engine = "onednn" if "onednn" in torch.backends.quantized.supported_engines else None
        with _engine(self.engine), _quiet():
            pack = torch.ops.quantized.conv2d_prepack
            self.convs = [pack(_int8_weight(w), b, [1, 1], [1, 1], [1, 1], 1) for w, b in convs]
            self.head = pack(_int8_weight(head[0]), head[1], [1, 1], [0, 0], [1, 1], 1)
        self._linear_heads(net)

    def _linear_heads(self, net) -> None:
        """The policy layer and the value head's hidden layer as one matrix over the head planes
        in channels-last order (as the quantized operators leave them): one product for both."""
        planes = self.policy_planes + 1
        policy = net.policy_fc.weight.detach().float()  # [A, p * cells], channel-major
        hidden = net.value_fc[0].weight.detach().float()  # [hidden, cells]
        cells = hidden.shape[1]
        weight = torch.zeros(policy.shape[0] + hidden.shape[0], cells, planes)
        weight[: policy.shape[0], :, : self.policy_planes] = policy.view(-1, self.policy_planes, cells).transpose(1, 2)
        weight[policy.shape[0] :, :, self.policy_planes] = hidden
        self.actions = policy.shape[0]
        self.head_weight = weight.flatten(1).contiguous()
        self.head_bias = torch.cat([net.policy_fc.bias.detach().float(), net.value_fc[0].bias.detach().float()])
        self.value_weight = net.value_fc[2].weight.detach().float().t().contiguous()  # [hidden, 1 or 3]
        self.value_bias = net.value_fc[2].bias.detach().float()

    @staticmethod
    def _pool_bias(out: torch.Tensor, pooling: tuple[int, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """A pooling block's first convolution's output after the pooled bias and ReLU: float [B, c, H, W]
        from the fused convolution's output float [B, c + pooled, H, W] (before ReLU)."""
        channels, weight, bias = pooling
        pooled = F.relu(out[:, channels:])
        pooled = torch.cat([pooled.mean(dim=(2, 3)), pooled.amax(dim=(2, 3))], dim=1)
        return F.relu(out[:, :channels] + F.linear(pooled, weight, bias)[:, :, None, None])

    def _ranges(self, x, convs, head) -> list[tuple[float, float]]:
        """(min, max) of the input and of every quantized output, in the order `__call__` makes them."""
        ranges = [(x.min().item(), x.max().item())]
        y = F.relu(F.conv2d(x, *convs[0], padding=1))
        ranges.append((0.0, y.max().item()))
        for first, second, pooling in zip(convs[1::2], convs[2::2], self.pooling):
            if pooling is None:
                t = F.relu(F.conv2d(y, *first, padding=1))
            else:  # the fused convolution's output, then the sum that is quantized again
                out = F.conv2d(y, *first, padding=1)
                t = self._pool_bias(out, pooling)
                ranges.append((out.min().item(), out.max().item()))
            u = F.conv2d(t, *second, padding=1)
            y = F.relu(y + u)
            ranges += [(0.0, t.max().item()), (u.min().item(), u.max().item()), (0.0, y.max().item())]
        ranges.append((0.0, F.relu(F.conv2d(y, *head)).max().item()))
        return ranges

    def _qparams(self, low: float, high: float) -> tuple[float, int]:
        """(scale, zero point) of uint8 covering [low, high] and 0."""
        low, high = min(low, 0.0), max(high, low + 1e-6, 1e-6)
        scale = (high - low) / self.levels
        return scale, int(round(-low / scale))

    def __call__(self, planes: torch.Tensor, legal: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """planes float [B, C, H, W] -> (logits float [B, A], value float [B]), as PolicyValueNet.forward."""
        quantized = _operators()
        scales = iter(self.output_q)
        if self.whole_planes:
            values = planes.to(torch.uint8, memory_format=torch.channels_last)
            x = torch._make_per_tensor_quantized_tensor(values, *self.input_q)
        else:
            with _quiet():
                x = torch.quantize_per_tensor(planes.float(), *self.input_q, torch.quint8)
        with _engine(self.engine):
            y = quantized.conv2d_relu(x, self.convs[0], *next(scales))
            for first, second, pooling in zip(self.convs[1::2], self.convs[2::2], self.pooling):
                if pooling is None:
                    t = quantized.conv2d_relu(y, first, *next(scales))
                else:
                    out = quantized.conv2d(y, first, *next(scales)).dequantize()
                    with _quiet():
                        t = torch.quantize_per_tensor(self._pool_bias(out, pooling), *next(scales), torch.quint8)
                if self.engine == "onednn":
                    next(scales)  # the sum's own range is not needed
                    y = quantized.conv2d_add_relu(t, y, second, *next(scales))
                else:
                    u = quantized.conv2d(t, second, *next(scales))
                    y = quantized.add_relu(y, u, *next(scales))
            h = quantized.conv2d_relu(y, self.head, *next(scales)).dequantize()
        # [B, p + 1, H, W] in channels-last memory -> [B, H * W * (p + 1)] without a copy
        out = torch.addmm(self.head_bias, h.permute(0, 2, 3, 1).reshape(h.shape[0], -1), self.head_weight.t())
        logits = out[:, : self.actions]
        if legal is not None:
            logits = logits.masked_fill(~legal, float("-inf"))
        value = torch.addmm(self.value_bias, out[:, self.actions :].relu(), self.value_weight)
        if value.shape[1] == 3:  # win, draw, loss
            probs = torch.softmax(value, dim=1)
            return logits, probs[:, 0] - probs[:, 2]
        return logits, torch.tanh(value).squeeze(1)
