"""Leaf evaluators: a random rollout to the end of the game (here) and the network (azero.network)."""

from __future__ import annotations

import torch

from games import Game, State
from games.random import fold


class RolloutEvaluator:
    """Plays each leaf out with uniformly random moves; the value is the game's result.

    No prior: rules that use one see a uniform prior. All rollouts of a batch run
    together (games may use a faster method of the same distribution, see
    Game.random_playout).
    """

    def __init__(self, game: Game, rollouts: int = 1):
        self.game = game
        self.rollouts = rollouts

    def __call__(self, states: State, keys: torch.Tensor, legal: torch.Tensor | None = None) -> tuple[None, torch.Tensor]:
        if self.rollouts == 1:
            return None, self.game.random_playout(states, keys ^ 0x5EED)  # playouts hash their keys
        n = states.batch_size
        many = states.repeat_interleave(self.rollouts)
        many_keys = fold(keys.repeat_interleave(self.rollouts), torch.arange(self.rollouts).repeat(n))
        results = self.game.random_playout(many, many_keys)
        return None, results.view(n, self.rollouts).mean(dim=1)
