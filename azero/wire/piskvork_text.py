"""What our Piskvork brain (piskvork.py) and the pbrain: player (pbrain_client.py) share: the game a
Piskvork (Gomocup) manager plays on a board, and its squares written x,y (x the column from the
left, y the row from the top, both from 0)."""

from __future__ import annotations

import games
from games import GameError

from ..errors import UserError

SIZES = range(5, 20)  # the board widths and heights a Piskvork game may have here
RULE_FREESTYLE, RULE_EXACT = 0, 1  # INFO rule's values for the two rules gomoku has


def brain_game(width: int, height: int, exact: bool) -> games.Game:
    """The game a Piskvork manager plays on a width x height board: five in a row, exactly five
    when `exact` (INFO rule 1). GameError for a size gomoku does not have."""
    return games.make("gomoku", width=width, height=height, k=5, rule="standard" if exact else "freestyle")


def brain_rule(game: games.Game) -> int | None:
    """INFO rule's value for `game` (0 freestyle, 1 exactly five), None if no Piskvork manager plays it."""
    height, width = game.board_shape
    for exact in (False, True):
        try:
            if game == brain_game(width, height, exact):
                return RULE_EXACT if exact else RULE_FREESTYLE
        except GameError:
            return None
    return None


def check_brain_game(game: games.Game) -> None:
    """UserError unless a Piskvork manager can play `game` (five in a row, any rule it has)."""
    if brain_rule(game) is None:
        raise UserError(f"{game.spec} is not five-in-a-row gomoku, the game a Piskvork brain plays")


def format_square(game: games.Game, action: int) -> str:
    """A board action as Piskvork writes it: 'x,y'."""
    y, x = divmod(action, game.board_shape[1])
    return f"{x},{y}"
