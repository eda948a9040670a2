"""`perfect`: exact play from an exact solver (exhaustive search for tiny games, BitBully for Connect Four)."""

from __future__ import annotations

from games import sample_uniform_legal

from ..oracle import make_oracle
from .base import Player
from .spec import SEED

ARGUMENT = None
OPTIONS = {"seed": SEED}


class PerfectPlayer(Player):
    """Exact play (azero/oracle.py); among the moves that keep the position's value, a random one."""

    spec = "perfect"

    def __init__(self, game, seed=0):
        super().__init__(game, seed)
        self.oracle = make_oracle(game)

    def act(self, states, keys=None):
        return sample_uniform_legal(self.oracle.best_actions(states).to(states.device), self._keys(states, keys))


def build(game, argument, options, *, device, seed) -> PerfectPlayer:
    return PerfectPlayer(game, seed=seed)
