"""The random-rollout leaf evaluator: each leaf played out to the end with uniformly random moves
(the network's evaluator is azero.network.NetworkEvaluator)."""

from __future__ import annotations

import torch

from games import Game, State
from games.keyed_random import fold

from ..threads import one_thread_if

ONE_THREAD_ROLLOUTS = 256  # batches of rollouts up to this size run on one CPU thread


class RolloutEvaluator:
    """Plays each leaf out with uniformly random moves; the value is the game's result.

    No prior: rules that use one see a uniform prior. All rollouts of a batch run
    together (games may use a faster method of the same distribution, see
    Game.random_playout). A small batch (a leaf-parallel step of one game) runs on one
    CPU thread: its operations are too small for a second thread to help, and on a busy
    machine every operation split over two threads waits for the slower one.
    """

    def __init__(self, game: Game, rollouts: int = 1):
        self.game = game
        self.rollouts = rollouts

    def __call__(self, states: State, keys: torch.Tensor, legal: torch.Tensor | None = None) -> tuple[None, torch.Tensor]:
        with one_thread_if(states.batch_size * self.rollouts <= ONE_THREAD_ROLLOUTS and states.device.type == "cpu"):
            return self._play_out(states, keys)

    def _play_out(self, states: State, keys: torch.Tensor) -> tuple[None, torch.Tensor]:
        if self.rollouts == 1:
            return None, self.game.random_playout(states, keys ^ 0x5EED)  # playouts hash their keys
        n = states.batch_size
        many = states.repeat_interleave(self.rollouts)
        many_keys = fold(keys.repeat_interleave(self.rollouts), torch.arange(self.rollouts).repeat(n))
        results = self.game.random_playout(many, many_keys)
        return None, results.view(n, self.rollouts).mean(dim=1)
