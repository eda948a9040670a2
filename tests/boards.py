"""ASCII boards for tests: 'X' first player, 'O' second, '.' empty; top row first."""

from __future__ import annotations

import torch

from games.base import parse_ascii_board

SYMBOLS = {"X": 1, "O": -1, ".": 0}


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
