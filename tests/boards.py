"""ASCII boards for tests: 'X' first player, 'O' second, '.' empty; top row first."""

from __future__ import annotations

import torch

from games import GameError

SYMBOLS = {"X": 1, "O": -1, ".": 0}


def parse_ascii_board(text: str, symbols: dict[str, int]) -> torch.Tensor:
    """An ASCII board (one row per line, top row first, cells separated by spaces or not)
    -> int8 [H, W]. `symbols` maps characters to cell values; other characters are errors."""
    rows = []
    for line in text.strip("\n").splitlines():
        cells = [ch for ch in line if not ch.isspace()]
        if cells:
            rows.append(cells)
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        raise GameError("ASCII board rows must all have the same number of cells")
    try:
        return torch.tensor([[symbols[c] for c in r] for r in rows], dtype=torch.int8)
    except KeyError as e:
        raise GameError(f"unknown board character {e.args[0]!r}; use {' '.join(symbols)}") from None


def board(text: str) -> torch.Tensor:
    return parse_ascii_board(text, SYMBOLS)


def position(game, text: str, to_play: int | None = None):
    """A one-game state of `game` from an ASCII board."""
    return game.from_board(board(text), to_play)


def play(game, state, *moves: str):
    """The state after playing the moves (text) in a one-game state."""
    for move in moves:
        state = game.step(state, torch.tensor([game.parse_action(move)]))
    return state


def legal_texts(game, state) -> set[str]:
    """The legal moves of a one-game state, as text."""
    return {game.format_action(a) for a in game.legal_actions(state)}


def count_games(game, max_depth: int | None = None):
    """(leaf counts per depth, total finished games) by batched breadth-first expansion."""
    frontier = game.initial_state(1)
    per_depth, finished = [], 0
    depth = 0
    while frontier.batch_size and (max_depth is None or depth < max_depth):
        mask = game.legal_mask(frontier)
        parent, action = mask.nonzero(as_tuple=True)
        frontier = game.step(frontier[parent], action)
        per_depth.append(frontier.batch_size)
        finished += int(frontier.done.sum())
        frontier = frontier[~frontier.done]
        depth += 1
    return per_depth, finished
