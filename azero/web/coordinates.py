"""The names the board's edges show, taken from the game's own move names (`format_action`).

A column's label is what the names of its cells share at the start (gomoku's `e` of
e1..e9, Go's `E` of E1..E9), a row's what they share at the end (`5` of a5..i5), so the
edges read the same as the move list and the analysis table in every game, without the
GUI knowing any game's notation. A side whose labels come out empty or repeated gets none:
Connect Four names a move by its column only, so its board has column numbers and no row
labels.
"""

from __future__ import annotations

import os

from games import Game


def cell_names(game: Game, clicks: list[int]) -> list[str]:
    """The move name of each cell, row by row ('' for a cell a click does nothing on).

    clicks: the action of a click on each cell, H * W values (`game.click_actions`, -1 none).
    """
    return [game.format_action(action) if action >= 0 else "" for action in clicks]


def edge_labels(game: Game, names: list[str]) -> tuple[list[str], list[str]]:
    """(column labels left to right, row labels top to bottom); either may be [] (no labels).

    names: the move name of each cell, H * W values row by row (see `cell_names`).
    """
    height, width = game.board_shape
    grid = [names[row * width:(row + 1) * width] for row in range(height)]
    columns = [_shared_start([grid[row][col] for row in range(height)]) for col in range(width)]
    rows = [_shared_end(grid[row]) for row in range(height)]
    return _usable(columns), _usable(rows)


def _shared_start(names: list[str]) -> str:
    return os.path.commonprefix([name for name in names if name]) if any(names) else ""


def _shared_end(names: list[str]) -> str:
    reversed_names = [name[::-1] for name in names if name]
    return os.path.commonprefix(reversed_names)[::-1] if reversed_names else ""


def _usable(labels: list[str]) -> list[str]:
    """The labels if each is non-empty and different from the others, else []."""
    if not labels or not all(labels) or len(set(labels)) != len(labels):
        return []
    return labels
