"""Tic-tac-toe: three in a row on 3 x 3; gomoku's rules at that size, with its own name.

Moves are written as squares "a1".."c3" (row 1 at the bottom) or as the digits 1..9
in reading order (1 = top left, 9 = bottom right).
"""

from __future__ import annotations

from .base import Game, GameError
from .gomoku import Gomoku


class TicTacToe(Gomoku):
    name = "tictactoe"
    board_style = "squares"
    options = {}
    presets = ()
    sgf_game_type = None  # SGF has no game type for it (gomoku's GM[4] would read back as gomoku)
    canonical_config = Game.canonical_config

    def __init__(self, **options):
        Game.__init__(self, **options)
        self._setup(3, 3, 3, exact=False)

    def parse_action(self, text: str) -> int:
        t = text.strip()
        if len(t) == 1 and t in "123456789":
            return int(t) - 1
        try:
            return super().parse_action(t)
        except GameError:
            raise GameError(
                f"{self.name}: cannot read move {text!r}; write a square a1..c3 or a digit 1..9 (1 = top left)"
            ) from None

    def describe(self) -> str:
        return "tic-tac-toe"
