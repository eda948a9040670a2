"""GTP's colours and vertices, shared by our GTP engine (gtp.py) and the external-engine player (gtp_client.py).

Vertices: Go the GTP way (columns A..T without I, rows counted from the
bottom, `pass`); Othello the way Othello GTP programs write them (GRhino's
gtp-rhino): columns a..h, row 1 at the top. Upper or lower case are both read;
moves are written in upper case, like GNU Go and GRhino do.
"""

from __future__ import annotations

import games
from games import Game, GameError

from ..errors import UserError

COLOUR_NAMES = ("black", "white")


def check_game(game: Game) -> None:
    """UserError unless GTP engines play `game` (`game.gtp_playable`: Go, Othello)."""
    if not game.gtp_playable:
        playable = " and ".join(name for name in games.names() if games.REGISTRY[name].gtp_playable)
        raise UserError(f"GTP plays {playable}, not {game.name} (gomoku engines speak Piskvork: pbrain.py)")


def parse_colour(text: str) -> int:
    """0 black, 1 white, from b, black, w or white in any case."""
    word = text.strip().lower()
    if word in ("b", "black"):
        return 0
    if word in ("w", "white"):
        return 1
    raise GameError(f"syntax error: invalid color {text!r}; write b, black, w or white")


def format_vertex(game: Game, action: int) -> str:
    return "pass" if action == game.pass_action else game.format_action(action).upper()


def parse_vertex(game: Game, text: str) -> int:
    """An action from a GTP vertex in either case; GameError if unreadable."""
    text = text.strip()
    if text.lower() == "pass" and game.pass_action is not None:
        return game.pass_action
    first_error = None
    for candidate in (text, text.upper(), text.lower()):
        try:
            return game.parse_action(candidate)
        except GameError as error:
            first_error = first_error or error
    raise GameError(f"syntax error: invalid vertex {text!r} ({first_error})")
