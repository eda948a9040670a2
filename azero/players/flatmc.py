"""`flatmc:ROLLOUTS`: flat Monte Carlo, the rollouts shared evenly among the legal moves."""

from __future__ import annotations

import math

import torch

from games.options import Option
from games.random import fold

from ..player import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from .spec import SEED

ARGUMENT = Option(None, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED, metavar="ROLLOUTS",
                  help="a budget (random rollouts a move)")
OPTIONS = {"seed": SEED}


class FlatMCPlayer(Player):
    """Flat Monte Carlo: the rollouts are shared evenly among the legal moves; best mean wins."""

    def __init__(self, game, rollouts=1000, seed=0, chunk=65536):
        super().__init__(game, seed)
        self.rollouts, self.chunk = rollouts, chunk
        self.spec = f"flatmc:{rollouts}"

    def analyse(self, states, keys=None, **budget):
        keys = self._keys(states, keys)
        game, batch, actions = self.game, states.batch_size, self.game.num_actions
        mask = game.legal_mask(states)
        n_legal = mask.sum(dim=1)
        # rollouts per legal move: the budget split evenly, the remainder to the first moves
        rank = mask.long().cumsum(dim=1) - 1
        share = (self.rollouts // n_legal).unsqueeze(1) + (rank < (self.rollouts % n_legal).unsqueeze(1)).long()
        counts = torch.where(mask, share, torch.zeros_like(share)).view(-1)
        ends = counts.cumsum(0)  # rollout `serial` belongs to the first (game, move) pair whose end is past it
        totals = torch.zeros(batch * actions, device=states.device)
        for start in range(0, int(ends[-1]), self.chunk):  # memory in chunks, whatever the budget
            serial = torch.arange(start, min(start + self.chunk, int(ends[-1])), device=states.device)
            part = torch.searchsorted(ends, serial, right=True)
            row, action = part // actions, part % actions
            children = game.step(states[row], action)
            result = game.random_playout(children, fold(keys[row], serial))
            sign = 1.0 - 2.0 * states.to_play[row].float()
            totals.index_add_(0, part, result * sign)
        visits = counts.view(batch, actions).float()
        q = torch.where(visits > 0, totals.view(batch, actions) / visits.clamp(min=1), torch.zeros_like(visits))
        action = q.masked_fill(~mask, -math.inf).argmax(dim=1)
        value = q.masked_fill(~mask, -math.inf).amax(dim=1)
        return Analysis(action=action, visits=visits, q=q, value=value, pv=[[int(a)] for a in action])

    def act(self, states, keys=None):
        return self.analyse(states, keys).action


def build(game, rollouts, options, *, device, seed) -> FlatMCPlayer:
    return FlatMCPlayer(game, rollouts, seed=seed)
