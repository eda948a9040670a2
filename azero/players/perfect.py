"""`perfect`: exact play from an exhaustive solution (tic-tac-toe, Nim and other tiny games)."""

from __future__ import annotations

from games import sample_uniform_legal

from ..player import Player
from ..solver import Solver
from .spec import SEED

ARGUMENT = None
OPTIONS = {"seed": SEED}


class PerfectPlayer(Player):
    """Exact play from an exhaustive solution; among equally good moves, a random one."""

    spec = "perfect"

    def __init__(self, game, seed=0):
        super().__init__(game, seed)
        self.solver = Solver(game)

    def act(self, states, keys=None):
        return sample_uniform_legal(self.solver.best_actions(states), self._keys(states, keys))


def build(game, argument, options, *, device, seed) -> PerfectPlayer:
    return PerfectPlayer(game, seed=seed)
