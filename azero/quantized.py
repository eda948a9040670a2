"""Int8 inference of a policy-value network on the CPU.

    module = Int8Network(net, calibration_positions(game))   # net in eval mode
    logits, value = module(planes, legal)                    # as net(planes, legal), in float32

The int8 module follows the float network's structure: `net.parts()` lists its parts (the
stem, each trunk block, the heads), and each part's class names its int8 form here in
`int8_form` (blocks.ResidualBlock.int8_form is ResidualBlockInt8, ...). Building checks
each form against its part in float32 on a few calibration positions, so a part this file
has no form of, or a block changed without its form, is one Int8FormError naming this file
and the part's type, never a wrong answer.

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

from .pooling import board_pool, global_pool

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


class Int8FormError(TypeError):
    """A part of the network that this module has no int8 form of, or whose form does not compute
    what the part computes: the message names the part's type and this file."""


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


class _Convolution:
    """A convolution with its batch norm folded in (several stacked along the output channels:
    one operator computes them all), in float32 for calibration and packed as int8."""

    def __init__(self, *pairs: tuple[torch.nn.Conv2d, torch.nn.BatchNorm2d]):
        conv = pairs[0][0]
        folded = [_folded(c, n) for c, n in pairs]
        self.weight = torch.cat([w for w, _ in folded])
        self.bias = torch.cat([b for _, b in folded])
        self.geometry = (list(conv.stride), list(conv.padding), list(conv.dilation), conv.groups)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """float [B, C, H, W] -> float [B, C', H', W'] (no ReLU)."""
        stride, padding, dilation, groups = self.geometry
        return F.conv2d(x, self.weight, self.bias, stride, padding, dilation, groups)

    def packed(self):
        """The int8 weights and float32 bias as PyTorch's quantized convolutions take them."""
        return torch.ops.quantized.conv2d_prepack(_int8_weight(self.weight), self.bias, *self.geometry)


def _high(x: torch.Tensor) -> tuple[float, float]:
    """(0, max): the range of an activation after ReLU."""
    return 0.0, x.max().item()


def _span(x: torch.Tensor) -> tuple[float, float]:
    return x.min().item(), x.max().item()


class ConvNormReluInt8:
    """The int8 form of a convolution, batch norm and ReLU (blocks.ConvNormRelu: the stem)."""

    def __init__(self, module):
        self.conv = _Convolution((module[0], module[1]))

    def calibrate(self, x: torch.Tensor) -> torch.Tensor:
        """Float [B, C, H, W] -> float [B, c, H, W], as the int8 form computes it before rounding;
        notes the range of each activation it quantizes."""
        y = F.relu(self.conv(x))
        self.ranges = [_high(y)]
        return y

    def prepare(self, qparams, engine: str | None) -> None:
        """Packs the weights and sets each output's (scale, zero point) from its range."""
        self.weights, self.out_q = self.conv.packed(), qparams(*self.ranges[0])
        self.conv2d_relu = _operators().conv2d_relu

    def __call__(self, x):
        """quint8 [B, C, H, W] -> quint8 [B, c, H, W]."""
        return self.conv2d_relu(x, self.weights, *self.out_q)


class ResidualBlockInt8:
    """The int8 form of blocks.ResidualBlock: y + conv2(relu(conv1(y))), then ReLU; with the oneDNN
    engine the addition happens inside the second convolution (one rounding, not two)."""

    def __init__(self, block):
        self.first = _Convolution((block.conv1, block.bn1))
        self.second = _Convolution((block.conv2, block.bn2))

    def _first_float(self, y: torch.Tensor) -> torch.Tensor:
        self.ranges = []
        return F.relu(self.first(y))

    def calibrate(self, y: torch.Tensor) -> torch.Tensor:
        """As ConvNormReluInt8.calibrate."""
        t = self._first_float(y)
        u = self.second(t)
        out = F.relu(y + u)
        self.ranges += [_high(t), _span(u), _high(out)]
        return out

    def prepare(self, qparams, engine: str | None) -> None:
        """As ConvNormReluInt8.prepare."""
        *first, t_range, u_range, out_range = self.ranges
        self.first_q = [qparams(*r) for r in first]
        self.t_q, self.u_q, self.out_q = qparams(*t_range), qparams(*u_range), qparams(*out_range)
        self.first_weights, self.second_weights = self.first.packed(), self.second.packed()
        self.fused_add = engine == "onednn"
        operators = _operators()
        self.conv2d_relu, self.conv2d = operators.conv2d_relu, operators.conv2d
        self.conv2d_add_relu, self.add_relu = operators.conv2d_add_relu, operators.add_relu

    def _second(self, t, y):
        if self.fused_add:
            return self.conv2d_add_relu(t, y, self.second_weights, *self.out_q)
        return self.add_relu(y, self.conv2d(t, self.second_weights, *self.u_q), *self.out_q)

    def __call__(self, y):
        """quint8 [B, c, H, W] -> quint8 [B, c, H, W]."""
        return self._second(self.conv2d_relu(y, self.first_weights, *self.t_q), y)


class GlobalPoolingBlockInt8(ResidualBlockInt8):
    """The int8 form of blocks.GlobalPoolingBlock: the first convolution and the pooling branch's
    are one int8 convolution; the pooling, its linear layer and the bias run in float32, and the
    sum is quantized again for the second convolution."""

    def __init__(self, block):
        self.first = _Convolution((block.conv1, block.bn1), (block.pool_conv, block.pool_bn))
        self.second = _Convolution((block.conv2, block.bn2))
        self.channels = block.conv1.out_channels
        self.pool_weight = block.pool_fc.weight.detach().float()
        self.pool_bias = block.pool_fc.bias.detach().float()

    def _pooled(self, out: torch.Tensor) -> torch.Tensor:
        """The first convolution's output after the pooled bias and ReLU: float [B, c, H, W] from the
        fused convolution's output float [B, c + pooled, H, W] (before ReLU)."""
        bias = F.linear(global_pool(F.relu(out[:, self.channels :])), self.pool_weight, self.pool_bias)
        return F.relu(out[:, : self.channels] + bias[:, :, None, None])

    def _first_float(self, y: torch.Tensor) -> torch.Tensor:
        out = self.first(y)
        self.ranges = [_span(out)]
        return self._pooled(out)

    def __call__(self, y):
        """As ResidualBlockInt8's."""
        out = self.conv2d(y, self.first_weights, *self.first_q[0]).dequantize()
        with _quiet():
            t = torch.quantize_per_tensor(self._pooled(out), *self.t_q, torch.quint8)
        return self._second(t, y)


def _value(out: torch.Tensor) -> torch.Tensor:
    """The value head's last layer's output float [B, 1] (tanh) or [B, 3] (win, draw, loss) -> float [B]."""
    if out.shape[1] == 3:
        probs = torch.softmax(out, dim=1)
        return probs[:, 0] - probs[:, 2]
    return torch.tanh(out).squeeze(1)


class _HeadsInt8:
    """What both heads' int8 forms share: one int8 1x1 convolution (`self.conv`, fused with ReLU)
    for both heads, then `_outputs` in float32 on its planes."""

    def calibrate(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The trunk's output float [B, c, H, W] -> (logits float [B, A], value float [B])."""
        h = F.relu(self.conv(y))
        self.ranges = [_high(h)]
        return self._outputs(h, None)

    def prepare(self, qparams, engine: str | None) -> None:
        """As ConvNormReluInt8.prepare."""
        self.weights, self.out_q = self.conv.packed(), qparams(*self.ranges[0])
        self.conv2d_relu = _operators().conv2d_relu

    def __call__(self, y, legal: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """quint8 [B, c, H, W] -> (logits float [B, A], value float [B])."""
        return self._outputs(self.conv2d_relu(y, self.weights, *self.out_q).dequantize(), legal)


class FullyConnectedHeadsInt8(_HeadsInt8):
    """The int8 form of blocks.FullyConnectedHeads: the two heads' 1x1 convolutions are one int8
    convolution (fused with ReLU); the policy layer and the value head's hidden layer are one
    float32 matrix product over its planes in channels-last order (as the quantized operators leave
    them), then the value's last layer and tanh (or win, draw, loss)."""

    def __init__(self, heads):
        self.conv = _Convolution((heads.policy_conv[0], heads.policy_conv[1]),
                                 (heads.value_conv[0], heads.value_conv[1]))
        policy_planes = heads.policy_conv[0].out_channels
        planes = policy_planes + heads.value_conv[0].out_channels
        policy = heads.policy_fc.weight.detach().float()  # [A, p * cells], channel-major
        hidden = heads.value_fc[0].weight.detach().float()  # [hidden, v * cells], channel-major
        cells = policy.shape[1] // policy_planes
        weight = torch.zeros(policy.shape[0] + hidden.shape[0], cells, planes)
        weight[: policy.shape[0], :, :policy_planes] = policy.view(-1, policy_planes, cells).transpose(1, 2)
        weight[policy.shape[0] :, :, policy_planes:] = hidden.view(hidden.shape[0], -1, cells).transpose(1, 2)
        self.actions = policy.shape[0]
        self.head_weight = weight.flatten(1).contiguous()
        self.head_bias = torch.cat([heads.policy_fc.bias.detach().float(), heads.value_fc[0].bias.detach().float()])
        self.value_weight = heads.value_fc[2].weight.detach().float().t().contiguous()  # [hidden, 1 or 3]
        self.value_bias = heads.value_fc[2].bias.detach().float()

    def _outputs(self, h: torch.Tensor, legal: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The head planes float [B, p + v, H, W] (channels-last memory: no copy) -> (logits, value)."""
        out = torch.addmm(self.head_bias, h.permute(0, 2, 3, 1).reshape(h.shape[0], -1), self.head_weight.t())
        logits = out[:, : self.actions]
        if legal is not None:
            logits = logits.masked_fill(~legal, float("-inf"))
        return logits, _value(torch.addmm(self.value_bias, out[:, self.actions :].relu(), self.value_weight))


def _first_output(layer) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, bias) of a layer's first output channel (a convolution's or a linear layer's)."""
    return layer.weight.detach().float()[:1], layer.bias.detach().float()[:1]


class PooledHeadsInt8(_HeadsInt8):
    """The int8 form of blocks.PooledHeads (on boards without a mask: every point on the board):
    the two heads' 1x1 convolutions are one int8 convolution (fused with ReLU); the logit of each
    point, the pooling, the pass and the value's layers run in float32 on its planes."""

    def __init__(self, heads):
        self.conv = _Convolution((heads.policy_conv[0], heads.policy_conv[1]),
                                 (heads.value_conv[0], heads.value_conv[1]))
        self.planes = heads.policy_conv[0].out_channels
        self.points = _first_output(heads.policy_points)  # the player's own policy (not the opponent's)
        self.pass_move = None if heads.policy_pass is None else _first_output(heads.policy_pass)
        self.hidden = (heads.value_fc[0].weight.detach().float(), heads.value_fc[0].bias.detach().float())
        self.value_out = (heads.value_fc[2].weight.detach().float(), heads.value_fc[2].bias.detach().float())

    def _outputs(self, h: torch.Tensor, legal: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The head planes float [B, p + p, H, W] -> (logits float [B, H * W (+ 1)], value float [B])."""
        policy, value_planes = h[:, : self.planes], h[:, self.planes :]
        logits = F.conv2d(policy, *self.points).flatten(1)
        if self.pass_move is not None:
            logits = torch.cat([logits, F.linear(board_pool(policy), *self.pass_move)], dim=1)
        if legal is not None:
            logits = logits.masked_fill(~legal, float("-inf"))
        return logits, _value(F.linear(F.relu(F.linear(board_pool(value_planes), *self.hidden)), *self.value_out))


def _rows(out, count: int):
    """The first `count` rows of a tensor or of each of a tuple of tensors."""
    return tuple(o[:count] for o in out) if isinstance(out, tuple) else out[:count]


CHECKED_POSITIONS = 16  # calibration positions each part's int8 form is checked on against the part


def int8_form(part):
    """The int8 form of one part of a network (`PolicyValueNet.parts()`), built from its weights:
    the class its type names in `int8_form`; Int8FormError if it names none or the form cannot read it."""
    kind = type(part).__name__
    form = getattr(type(part), "int8_form", None)
    if form is None:
        raise Int8FormError(f"azero/quantized.py has no int8 form of {kind}: write one there (as ResidualBlockInt8 "
                            f"for ResidualBlock) and name it in {kind}.int8_form, or run the network in "
                            "float32 or bfloat16 (search.precision)")
    try:
        return form(part)
    except (AttributeError, IndexError, TypeError, RuntimeError) as error:
        raise Int8FormError(f"azero/quantized.py's {form.__name__} cannot read {kind} ({error}): "
                            f"update it to {kind}'s layers") from error


def _check(kind: str, form, ours, theirs) -> None:
    """Int8FormError unless the float32 computation of the int8 form (`ours`) is the part's (`theirs`)."""
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    if len(ours) != len(theirs):
        raise Int8FormError(f"azero/quantized.py's {form} gives {len(ours)} outputs, {kind} {len(theirs)}: "
                            f"update it to {kind}.forward")
    for mine, real in zip(ours, theirs):
        finite = torch.isfinite(real)
        if mine.shape != real.shape:
            gap = f"shape {tuple(mine.shape)}, not {tuple(real.shape)}"
        elif not torch.equal(finite, torch.isfinite(mine)):
            gap = "infinite or NaN where it is not"
        elif torch.allclose(mine[finite], real[finite], rtol=1e-3, atol=1e-4 * (1 + real[finite].abs().max().item())):
            continue
        else:
            gap = f"off by up to {(mine[finite] - real[finite]).abs().max().item():.3g}"
        raise Int8FormError(f"azero/quantized.py's {form} does not compute what {kind} does ({gap} on calibration "
                            f"positions): update it to {kind}.forward")


class Int8Network:
    """A PolicyValueNet in eval mode as int8 operators (see the module's docstring), built part by
    part (`net.parts()`: the stem, each trunk block, the heads) from each part's `int8_form`.

    Building checks each form against its part in float32 on the first CHECKED_POSITIONS
    calibration positions: a part this module has no form of, or one whose form no longer
    computes what it does, is an Int8FormError naming both."""

    def __init__(self, net, calibration: torch.Tensor, levels: int | None = None):
        if net.training:
            raise ValueError("Int8Network needs the network in eval mode (its batch norm statistics are folded)")
        self.levels = levels or (255 if native_int8() else 127)
        x = calibration.float()
        # planes of small whole numbers (0/1) are their own uint8 values: no rounding, no scaling
        self.whole_planes = bool((calibration == calibration.round()).all() and calibration.min() >= 0
                                 and calibration.max() <= self.levels)
        self.input_q = (1.0, 0) if self.whole_planes else self._qparams(*_span(x))
        with torch.no_grad():
            parts = []
            planes = x[:CHECKED_POSITIONS]
            expected = planes
            for part in net.parts():
                form = int8_form(part)
                expected = part(expected)
                try:
                    x = form.calibrate(x)
                except RuntimeError as error:  # e.g. a convolution's weights of another shape than its input's
                    raise Int8FormError(f"azero/quantized.py's {type(form).__name__} cannot compute "
                                        f"{type(part).__name__} ({' '.join(str(error).split())}): update it to "
                                        f"{type(part).__name__}.forward") from error
                _check(type(part).__name__, type(form).__name__, _rows(x, len(planes)), expected)
                parts.append(form)
            whole = net(planes)
            if not all(torch.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(whole, expected, strict=True)):
                raise Int8FormError(f"{type(net).__name__}.parts() does not list the parts its forward runs, in "
                                    "order: azero/quantized.py builds the int8 form from that list")
        # oneDNN adds the residual inside the block's second convolution (one rounding, not two)
        self.engine = "onednn" if "onednn" in torch.backends.quantized.supported_engines else None
        with _engine(self.engine), _quiet():
            for form in parts:
                form.prepare(self._qparams, self.engine)
        self.stem, *self.blocks, self.heads = parts

    def _qparams(self, low: float, high: float) -> tuple[float, int]:
        """(scale, zero point) of uint8 covering [low, high] and 0."""
        low, high = min(low, 0.0), max(high, low + 1e-6, 1e-6)
        scale = (high - low) / self.levels
        return scale, int(round(-low / scale))

    def __call__(self, planes: torch.Tensor, legal: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """planes float [B, C, H, W] -> (logits float [B, A], value float [B]), as PolicyValueNet.forward."""
        if self.whole_planes:
            values = planes.to(torch.uint8, memory_format=torch.channels_last)
            x = torch._make_per_tensor_quantized_tensor(values, *self.input_q)
        else:
            with _quiet():
                x = torch.quantize_per_tensor(planes.float(), *self.input_q, torch.quint8)
        with _engine(self.engine):
            y = self.stem(x)
            for block in self.blocks:
                y = block(y)
            return self.heads(y, legal)
