"""The residual policy-value network.

    net = PolicyValueNet(NetworkConfig(blocks=4, channels=64), game)
    logits, value = net(planes, legal)    # planes float [B, C, H, W], legal bool [B, A]
                                          # -> logits float [B, A] (illegal = -inf), value float [B] in [-1, 1]
    out = net.outputs(planes, legal)      # every head, for training (a dict, below)

The value is from the view of the player to move (the view of `game.encode`).
A stem convolution, `blocks` residual blocks (two 3x3 convolutions with batch
norm), then a policy head (1x1 convolution, then a linear layer over all actions,
so a pass or a Connect Four column has its own output) and a value head (1x1
convolution, a hidden layer, then tanh, or with `value_head = "wdl"` three logits
of win, draw and loss whose value is P(win) - P(loss)). With `heads = "pooled"` the heads fit
boards of any size of the game (a policy logit per point; the pass and the value from the
board pooled), and `on_board` masks let boards of several sizes share a batch (`pad_boards`).

The parts are in azero/blocks.py; `net.parts()` lists what `forward` runs one after another
(the stem, each trunk block, the heads); each part's class names its int8 form in
azero/quantized.py (`int8_form`), which building an int8 module checks against the part: a new
or changed block needs its form there.

KataGo's additions (Wu 2019), each a switch of NetworkConfig, all off by default:
`global_pooling` gives every second residual block a branch that pools a quarter of
its channels over the board (mean and max) and adds the result, through a linear
layer, to every point of its first convolution's output; `ownership` (a 1x1
convolution: who owns each point at the end), `score` (a distribution over the final
margin) and `opponent_policy` (the reply the opponent will play) are auxiliary heads
that only training reads: `forward`, which the search and the frozen and int8
modules run, computes the policy and the value alone. `outputs` returns

    policy            float [B, A]       logits (illegal -inf when `legal` is given)
    value             float [B]          in [-1, 1]
    value_logits      float [B, 3]       win, draw, loss (value_head "wdl" only)
    opponent_policy   float [B, A]       logits of the opponent's reply (opponent_policy only)
    ownership_logits  float [B, H, W]    ownership = tanh (ownership only)
    score_logits      float [B, 2M + 1]  margins -M..M (score only; M = score_limit(game))
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import threading
import typing
import warnings
from dataclasses import asdict, dataclass, field, fields

import torch
from torch import nn

from games import Game, GameError, State
from games.base import player_signs
from games.options import field_option, read_option

from .blocks import ConvNormRelu, FullyConnectedHeads, GlobalPoolingBlock, PooledHeads, ResidualBlock
from .blocks import wdl_value as wdl_value
from .errors import UserError
from .pooling import global_pool as global_pool  # (the network's names, as before the parts had their module)
from .quantized import Int8Network, calibration_positions, fast_int8, native_int8
from .search.settings import PRECISIONS
from .threads import one_thread_if

VALUE_HEADS = ("scalar", "wdl")
HEADS = ("fully_connected", "pooled")


@dataclass
class NetworkConfig:
    """Shape of the residual network (the [network] section of a config).

    Checkpoints record these fields; a checkpoint written before a field existed loads
    with the field's default (the network it describes).
    """

    blocks: int = field(default=4, metadata={"help": "residual blocks", "low": 1, "high": 1000})
    channels: int = field(default=64, metadata={"help": "convolution channels in the trunk", "low": 1,
                                                "high": 65536})
    value_hidden: int = field(default=64, metadata={"help": "units of the value head's hidden layer", "low": 1,
                                                    "high": 1 << 20})
    value_head: str = field(default="scalar", metadata={
        "help": "value output: scalar (tanh, squared error) or wdl (win/draw/loss logits, cross-entropy; "
                "value = P(win) - P(loss))", "choices": VALUE_HEADS})
    global_pooling: bool = field(default=False, metadata={
        "help": "every second residual block pools a quarter of its channels over the board (mean, max) "
                "into a bias of its first convolution (KataGo)"})
    ownership: bool = field(default=False, metadata={
        "help": "auxiliary head: who owns each point at the game's end (games with ownership: Go, Othello)"})
    score: bool = field(default=False, metadata={
        "help": "auxiliary head: distribution of the final margin (games with a score: Go, Othello)"})
    opponent_policy: bool = field(default=False, metadata={
        "help": "auxiliary head: the policy target of the opponent's reply (KataGo)"})
    heads: str = field(default="fully_connected", metadata={
        "help": "policy and value heads: fully_connected (linear layers over the whole board: one board size) "
                "or pooled (a policy logit per point, the pass and the value from the board pooled: boards of "
                "any size; not with network.score)", "choices": HEADS})

    def validate(self, game: Game | None = None) -> None:
        """ValueError unless every field is allowed (the same check as a config value's), and,
        with `game`, UserError for a head the game does not define."""
        kinds = typing.get_type_hints(type(self))
        for f in fields(self):
            read_option(f"network.{f.name}", field_option(f, kinds[f.name]), getattr(self, f.name))
        if game is not None:
            if self.ownership and not game.has_ownership:
                raise UserError(f"network.ownership: {game.spec} has no ownership of points; "
                                "set network.ownership=false")
            if self.score and not game.has_score:
                raise UserError(f"network.score: {game.spec} has no score; set network.score=false")
            if self.heads == "pooled":
                _check_pooled(self, game)


def _check_pooled(config: NetworkConfig, game: Game) -> None:
    """UserError unless pooled heads can serve `game`: its actions are its points (and a pass, last)."""
    height, width = game.board_shape
    if game.num_actions != height * width + (game.pass_action is not None):
        raise UserError(f"network.heads: pooled heads give one output per point of the board (and the pass); "
                        f"{game.spec} has {game.num_actions} actions for its {height}x{width} points; "
                        "set network.heads=fully_connected")
    if config.score:
        raise UserError("network.score: the score head's margins follow the board's size, which pooled heads do "
                        "not fix; set network.score=false or network.heads=fully_connected")


def another_size_of(game: Game, other: Game) -> bool:
    """Whether `other` is `game` on a board of another size: the same game, whose options differ
    only in ones that change the board's shape (gomoku's size, width, height; Go's size), with the
    same input planes; a network with pooled heads made for one evaluates the other."""
    if type(game) is not type(other) or game.num_planes != other.num_planes:
        return False
    differing = {key for key in {*game.config, *other.config} if game.config.get(key) != other.config.get(key)}
    try:
        return all(game.with_options(**{key: other.config.get(key)}).board_shape != game.board_shape
                   for key in differing)
    except GameError:
        return False


def plays(game: Game, wanted: Game, *, any_size: bool) -> bool:
    """Whether a network made for `game` plays `wanted`: the same game, or, for a network with
    pooled heads (`any_size`), that game on a board of another size (`another_size_of`)."""
    return wanted == game or (any_size and another_size_of(game, wanted))


def head_planes(channels: int) -> int:
    """The planes of each pooled head's 1x1 convolution: a quarter of the trunk's channels, at least 4."""
    return max(4, channels // 4)


def pad_boards(planes: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Boards of several sizes as one batch for a network with pooled heads: planes float
    [b_i, C, H_i, W_i] -> (planes float [sum b_i, C, H, W] with each board at the top left and
    zeros beyond it, on_board bool [sum b_i, H, W]); H, W the largest. Its logits number the
    points row * W + col of that tensor (the pass last)."""
    height, width = max(p.shape[2] for p in planes), max(p.shape[3] for p in planes)
    out = planes[0].new_zeros(sum(p.shape[0] for p in planes), planes[0].shape[1], height, width)
    on_board = torch.zeros(out.shape[0], height, width, dtype=torch.bool, device=out.device)
    row = 0
    for board in planes:
        rows = slice(row, row + board.shape[0])
        out[rows, :, : board.shape[2], : board.shape[3]] = board
        on_board[rows, : board.shape[2], : board.shape[3]] = True
        row += board.shape[0]
    return out, on_board


def score_limit(game: Game) -> int:
    """M: the score head's bins are the margins -M..M (every point of the board, and the komi)."""
    height, width = game.board_shape
    return height * width + math.ceil(abs(game.komi or 0.0))


def pooling_blocks(blocks: int) -> list[int]:
    """Which residual blocks pool globally: every second one from the second (the only one of a one-block trunk)."""
    return [0] if blocks == 1 else list(range(1, blocks, 2))


class PolicyValueNet(nn.Module):
    """Residual policy-value network for one game's board, planes and actions (with pooled heads,
    for that game's boards of any size: `forward` and `outputs` take `on_board`, `pad_boards`)."""

    def __init__(self, config: NetworkConfig, game: Game):
        super().__init__()
        config.validate(game)
        self.config = config
        self.game_spec = game.spec
        height, width = game.board_shape
        self.num_actions = game.num_actions
        c = config.channels
        self.stem = ConvNormRelu(game.num_planes, c, 3)
        pooling = pooling_blocks(config.blocks) if config.global_pooling else []
        self.trunk = nn.Sequential(*[GlobalPoolingBlock(c, max(1, c // 4)) if i in pooling else ResidualBlock(c)
                                     for i in range(config.blocks)])
        self.wdl = config.value_head == "wdl"
        if config.heads == "pooled":
            self.heads = PooledHeads(c, head_planes(c), config.value_hidden, self.wdl, game.pass_action is not None,
                                     config.opponent_policy)
        else:  # (the layers are created in this order since the first checkpoints: same seeds, same weights)
            self.policy_conv = ConvNormRelu(c, 2, 1)
            self.policy_fc = nn.Linear(2 * height * width, game.num_actions)
            self.value_conv = ConvNormRelu(c, 1, 1)
            self.value_fc = nn.Sequential(nn.Linear(height * width, config.value_hidden), nn.ReLU(),
                                          nn.Linear(config.value_hidden, 3 if self.wdl else 1))
            if config.opponent_policy:
                self.opponent_policy_fc = nn.Linear(2 * height * width, game.num_actions)
            self.heads = FullyConnectedHeads(self.policy_conv, self.policy_fc, self.value_conv, self.value_fc, self.wdl,
                                             getattr(self, "opponent_policy_fc", None))
        if config.ownership:
            self.ownership_conv = nn.Conv2d(c, 1, 1)
        if config.score:
            self.score_limit = score_limit(game)
            self.score_fc = nn.Linear(config.value_hidden, 2 * self.score_limit + 1)

    def forward(self, planes: torch.Tensor, legal: torch.Tensor | None = None,
                on_board: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """planes float [B, C, H, W], legal bool [B, A] -> (logits float [B, A], value float [B]).

        `on_board` bool [B, H, W] (pooled heads only): each board's points, for boards of several
        sizes in one batch (`pad_boards`); None: every point of the tensor."""
        if on_board is None:
            return self.heads(self.trunk(self.stem(planes)), legal)
        mask = on_board[:, None].to(planes.dtype)
        return self.heads(self._masked_trunk(planes, mask), legal, mask)

    def _masked_trunk(self, planes: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The trunk's output with every point off the board at zero after each layer, as beyond a
        board's edge: float [B, c, H, W]."""
        x = self.stem(planes) * mask
        for block in self.trunk:
            x = block(x, mask)
        return x

    def parts(self) -> list:
        """The parts `forward` runs one after another: the stem, each trunk block, the heads. Each
        part's class names its int8 form (azero/quantized.py) in `int8_form`: a new kind of block
        needs one there (Int8Network refuses a part without one, or one whose form disagrees)."""
        return [self.stem, *self.trunk, self.heads]

    def outputs(self, planes: torch.Tensor, legal: torch.Tensor | None = None,
                on_board: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Every head's output for planes float [B, C, H, W] (the module docstring lists them);
        `on_board` as in `forward`."""
        if on_board is None:
            x, mask = self.trunk(self.stem(planes)), None
        else:
            mask = on_board[:, None].to(planes.dtype)
            x = self._masked_trunk(planes, mask)
        out = self.heads.outputs(x, legal, mask)
        hidden = out.pop("value_hidden")
        if self.config.ownership:
            out["ownership_logits"] = self.ownership_conv(x).squeeze(1)
        if self.config.score:
            out["score_logits"] = self.score_fc(hidden)
        return out

    def describe(self) -> dict:
        """What a checkpoint needs to rebuild the network (plain values only)."""
        return {"game": self.game_spec, "network": asdict(self.config)}


def masked_softmax(logits: torch.Tensor) -> torch.Tensor:
    """Probabilities from logits where illegal actions are -inf; rows with no legal action give zeros."""
    # softmax gives exact zeros at -inf, and NaN only in rows that are all -inf
    return torch.softmax(logits, dim=1).nan_to_num_(0.0)


def _layout(dtype: torch.dtype) -> torch.memory_format:
    """bfloat16 convolutions run in channels-last layout (oneDNN's own: no reorders);
    float32 ones are converted to oneDNN's layout when frozen."""
    return torch.channels_last if dtype == torch.bfloat16 else torch.contiguous_format


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int8": torch.float32}  # int8: its input


def as_network_input(planes: torch.Tensor, precision: str) -> torch.Tensor:
    """Planes in the dtype and layout the inference module of `precision` takes."""
    dtype = DTYPES[precision]
    return planes.to(dtype).contiguous(memory_format=_layout(dtype))


def precision_problem(precision: str, device: torch.device | str) -> str | None:
    """Why the network cannot run in `precision` on `device`, or None if it can.

    The answer reads after the option's name: f"search.precision {problem}".
    """
    if precision not in PRECISIONS:
        return f"must be one of {', '.join(PRECISIONS)}, not {precision!r}"
    if precision == "int8" and torch.device(device).type != "cpu":
        return f"int8 runs on the CPU only, not on {device}; use auto, float32 or bfloat16"
    return None


def device_problem(device: str) -> str | None:
    """Why torch cannot run on `device` here, or None if it can (a CUDA device must exist).

    The answer starts with the device: "cuda: no CUDA device is available here; use cpu".
    """
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        return f"{device!r} is not a torch device; use cpu, cuda or cuda:N"
    if parsed.type == "cpu":
        return None
    if parsed.type != "cuda":
        return f"{device}: azero runs on cpu or cuda"
    if not torch.cuda.is_available():
        return f"{device}: no CUDA device is available here; use cpu"
    if parsed.index is not None and parsed.index >= torch.cuda.device_count():
        return f"{device}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0"
    return None


LOW_PRECISION_MIN_BATCH = 16


def native_bfloat16() -> bool:
    """Whether this CPU runs bfloat16 convolutions natively (AVX-512 BF16 or AMX, through oneDNN)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def auto_precision(device: torch.device | str) -> str:
    """What precision "auto" runs batches in on `device`, fastest first: int8 on a CPU with VNNI,
    bfloat16 on one that runs it natively, int8 on one with AVX2 (docs/journal/benchmarks.md, "Int8
    without VNNI"), else float32 (and always on GPUs)."""
    if torch.device(device).type != "cpu":
        return "float32"
    if native_int8():
        return "int8"
    if native_bfloat16():
        return "bfloat16"
    return "int8" if fast_int8() else "float32"


class NetworkEvaluator:
    """The search's leaf evaluator: one forward pass for all leaves of all trees.

    Returns priors (probabilities over legal actions) and values from the first
    player's view, as the search engine expects.

    On the CPU, a network in eval mode runs as a frozen TorchScript module (batch norm
    folded into the convolutions): made by `torch.jit.optimize_for_inference` (oneDNN
    kernels) for batches, and only frozen for a batch of one position, where oneDNN's
    layout conversions cost more than they save. Modules are rebuilt whenever the weights
    change (the tensors' version counters move when an optimizer or load_state_dict
    writes them; within a search, `fixed_weights`, once), and eager mode is used if one cannot be built. A batch of one position
    runs on one CPU thread: a second thread gained little and could slow other work.
    docs/journal/benchmarks.md ("The learner") has the measurements behind these choices.

    `precision`: "float32"; "bfloat16" (a bfloat16 copy of the weights, outputs turned
    back to float32; priors and values within about 1% of float32's); "int8" (on the
    CPU only: `azero.quantized`); or "auto" (the default): for batches of at least
    LOW_PRECISION_MIN_BATCH positions on the CPU, int8 where the CPU has VNNI, else
    bfloat16 where it runs bfloat16 natively, else int8 where it has AVX2, else float32
    (`auto_precision`); float32 for smaller batches
    (one position at a time is play and analysis, where float32's precision is worth
    keeping) and on GPUs.
    """

    uses_keys = False  # deterministic: the search need not make random keys for it

    def __init__(self, net: PolicyValueNet, game: Game, device: torch.device | str = "cpu",
                 precision: str = "auto"):
        problem = precision_problem(precision, device)
        if problem:
            raise ValueError(f"precision {problem}")
        self.net, self.game, self.device = net, game, torch.device(device)
        self.precision = precision
        self.calls = 0
        self.positions = 0
        self._frozen: dict[tuple, tuple] = {}  # (precision, training, single) -> (weights version, module)
        self._can_freeze = self.device.type == "cpu"
        self._auto = auto_precision(self.device)
        self._calibration: torch.Tensor | None = None  # int8's calibration positions, made once
        self._weights = list(itertools.chain(net.parameters(), net.buffers()))
        self._fixed: dict[int, dict] = {}  # thread -> the modules looked up in its `fixed_weights` block

    @contextlib.contextmanager
    def fixed_weights(self):
        """A block of this thread's calls during which nothing writes the weights (every
        search.engine.simulate call enters one): each module is looked up once, not checked
        against the weights' versions on every call. Blocks may nest; other threads' calls
        check as usual."""
        thread = threading.get_ident()
        outer = thread in self._fixed
        if not outer:
            self._fixed[thread] = {}
        try:
            yield self
        finally:
            if not outer:
                del self._fixed[thread]

    def _weights_version(self) -> tuple:
        return tuple(t._version for t in self._weights)

    def weights_version(self) -> tuple:
        """What changes whenever anything writes the weights (an evaluation cache empties itself then)."""
        return self._weights_version()

    def precision_for(self, batch: int) -> str:
        """The arithmetic the network runs in for a batch of this size: float32, bfloat16 or int8."""
        if self.precision == "auto":
            return self._auto if batch >= LOW_PRECISION_MIN_BATCH and not self.net.training else "float32"
        if self.precision == "int8" and self.net.training:
            return "float32"  # int8 folds the batch-norm statistics of eval mode
        return self.precision

    def module(self, planes: torch.Tensor, legal: torch.Tensor, precision: str = "float32"):
        """The inference module for the current weights in `precision` (float32: maybe the network itself)."""
        frozen = self._can_freeze and not self.net.training
        if not frozen and precision == "float32":
            return self.net
        # a copy made in training mode keeps its batch-norm behaviour; one position at a time
        # (play, analysis) gets its own module, frozen without oneDNN's layout conversions
        single = planes.shape[0] == 1
        key = (precision, self.net.training, single)
        fixed = self._fixed.get(threading.get_ident()) if self._fixed else None
        if fixed is not None and key in fixed:
            return fixed[key]
        version = self._weights_version()
        cached = self._frozen.get(key)
        if cached is None or cached[0] != version:
            # normal tensors even when called under inference mode (the search runs in it)
            with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
                if precision == "int8":
                    if self._calibration is None:
                        self._calibration = calibration_positions(self.game)
                    module = Int8Network(self.net, self._calibration)
                else:
                    module = self._frozen_module(planes, legal, precision, frozen, single)
            cached = self._frozen[key] = (version, module)
        if fixed is not None:
            fixed[key] = cached[1]
        return cached[1]

    def _frozen_module(self, planes, legal, precision: str, frozen: bool, single: bool):
        net, dtype = self.net, DTYPES[precision]
        if dtype != torch.float32:
            net = copy.deepcopy(self.net).to(dtype, memory_format=_layout(dtype))
        if not frozen:
            return net
        try:
            warnings.simplefilter("ignore")
            example = (as_network_input(planes, precision), legal.clone())
            traced = torch.jit.trace(net, example, check_trace=False)
            module = torch.jit.freeze(traced)
            return module if single else torch.jit.optimize_for_inference(module)
        except Exception:  # an unusual torch build: eager mode is always right
            self._can_freeze = False
            return net

    def __call__(
        self, states: State, keys: torch.Tensor | None = None, legal: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(prior float [n, A], value float [n]) for states [n]; `legal` is their legal mask if known."""
        legal = self.game.legal_mask(states) if legal is None else legal
        return self.evaluate_encoded(self.game.encode(states), legal, states.to_play)

    def evaluate_encoded(self, planes: torch.Tensor, legal: torch.Tensor,
                         to_play: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """As the call, for positions already encoded (`game.encode`: planes [n, C, H, W]) whose
        legal mask and player to move (long [n]) are given: the search's expansion computes
        all three in one pass where the game can (games.base.Game.expand_rows). The prior and
        value come back on `to_play`'s device."""
        batch, home = planes.shape[0], to_play.device
        planes, legal = planes.to(self.device), legal.to(self.device)
        precision = self.precision_for(batch)
        module = self.module(planes, legal, precision)
        # (each context costs microseconds a call: the search calls this under inference mode,
        # with batches over one, once a step)
        mode = contextlib.nullcontext() if torch.is_inference_mode_enabled() else torch.inference_mode()
        threads = one_thread_if(True) if batch == 1 and self.device.type == "cpu" else contextlib.nullcontext()
        with mode, threads:
            logits, value = module(as_network_input(planes, precision), legal)
            self.calls += 1
            self.positions += batch
            prior = masked_softmax(logits.float()).to(home)
            # the network's view (player to move) -> the first player's: times +1 or -1, exact
            return prior, value.float().to(home).mul_(player_signs(home, torch.float32).index_select(0, to_play))
