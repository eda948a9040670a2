"""`random`: uniformly random legal moves."""

from __future__ import annotations

from games import sample_uniform_legal

from .base import Player
from .spec import SEED

ARGUMENT = None
OPTIONS = {"seed": SEED}


class RandomPlayer(Player):
    spec = "random"

    def act(self, states, keys=None):
        return sample_uniform_legal(self.game.legal_mask(states), self._keys(states, keys))


def build(game, argument, options, *, device, seed) -> RandomPlayer:
    return RandomPlayer(game, seed=seed)
