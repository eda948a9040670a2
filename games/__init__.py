"""Board games as batched, pure functions over tensors (see games/base.py for the contract).

    import games
    game = games.make("gomoku", size=9, k=5)
    game = games.make_from_spec("gomoku:size=9,k=5")
"""

from __future__ import annotations

from .base import (
    NO_ACTION,
    BoardState,
    Game,
    GameError,
    IllegalActionError,
    State,
    Symmetry,
    opening_move,
    player_sign,
    sample_uniform_legal,
)
from .connect4 import ConnectFour
from .go import Go
from .gomoku import Gomoku
from .nim import Nim
from .othello import Othello
from .tictactoe import TicTacToe

REGISTRY: dict[str, type[Game]] = {
    cls.name: cls for cls in (ConnectFour, Go, Gomoku, Nim, Othello, TicTacToe)
}

__all__ = [
    "NO_ACTION",
    "REGISTRY",
    "BoardState",
    "Game",
    "GameError",
    "IllegalActionError",
    "State",
    "Symmetry",
    "make",
    "make_from_spec",
    "names",
    "parse_spec",
    "presets",
    "player_sign",
    "opening_move",
    "sample_uniform_legal",
]


def names() -> list[str]:
    """The registered game names."""
    return sorted(REGISTRY)


def presets(*, board: bool = False) -> list[str]:
    """The specs offered to people choosing a game: each registered game's `presets` (its name
    alone when it has none), by game name; `board=True` keeps the games with a board to draw."""
    return [
        spec
        for name in names()
        if REGISTRY[name].has_board or not board
        for spec in (REGISTRY[name].presets or (name,))
    ]


def make(name: str, **options) -> Game:
    """Build a game by name with validated options; GameError names what is allowed."""
    key = name.strip().lower().replace("-", "").replace("_", "")
    aliases = {"connectfour": "connect4", "tictactoe": "tictactoe"}
    key = aliases.get(key, key)
    if key not in REGISTRY:
        raise GameError(f"unknown game {name!r}; choose one of: {', '.join(names())}")
    return REGISTRY[key](**options)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """'gomoku:size=9,k=5' -> ('gomoku', {'size': '9', 'k': '5'})."""
    if not isinstance(spec, str):
        raise GameError(f"a game spec is text such as gomoku:size=9,k=5, not {spec!r}")
    name, _, rest = spec.strip().partition(":")
    options: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise GameError(f"cannot read game option {part!r} in {spec!r}; write options as key=value, e.g. gomoku:size=9,k=5")
        if key.strip() in options:
            raise GameError(f"game option {key.strip()} is given twice in {spec!r}")
        options[key.strip()] = value.strip()
    if not name:
        raise GameError(f"empty game spec {spec!r}; choose one of: {', '.join(names())}")
    return name, options


def make_from_spec(spec: str) -> Game:
    """Build a game from its text spec, e.g. 'gomoku:size=9,k=5' or 'connect4'."""
    name, options = parse_spec(spec)
    return make(name, **options)
