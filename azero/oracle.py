"""Exact values of moves, from the exact solver that fits the game.

    oracle = make_oracle(game)               # UserError when no exact solver fits
    values = oracle.move_values(states)      # float [B, A]

`move_values` gives, for every legal action of every position, the game-theoretic
value of playing it for the player to move: +1 a win, 0 a draw, -1 a loss with best
play by both sides afterwards; NaN for illegal actions (and for finished positions).
The position's own value is the row's maximum; a move *keeps* the value when its
entry equals that maximum.

Two solvers stand behind it:

* Connect Four on its standard 6x7 board, four in a row: the BitBully solver
  (PyPI package `bitbully`, an optional extra: `pip install -e '.[yardsticks]'`),
  a bitboard alpha-beta search in C++ with an opening book of every 12-ply
  position. Checked against Pascal Pons' published test positions and against
  our exhaustive solver on late positions (tests/test_oracle.py).
* Every game small enough to enumerate (tic-tac-toe, Nim, Connect Four on tiny
  boards): `azero.solver.Solver`, which solves the whole game once.
"""

from __future__ import annotations

import functools
import math

import torch

import games
from games import Game, State

from .errors import UserError
from .solver import Solver

INSTALL_HINT = "pip install -e '.[yardsticks]' (or pip install bitbully)"


class Oracle:
    """Exact move values for one game (see the module docstring)."""

    game: Game
    name: str = "oracle"

    def move_values(self, states: State) -> torch.Tensor:
        """float [B, A] (on the CPU): +1 / 0 / -1 for the player to move after each legal action; NaN elsewhere."""
        raise NotImplementedError

    def values(self, states: State) -> torch.Tensor:
        """float [B]: the positions' values for the player to move (NaN for finished ones)."""
        moves = self.move_values(states)
        best = moves.nan_to_num(nan=-math.inf).max(dim=1).values
        return torch.where(torch.isinf(best), math.nan, best)

    def best_actions(self, states: State) -> torch.Tensor:
        """bool [B, A]: the legal actions that keep each position's value."""
        moves = self.move_values(states)
        return moves == self.values(states).unsqueeze(1)


class ExhaustiveOracle(Oracle):
    """Every position of the game solved once by enumeration (tiny games only)."""

    name = "exhaustive search"

    def __init__(self, game: Game):
        self.game = game
        self.solver = Solver(game)

    def move_values(self, states: State) -> torch.Tensor:
        child, mask = self.solver._child_values(states.to("cpu"))
        return torch.where(mask.cpu(), child, math.nan)


def standard_connect_four() -> Game:
    """The game BitBully solves: Connect Four, 6 rows, 7 columns, four in a row."""
    return games.make("connect4", rows=6, columns=7, k=4)


class ConnectFourOracle(Oracle):
    """Standard Connect Four solved move by move by BitBully (with its 12-ply opening book).

    `move_scores` gives BitBully's scores, which are Pascal Pons' (positive: the player
    to move wins, by more the sooner; 0: a draw; negative: a loss); values are their signs.
    Answers are cached by position, so judging many networks on one set of positions
    solves each position once.
    """

    name = "bitbully"

    def __init__(self, game: Game | None = None):
        self.game = game or standard_connect_four()
        if self.game != standard_connect_four():
            raise UserError(f"the Connect Four solver plays the 6x7 board with four in a row, not {self.game.spec}")
        try:
            import bitbully
        except ImportError:
            raise UserError(f"the Connect Four solver needs the bitbully package: {INSTALL_HINT}") from None
        self._bitbully = bitbully
        self._agent = bitbully.BitBully()  # loads the 12-ply opening book shipped with the package
        self._cache: dict[bytes, torch.Tensor] = {}

    def board(self, states: State, index: int):
        """BitBully's Board for position `index` (1 = the first player's discs, 2 = the second's)."""
        grid = states.board[index].to("cpu", torch.int64)  # [6, 7], row 0 on top, +1 first player, -1 second
        cells = torch.where(grid == -1, 2, grid).tolist()
        return self._bitbully.Board(cells)

    def move_scores(self, states: State) -> torch.Tensor:
        """float [B, 7]: BitBully's score of each legal column (NaN: full column or finished game)."""
        out = torch.full((states.batch_size, self.game.num_actions), math.nan)
        legal = self.game.legal_mask(states).cpu()
        boards = states.board.cpu()
        for index in range(states.batch_size):
            if not bool(legal[index].any()):
                continue
            key = boards[index].numpy().tobytes()
            if key not in self._cache:
                scores = self._agent.score_all_moves(self.board(states, index))
                row = torch.full((self.game.num_actions,), math.nan)
                for column, score in scores.items():
                    row[column] = float(score)
                self._cache[key] = row
            out[index] = self._cache[key]
        return torch.where(legal, out, math.nan)

    def move_values(self, states: State) -> torch.Tensor:
        scores = self.move_scores(states)
        return torch.where(scores.isnan(), math.nan, scores.sign())  # (torch's sign of NaN is 0)


def make_oracle(game: Game) -> Oracle:
    """BitBully for standard Connect Four, exhaustive search for games small enough; else a UserError."""
    if game == standard_connect_four():
        return ConnectFourOracle(game)
    return _exhaustive(game)


@functools.lru_cache(maxsize=4)
def _exhaustive(game: Game) -> ExhaustiveOracle:
    """One solved game per process (it never changes): players, judges and plan checks share it."""
    return ExhaustiveOracle(game)
