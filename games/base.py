"""The game contract shared by every game: batched states, pure rules.

A game never holds one board. It holds a batch of B positions as a `State`, a
dataclass of tensors whose first dimension is the batch, and its methods are
pure functions from states to new states or to tensors:

    game.initial_state(batch, device) -> State
    game.legal_mask(state)  -> bool  [B, A]   (True = legal; all False once a game is over)
    game.step(state, action)-> State           (action: long [B]; -1 = "no move", only for finished games)
    game.terminal(state)    -> bool  [B]
    game.result(state)      -> float [B]       (+1 first player won, -1 second won, 0 draw or not over)
    game.to_play(state)     -> long  [B]       (0 first player, 1 second)
    game.encode(state)      -> float [B, C, H, W] from the view of the player to move

Sign convention, written once: a *result* is always from the first player's
view (+1 = first player won).  Everything that needs another view converts with
`player_sign(player)`: +1 for the first player, -1 for the second.

Invariants every game keeps (tested over all games in tests/test_games_api.py):
an illegal action is an error naming the game, the action and the batch index;
a finished game steps nowhere; results are zero until the end; the legal mask of
a finished game is empty.

Identity: a game is its name and its options, normalised by `canonical_config` (gomoku
on a square board is `size=N` however it was asked for), so `game.spec` is one text per
game and two games are equal exactly when they play the same rules.

Optional parts. Everything outside games/ (the GUI, SGF, GTP, the terminal) asks a game
these, never its name; `Game` holds the defaults of a game without them (tested over
every game, and with a toy game defined in a test, in tests/test_contract.py):

    game.describe()          -> str   a title for people ("gomoku 9x9, 5 or more in a row"; default: the spec)
    game.pass_action         -> int or None   the pass (the last action, H * W), or None without one
    game.forced_pass         -> bool  a pass is legal only when nothing else is (Othello): GTP engines
                                      and SGF records leave it out; otherwise (Go) a pass is a choice,
                                      sent to engines and written
    game.has_score           -> bool  whether `score` is defined
    game.score(state)        -> float [B]  black's (first player's) margin: Go's area score with komi,
                                      Othello's disc difference
    game.has_ownership       -> bool  whether `ownership` is defined
    game.ownership(state)    -> int8 [B, H, W]  who owns each point, first player's view (+1 the first
                                      player's, -1 the second's, 0 neither): Go's area (stones and
                                      the empty points only one colour reaches), Othello's discs; the
                                      points that add up to `score` (without komi). A finished game's
                                      ownership and score are training targets of the network's
                                      auxiliary heads (azero/selfplay.py)
    game.komi                -> float or None  the komi, for games with a `komi` option (GTP's komi
                                      command and SGF's KM set that option)
    game.moves_left(state)   -> long [B]  about how many moves the player to move has still to play
                                      (to share a clock; default half the empty cells)
    game.has_board           -> bool  states hold `board` int8 [B, H, W] (+1 / -1 / 0) a GUI can draw
    game.board_style         -> str   how a GUI draws the board: "squares" (pieces in the squares of a
                                      wooden board; the default), "lines" (stones on the crossings of
                                      the lines: Go, gomoku), "green" (black and white discs in the
                                      squares of a green board: Othello), "frame" (red and yellow discs
                                      in the holes of an upright blue frame: Connect Four)
    game.click_actions(state)-> long [B, H * W]  the action a click on each cell means (-1 none)
    game.action_cells(state) -> long [B, A]  the cell where each action puts its stone, where its
                                      heat is drawn and the last move is marked (-1 nowhere: a pass)
    game.presets             -> specs offered in a game picker (the GUI's list); () = the name alone
    game.sgf_game_type       -> int or None  SGF's GM number (Go 1, Othello 2, gomoku 4), None: no SGF
    Game.from_sgf(width, height, komi) -> the game an SGF record's SZ and KM describe
    game.gtp_playable        -> bool  GTP engines play it: moves are GTP vertices (`format_action`
                                      upper-cased, `parse_action` in either case) and `boardsize N`
                                      is the option size=N
    game.with_options(**options) -> the same game with some options changed
    game.expand_rows(states, parent, child, action, encode) -> Expansion or None   a compiled form of a
                                      search's expansion (step, write, legal mask, result and
                                      encoding of the new nodes in one pass; gomoku and Connect
                                      Four have one); None
                                      (the default) where the game has none for these tensors
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

import torch

from . import kernels
from .kernels import Expansion  # (defined there, below the games: the compiled expansions fill one)
from .keyed_random import Source, advance, fold, random_true, uniform
from .options import Option, is_whole_number, read_options

NO_ACTION = -1
BOARD_STYLES = ("squares", "lines", "green", "frame")  # the values of `Game.board_style`


class GameError(ValueError):
    """A user-facing error about a game: bad options, bad move text."""


class IllegalActionError(GameError):
    """`step` was given an action that is not legal in the position."""


def player_sign(player: torch.Tensor) -> torch.Tensor:
    """+1 for the first player (0), -1 for the second (1); shape as `player`."""
    return 1 - 2 * player


_SIGNS: dict = {}


def player_signs(device, dtype=torch.int8) -> torch.Tensor:
    """[2]: player_sign of players 0 and 1 (+1, -1; for boards, their stones), cached per
    device and dtype, so that `player_signs(device).index_select(0, to_play)` is one
    operation in a hot loop."""
    key = (torch.device(device), dtype)
    if key not in _SIGNS:
        with torch.inference_mode(False):  # a cache that outlives the search that may first ask for it
            _SIGNS[key] = torch.tensor([1, -1], dtype=dtype, device=device)
    return _SIGNS[key]


@dataclass(eq=False)
class State:
    """A batch of positions. Every field is a tensor with the batch first.

    Games subclass this and add their own fields (board, extras).

    Fields:
      to_play:     long [B]  player to move, 0 first, 1 second
      move_number: long [B]  plies played since the start
      done:        bool [B]  the game is over
      winner:      int8 [B]  +1 first player won, -1 second won, 0 draw or not over
    """

    to_play: torch.Tensor
    move_number: torch.Tensor
    done: torch.Tensor
    winner: torch.Tensor

    # the namedtuple class of the fields, in which the compiled loops take a state (games.kernels.state_arrays)
    Arrays: ClassVar = kernels.FieldRecord()

    # -- batch plumbing ---------------------------------------------------------------------
    def _map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> "State":
        return type(self)(**{f.name: fn(getattr(self, f.name)) for f in dataclasses.fields(self)})

    @property
    def batch_size(self) -> int:
        return self.to_play.shape[0]

    @property
    def device(self) -> torch.device:
        return self.to_play.device

    def __len__(self) -> int:
        return self.batch_size

    def __getitem__(self, index) -> "State":
        """Select games: an int keeps a batch of one; a slice, bool mask or index tensor selects."""
        if isinstance(index, int):
            index = slice(index, index + 1 if index != -1 else None)
        return self._map(lambda t: t[index])

    def to(self, device) -> "State":
        return self._map(lambda t: t.to(device))

    def clone(self) -> "State":
        return self._map(torch.clone)

    def take(self, index: torch.Tensor) -> "State":
        """Games at `index` (long [n]), by index_select (faster than indexing on a CPU)."""
        return self._map(lambda t: t.index_select(0, index))

    def put_(self, index: torch.Tensor, other: "State") -> "State":
        """In place: games at `index` (long [n], distinct) take the positions of `other`."""
        for f in dataclasses.fields(self):
            getattr(self, f.name).index_copy_(0, index, getattr(other, f.name))
        return self

    def repeat_interleave(self, repeats: int) -> "State":
        """Each game repeated `repeats` times in a row: [B] -> [B * repeats]."""
        return self._map(lambda t: t.repeat_interleave(repeats, dim=0))

    @staticmethod
    def cat(states: Sequence["State"]) -> "State":
        first = states[0]
        return type(first)(
            **{f.name: torch.cat([getattr(s, f.name) for s in states]) for f in dataclasses.fields(first)}
        )

    @staticmethod
    def where(mask: torch.Tensor, a: "State", b: "State") -> "State":
        """Game i from `a` where mask[i], else from `b`. mask: bool [B]."""
        out = {}
        for f in dataclasses.fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            m = mask.view(-1, *([1] * (x.dim() - 1)))
            out[f.name] = torch.where(m, x, y)
        return type(a)(**out)

    def rows_equal(self, one: "State") -> torch.Tensor:
        """bool [B]: game i is exactly the position `one` (a batch of one), every field equal."""
        same = torch.ones(self.batch_size, dtype=torch.bool, device=self.device)
        if type(self) is not type(one):
            return ~same
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(one, f.name)
            same &= (mine == theirs).reshape(self.batch_size, -1).all(dim=1)
        return same

    def equal(self, other: "State") -> bool:
        """Exact equality of every field (for tests and assertions)."""
        return type(self) is type(other) and all(
            torch.equal(getattr(self, f.name), getattr(other, f.name)) for f in dataclasses.fields(self)
        )


# what a game's compiled expansion (Game.expand_rows) computes: a subclass that changes one of
# these keeps the compiled form only if it writes its own
RULE_METHODS = ("initial_state", "_apply", "legal_mask", "result", "encode")


@functools.cache
def keeps_rules(cls: type, owner: type) -> bool:
    """Whether class `cls` plays and encodes as `owner` does (none of RULE_METHODS overridden)."""
    return all(getattr(cls, name) is getattr(owner, name) for name in RULE_METHODS)


@dataclass(eq=False)
class BoardState(State):
    """A batch of positions on a board.

    Fields (besides State's):
      board:       int8 [B, H, W]  +1 a first-player stone, -1 a second-player stone, 0 empty
      last_action: long [B]        the action that led here, -1 at the start
    """

    board: torch.Tensor
    last_action: torch.Tensor


def new_board_state(batch: int, height: int, width: int, device, state_type=BoardState, **extra) -> BoardState:
    """An empty-board start position for `batch` games (first player to move)."""
    return state_type(
        to_play=torch.zeros(batch, dtype=torch.long, device=device),
        move_number=torch.zeros(batch, dtype=torch.long, device=device),
        done=torch.zeros(batch, dtype=torch.bool, device=device),
        winner=torch.zeros(batch, dtype=torch.int8, device=device),
        board=torch.zeros(batch, height, width, dtype=torch.int8, device=device),
        last_action=torch.full((batch,), NO_ACTION, dtype=torch.long, device=device),
        **extra,
    )


def stone_planes(state: BoardState) -> tuple[torch.Tensor, torch.Tensor]:
    """(own, opponent) stones as float [B, H, W] from the view of the player to move."""
    me = player_sign(state.to_play).to(torch.int8).view(-1, 1, 1)
    return (state.board == me).float(), (state.board == -me).float()


@dataclass(frozen=True)
class Symmetry:
    """A board transform under which the rules are invariant.

    `action_perm[a]` is the image of action a; `cell_perm[c]` the image of cell c
    (cells numbered row * W + col).  Planes and policies are moved with the same
    permutation, so `policy(p)[action(a)] == p[a]` and the same for planes.
    """

    name: str
    action_perm: torch.Tensor  # long [A]
    cell_perm: torch.Tensor  # long [H * W]
    board_shape: tuple[int, int]

    @property
    def _action_inverse(self) -> torch.Tensor:
        return torch.argsort(self.action_perm)

    @property
    def _cell_inverse(self) -> torch.Tensor:
        return torch.argsort(self.cell_perm)

    def action(self, a: torch.Tensor) -> torch.Tensor:
        """Image of actions; `NO_ACTION` stays as it is. a: long [...]"""
        perm = self.action_perm.to(a.device)
        return torch.where(a >= 0, perm[a.clamp(min=0)], a)

    def policy(self, p: torch.Tensor) -> torch.Tensor:
        """Image of policy vectors. p: [..., A]"""
        return p[..., self._action_inverse.to(p.device)]

    def planes(self, x: torch.Tensor) -> torch.Tensor:
        """Image of board planes. x: [..., H, W]"""
        h, w = self.board_shape
        flat = x.reshape(*x.shape[:-2], h * w)
        return flat[..., self._cell_inverse.to(x.device)].reshape(x.shape)


def board_symmetries(height: int, width: int, *, extra_actions: int = 0) -> list[Symmetry]:
    """The dihedral transforms of an H x W board (8 if square, 4 if not).

    Square actions map like their cells; the `extra_actions` after them (a pass)
    map to themselves.
    """
    grid = torch.arange(height * width).view(height, width)
    transforms: list[tuple[str, torch.Tensor]] = [
        ("identity", grid),
        ("flip_lr", grid.flip(1)),
        ("flip_ud", grid.flip(0)),
        ("rot180", grid.flip(0).flip(1)),
    ]
    if height == width:
        transforms += [
            ("transpose", grid.t()),
            ("rot90", torch.rot90(grid, 1)),
            ("rot270", torch.rot90(grid, -1)),
            ("antitranspose", grid.flip(0).flip(1).t()),
        ]
    out = []
    for name, image in transforms:
        # image[r, c] is the source cell that lands at (r, c); invert to get where each cell goes.
        cell_perm = torch.empty(height * width, dtype=torch.long)
        cell_perm[image.reshape(-1)] = torch.arange(height * width)
        action_perm = torch.cat([cell_perm, torch.arange(height * width, height * width + extra_actions)])
        out.append(Symmetry(name, action_perm, cell_perm, (height, width)))
    return out


class Game:
    """Base class of every game. Subclasses set the class attributes and implement `_apply`.

    Class attributes:
      name:    the registry name ("gomoku")
      options: dict of option name -> Option
    Instance attributes set by subclasses:
      board_shape (H, W), num_actions A, num_planes C, symmetries (list of Symmetry)
    """

    name: ClassVar[str]
    options: ClassVar[dict[str, Option]] = {}
    state_type: ClassVar[type[State]] = State
    # State fields that hold a board-shaped tensor [B, H, W] (moved by symmetries).
    board_fields: ClassVar[tuple[str, ...]] = ()
    # State fields that hold an action [B] (-1 = none), moved like actions by symmetries.
    action_fields: ClassVar[tuple[str, ...]] = ()
    # State fields that hold one value per action [B, A], moved like policy vectors.
    per_action_fields: ClassVar[tuple[str, ...]] = ()

    board_shape: tuple[int, int]
    num_actions: int
    num_planes: int
    symmetries: list[Symmetry]

    # Optional parts of the contract (see the module docstring); the values of a game without them.
    pass_action: int | None = None
    forced_pass: ClassVar[bool] = False
    has_score: ClassVar[bool] = False
    has_ownership: ClassVar[bool] = False
    komi: float | None = None
    has_board: ClassVar[bool] = True
    board_style: ClassVar[str] = "squares"
    presets: ClassVar[tuple[str, ...]] = ()
    sgf_game_type: ClassVar[int | None] = None
    sgf_default_size: ClassVar[int] = 19  # SZ when a record has none (SGF's default for Go)
    gtp_playable: ClassVar[bool] = False

    def __init__(self, **options):
        options = read_options(self.name, self.options, options, error=GameError)
        self.config: dict[str, Any] = self.canonical_config(options)

    # -- identity ---------------------------------------------------------------------------
    def canonical_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The one way of writing the options `config` (validated, every option present; None
        for unset ones) that `spec` and equality use; games with two ways to say one thing
        override this."""
        return config

    @property
    def spec(self) -> str:
        """The text that rebuilds this game with `games.make_from_spec`, e.g. 'gomoku:size=9,k=5'."""
        opts = ",".join(f"{k}={_format_option(v)}" for k, v in self.config.items() if v is not None)
        return f"{self.name}:{opts}" if opts else self.name

    def __repr__(self) -> str:
        return f"<game {self.spec}>"

    def __eq__(self, other) -> bool:
        """Same game and same canonical options (so the same rules), however either was written."""
        return isinstance(other, Game) and self.spec == other.spec

    def __hash__(self) -> int:
        return hash(self.spec)

    # -- the contract -------------------------------------------------------------------------
    def initial_state(self, batch: int = 1, device: torch.device | str = "cpu") -> State:
        raise NotImplementedError

    def legal_mask(self, state: State) -> torch.Tensor:
        raise NotImplementedError

    def _apply(self, state: State, action: torch.Tensor) -> State:
        """The rules for legal actions of unfinished games. Rows of finished games may hold
        action 0 here and may compute anything (their output is discarded), but must not fail."""
        raise NotImplementedError

    def encode(self, state: State) -> torch.Tensor:
        raise NotImplementedError

    def from_board(self, board, to_play: int | None = None) -> State:
        """A one-game state from a board (int [H, W], +1 / -1 / 0), for tests, protocols and UIs.

        `to_play` defaults to whoever the stone counts say; raises GameError if the
        board cannot arise in the game.
        """
        raise GameError(f"{self.name}: positions cannot be set up from a board")

    def format_action(self, action: int) -> str:
        raise NotImplementedError

    def parse_action(self, text: str) -> int:
        raise NotImplementedError

    def render(self, state: State, index: int = 0) -> str:
        raise NotImplementedError

    def step(self, state: State, action: torch.Tensor, *, trusted: bool = False) -> State:
        """Play one action in each game. action: long [B]; NO_ACTION (-1) for finished games.

        `trusted=True` skips the legality check, for callers whose actions come from
        `legal_mask` of unfinished games (the search); everyone else gets the check.
        """
        if trusted:
            return self._apply(state, action)
        device = state.device
        if not (isinstance(action, torch.Tensor) and action.dtype == torch.long and action.dim() == 1
                and action.device == device):  # (as_tensor would return it, after a few microseconds)
            action = torch.as_tensor(action, dtype=torch.long, device=device).reshape(-1)
        if action.shape[0] != state.batch_size:
            raise GameError(
                f"{self.name}: step got {action.shape[0]} actions for a batch of {state.batch_size} games"
            )
        return self._checked_apply(state, action)

    def _checked_apply(self, state: State, action: torch.Tensor) -> State:
        """step's work once `action` is a long [B] on the state's device: check every action
        (IllegalActionError naming the first bad game), play them, keep finished games as they are."""
        ok = self.check_actions(state, action)
        if not bool(ok.all()):
            self._raise_illegal(state, action, ok)
        new = self._apply(state, action.clamp(min=0))
        if bool(state.done.any()):
            new = State.where(state.done, state, new)
        return new

    def check_actions(self, state: State, action: torch.Tensor) -> torch.Tensor:
        """bool [B]: whether each action may be played (NO_ACTION exactly for finished games)."""
        in_range = (action >= 0) & (action < self.num_actions)
        legal = self.legal_mask(state).gather(1, action.clamp(0, self.num_actions - 1).unsqueeze(1)).squeeze(1)
        return torch.where(state.done, action == NO_ACTION, in_range & legal)

    def _raise_illegal(self, state: State, action: torch.Tensor, ok: torch.Tensor):
        i = int((~ok).nonzero()[0, 0])
        a = int(action[i])
        if bool(state.done[i]):
            why = "the game is already over (pass -1 for finished games)"
        elif a == NO_ACTION:
            why = "no move given (-1) for a game that is not over"
        elif not 0 <= a < self.num_actions:
            why = f"actions are 0..{self.num_actions - 1}"
        else:
            why = self.illegal_reason(state[i], a)
        text = self.format_action(a) if 0 <= a < self.num_actions else str(a)
        raise IllegalActionError(f"{self.name}: action {a} ({text}) is illegal in game {i} of the batch: {why}")

    def illegal_reason(self, state: State, action: int) -> str:
        """Why a legal-looking action is illegal in a one-game state (games refine this)."""
        return "not a legal move in this position"

    def terminal(self, state: State) -> torch.Tensor:
        return state.done

    def result(self, state: State) -> torch.Tensor:
        return state.winner.to(torch.float32)

    def to_play(self, state: State) -> torch.Tensor:
        return state.to_play

    def legal_actions(self, state: State, index: int = 0) -> list[int]:
        """The legal actions of game `index` as a Python list (for UIs and protocols)."""
        return self.legal_mask(state[index])[0].nonzero().flatten().tolist()

    def inserted_pass(self, state: State) -> State:
        """The position after the pass put in before one side's second move in a row (GTP lets a
        controller give one colour two moves, an SGF record may): a pass that counts toward no
        two passes in a row, so it ends no game (but at the move cap) and the position after it
        keeps the move before it as its last move. GameError where the pass is illegal."""
        pass_action = torch.full((state.batch_size,), -1 if self.pass_action is None else self.pass_action,
                                 dtype=torch.long, device=state.device)
        last = getattr(state, "last_action", None)
        if last is None:
            return self.step(state, pass_action)
        after = self.step(dataclasses.replace(state, last_action=torch.full_like(last, NO_ACTION)), pass_action)
        return dataclasses.replace(after, last_action=last.clone())

    # -- optional parts (module docstring); the defaults ----------------------------------------
    def describe(self) -> str:
        """A title for people, e.g. 'gomoku 9x9, 5 or more in a row'."""
        return self.spec

    def with_options(self, **options) -> "Game":
        """This game with some options changed (GameError if they are not valid)."""
        merged = {key: value for key, value in {**self.config, **options}.items() if value is not None}
        return type(self)(**merged)

    def score(self, state: State) -> torch.Tensor:
        """float [B]: the first player's (black's) margin, for games with `has_score`."""
        raise GameError(f"{self.name} has no score")

    def ownership(self, state: State) -> torch.Tensor:
        """int8 [B, H, W]: who owns each point, first player's view (+1 / -1 / 0), for games with
        `has_ownership`."""
        raise GameError(f"{self.name} has no ownership")

    def moves_left(self, state: State) -> torch.Tensor:
        """long [B]: about how many moves the player to move has still to play (to share a
        clock over them): half the empty cells of the board."""
        return (state.board == 0).flatten(1).sum(dim=1) // 2

    def click_actions(self, state: State) -> torch.Tensor:
        """long [B, H * W]: the action a click on each cell means (-1 none); cell c is action c."""
        cells = self.board_shape[0] * self.board_shape[1]
        return torch.arange(cells, device=state.device).expand(state.batch_size, cells)

    def action_cells(self, state: State) -> torch.Tensor:
        """long [B, A]: the cell where each action puts its stone (-1 nowhere, e.g. the pass):
        the GUI draws the action's heat there, and marks it once played."""
        cells = self.board_shape[0] * self.board_shape[1]
        actions = torch.arange(self.num_actions, device=state.device)
        return torch.where(actions < cells, actions, -1).expand(state.batch_size, self.num_actions)

    @classmethod
    def from_sgf(cls, width: int, height: int, komi: float | None) -> "Game":
        """The game an SGF record of type `sgf_game_type` describes: its board from SZ (a square
        board is option size, another width and height), its komi from KM (None without one;
        taken only by games with a `komi` option)."""
        options: dict[str, Any] = {"size": width} if width == height else {"width": width, "height": height}
        if komi is not None and "komi" in cls.options:
            options["komi"] = komi
        return cls(**options)

    # -- symmetries ---------------------------------------------------------------------------
    def transform_state(self, state: State, symmetry: Symmetry) -> State:
        """The state seen through a symmetry: board, action and per-action fields are moved."""
        fields = {}
        for f in dataclasses.fields(state):
            value = getattr(state, f.name)
            if f.name in self.board_fields:
                value = symmetry.planes(value)
            elif f.name in self.action_fields:
                value = symmetry.action(value)
            elif f.name in self.per_action_fields:
                value = symmetry.policy(value)
            fields[f.name] = value
        return type(state)(**fields)

    # -- the search's expansion -----------------------------------------------------------------
    def expand_rows(self, states: State, parent: torch.Tensor, child: torch.Tensor, action: torch.Tensor,
                    encode: bool = True) -> "Expansion | None":
        """A compiled form of what a search does with its new nodes, in one pass: row child[i] of
        `states` (many positions, e.g. a search tree's nodes; in place) becomes the position of
        row parent[i] after action[i] (legal; `parent`, `child`, `action` long [n], the child
        rows distinct and none of them a parent row), and the new rows' Expansion comes back
        (its planes None without `encode`).

        The reference is the sequence a search runs without it (azero/search/engine.py):
        `take`, `step(trusted=True)`, `put_`, `legal_mask`, `result`, `encode`; a game's
        compiled form must give exactly what that gives (tests/test_kernels.py). None (this
        default): the game has no compiled form for these tensors, the search runs the sequence.
        """
        return None

    # -- playouts -----------------------------------------------------------------------------
    def random_playout(self, state: State, source: Source = None) -> torch.Tensor:
        """Play uniformly random legal moves until every game ends; returns result float [B].

        `source` is a torch.Generator or per-game keys long [B] (games/keyed_random.py).
        Games may override this with a faster method of the same distribution.
        """
        ply = 0
        while not bool(state.done.all()):
            action = sample_uniform_legal(self.legal_mask(state), advance(source, ply))
            state = self.step(state, action)
            ply += 1
        return self.result(state)


def live_rows(mask: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
    """`mask & ~done[:, None]` (bool [B, A], bool [B]) as a uint8 product: on a CPU torch's
    boolean broadcasts run an order of magnitude slower than its integer arithmetic."""
    live = done.logical_not().view(-1, 1).view(torch.uint8)
    return (mask.view(torch.uint8) * live).view(torch.bool)


def opening_move(game: "Game", state: "State", keys: torch.Tensor) -> torch.Tensor:
    """A uniformly random legal move of each game (long [n]) among those that do not end it,
    drawn from its key (long [n]): an opening is for the players to play out (a pass after a
    pass in Go, the last cell of tic-tac-toe). NO_ACTION where every legal move would end
    the game."""
    legal = game.legal_mask(state).clone()  # (changed below)
    action = sample_uniform_legal(legal, keys)
    stuck = torch.zeros_like(state.done)
    for attempt in range(1, game.num_actions + 1):
        ends = game.step(state, action).done & ~state.done & ~stuck
        if not bool(ends.any()):
            break
        legal[ends, action[ends]] = False  # draw again among the other moves
        stuck |= ends & ~legal.any(dim=1)  # (keeping their ending move, so that the batch still steps)
        action = torch.where(ends & ~stuck, sample_uniform_legal(legal, fold(keys, attempt)), action)
    return torch.where(stuck, NO_ACTION, action)


def _compiled_sample_uniform_legal(mask: torch.Tensor, source: Source = None) -> torch.Tensor:
    """The compiled form of sample_uniform_legal: its draws made as needed from keys, or given."""
    if isinstance(source, torch.Tensor):
        return kernels.sample_legal(mask, None, NO_ACTION, keys=source)
    return kernels.sample_legal(mask, uniform(source, (mask.shape[0], 3), device=mask.device), NO_ACTION)


@kernels.twin(_compiled_sample_uniform_legal)
def sample_uniform_legal(mask: torch.Tensor, source: Source = None) -> torch.Tensor:
    """One uniformly random legal action per row; NO_ACTION where no action is legal.

    mask: bool [B, A] -> long [B]; source: a torch.Generator or per-game keys long [B].
    Three random numbers per game: the first two name any action each, and the first of
    them that is legal is played (a uniformly random legal action, given that it is legal);
    if neither is, the third picks one of the legal actions by count. Each legal action thus
    has probability 1/A + q/A + q^2/count with q = 1 - count/A, the same for all of them:
    1/count. Most rows of a board game stop at a guess without counting their legal actions.
    """
    batch, width = mask.shape
    draws = uniform(source, (batch, 3), device=mask.device)
    guess = (draws[:, :2] * width).long().clamp_(max=width - 1)
    hit = mask.gather(1, guess)
    action, count = random_true(mask, draws[:, 2].contiguous())
    action = torch.where(hit[:, 1], guess[:, 1], action)
    action = torch.where(hit[:, 0], guess[:, 0], action)
    return torch.where(count > 0, action, torch.full_like(action, NO_ACTION))


def _format_option(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def column_letters(n: int) -> str:
    """Column letters a, b, c, ... (gomoku and Othello use every letter, 'i' included)."""
    return "abcdefghijklmnopqrstuvwxyz"[:n]


def format_square(row: int, col: int, height: int, *, rows_from_top: bool) -> str:
    number = row + 1 if rows_from_top else height - row
    return f"{column_letters(col + 1)[col]}{number}"


def parse_square(game_name: str, text: str, height: int, width: int, *, rows_from_top: bool) -> tuple[int, int]:
    """Parse 'h8'-style text to (row, col); raises GameError with the allowed range."""
    t = text.strip().lower()
    letters = column_letters(width)
    rng = f"{letters[0]}1..{letters[-1]}{height}"
    if len(t) < 2 or t[0] not in letters or not is_whole_number(t[1:]):
        raise GameError(f"{game_name}: cannot read move {text!r}; squares are written like 'c3' ({rng})")
    col = letters.index(t[0])
    number = int(t[1:])
    if not 1 <= number <= height:
        raise GameError(f"{game_name}: square {text!r} is off the board ({rng})")
    row = number - 1 if rows_from_top else height - number
    return row, col


def render_grid(
    cells: list[list[str]], *, rows_from_top: bool, title: str = "", mark: tuple[int, int] | None = None
) -> str:
    """A text board with column letters and row numbers; `mark` (row, col) is bracketed."""
    height, width = len(cells), len(cells[0])
    letters = column_letters(width)
    num_w = len(str(height))
    lines = [title] if title else []
    header = " " * (num_w + 1) + " ".join(letters)
    lines.append(header)
    for r in range(height):
        number = r + 1 if rows_from_top else height - r
        row = ""
        for c in range(width):
            sep = " "
            if mark is not None and mark == (r, c):
                sep = "("
            elif mark is not None and mark == (r, c - 1):
                sep = ")"
            row += sep + cells[r][c]
        if mark is not None and mark == (r, width - 1):
            row += ")"
        lines.append(f"{number:>{num_w}}{row}  {number}")
    lines.append(header)
    return "\n".join(lines)
