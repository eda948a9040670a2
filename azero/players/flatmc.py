"""`flatmc:ROLLOUTS`: flat Monte Carlo, the rollouts shared evenly among the legal moves."""

from __future__ import annotations

import math
import time

import torch

from games.keyed_random import fold
from games.options import Option

from .base import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from .spec import SEED

ARGUMENT = Option(None, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED, metavar="ROLLOUTS",
                  help="a budget (random rollouts a move)")
OPTIONS = {"seed": SEED}
LIVE_ROUND = 4096  # rollouts of a round (all positions together), at most, in a search bounded by time or stopped early


class FlatMCPlayer(Player):
    """Flat Monte Carlo: the rollouts are shared evenly among the legal moves; best mean wins."""

    def __init__(self, game, rollouts=1000, seed=0, chunk=65536):
        super().__init__(game, seed)
        self.rollouts, self.chunk = rollouts, chunk
        self.stated_simulations = rollouts
        self.spec = f"flatmc:{rollouts}"

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        """`simulations` rollouts a position (the player's ROLLOUTS if None; none if only
        `seconds` bounds it), shared evenly among its legal moves. With `seconds`, `should_stop`
        or `on_progress` the rollouts go in rounds: the first one rollout a move, each next one
        twice the last, at most LIVE_ROUND and no longer than the time left at the last
        round's pace. Every round keeps the moves' counts within one of each other; the search
        stops after the round where the time is up, the budget spent or should_stop() true,
        and on_progress(analysis) hears of every round."""
        keys = self._keys(states, keys)
        mask = self.game.legal_mask(states)
        legal = mask.sum(dim=1).clamp(min=1)
        budget = simulations if simulations is not None else None if seconds is not None else self.rollouts
        live = seconds is not None or should_stop is not None or on_progress is not None
        deadline = None if seconds is None else time.monotonic() + seconds
        most_moves = int(legal.max())
        widest = max(most_moves, LIVE_ROUND // states.batch_size)
        size = most_moves if live else budget  # rollouts of each position in the next round
        totals = torch.zeros(mask.numel(), device=states.device)
        visits = torch.zeros(mask.numel(), device=states.device)
        done = 0  # rollouts of each position so far
        while True:
            if budget is not None:
                size = min(size, budget - done)
            started = time.monotonic()
            counts = self._shares(mask, legal, size, done)
            self._play(states, keys, counts, done * mask.shape[0], totals)
            visits += counts.float()
            done += size
            analysis = self._analysis(mask, totals, visits)
            if on_progress is not None:
                on_progress(analysis)
            now = time.monotonic()
            if ((budget is not None and done >= budget) or (deadline is not None and now >= deadline)
                    or (should_stop is not None and should_stop())):
                return analysis
            pace = max(now - started, 1e-9) / size  # seconds a rollout of each position took
            size = min(2 * size, widest)
            if deadline is not None:
                size = max(1, min(size, int((deadline - now) / pace)))

    @staticmethod
    def _shares(mask: torch.Tensor, legal: torch.Tensor, size: int, done: int) -> torch.Tensor:
        """long [B * A]: `size` rollouts of each position split evenly among its legal moves, the
        remainder to the moves after those that got the last round's (so every move's total stays
        within one of the others')."""
        rank = mask.long().cumsum(dim=1) - 1
        first = (done % legal).unsqueeze(1)  # where the remainder starts this round
        extra = ((rank - first) % legal.unsqueeze(1)) < (size % legal).unsqueeze(1)
        share = (size // legal).unsqueeze(1) + extra.long()
        return torch.where(mask, share, torch.zeros_like(share)).view(-1)

    def _play(self, states, keys, counts: torch.Tensor, first_serial: int, totals: torch.Tensor) -> None:
        """Play `counts` rollouts after each (position, move) pair, adding the results (the
        mover's view) to `totals`; rollout keys number on from `first_serial`."""
        actions = self.game.num_actions
        ends = counts.cumsum(0)  # rollout `serial` belongs to the first (game, move) pair whose end is past it
        for start in range(0, int(ends[-1]), self.chunk):  # memory in chunks, whatever the budget
            serial = torch.arange(start, min(start + self.chunk, int(ends[-1])), device=states.device)
            part = torch.searchsorted(ends, serial, right=True)
            row, action = part // actions, part % actions
            children = self.game.step(states[row], action)
            result = self.game.random_playout(children, fold(keys[row], serial + first_serial))
            sign = 1.0 - 2.0 * states.to_play[row].float()
            totals.index_add_(0, part, result * sign)

    def _analysis(self, mask: torch.Tensor, totals: torch.Tensor, visits: torch.Tensor) -> Analysis:
        batch, actions = mask.shape
        visits = visits.view(batch, actions).clone()
        q = torch.where(visits > 0, totals.view(batch, actions) / visits.clamp(min=1), torch.zeros_like(visits))
        action = q.masked_fill(~mask, -math.inf).argmax(dim=1)
        value = q.masked_fill(~mask, -math.inf).amax(dim=1)
        return Analysis(action=action, visits=visits, q=q, value=value, pv=[[int(a)] for a in action])

    def act(self, states, keys=None):
        return self.analyse(states, keys).action


def build(game, rollouts, options, *, device, seed) -> FlatMCPlayer:
    return FlatMCPlayer(game, rollouts, seed=seed)
