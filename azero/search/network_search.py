"""The network's search: PUCT driven by a policy-value network, with Dirichlet root noise.

    searcher = NetworkSearch(game, net, device="cpu")
    tree = searcher.fresh_tree(states, keys, capacity=simulations + 1)
    searcher.search(tree, simulations)

Self-play and the `az:` player (azero/players/az.py) both search this way.
Root noise is Dirichlet noise mixed into the root prior only (AlphaZero): the
concentration alpha defaults to 10 / (typical number of legal moves), estimated
once per game from random play.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from games import Game, State, sample_uniform_legal
from games.random import fold, make_keys

from ..network import NetworkEvaluator, PolicyValueNet
from . import PUCT, Tree, new_tree, simulate


@lru_cache(maxsize=None)
def typical_legal_moves(game: Game) -> float:
    """Mean number of legal moves over the positions of 32 random games (fixed seed)."""
    state = game.initial_state(32)
    keys = make_keys(12345, 32)
    counts, ply = [], 0
    while not bool(state.done.all()) and ply < 10_000:
        mask = game.legal_mask(state)
        live = ~state.done
        counts.append(mask[live].sum(dim=1).float())
        state = game.step(state, sample_uniform_legal(mask, fold(keys, ply)))
        ply += 1
    return float(torch.cat(counts).mean()) if counts else 1.0


def default_alpha(game: Game) -> float:
    return 10.0 / max(typical_legal_moves(game), 1.0)


def add_dirichlet_noise(
    prior: torch.Tensor, legal: torch.Tensor, alpha: float, fraction: float, rng: np.random.Generator
) -> torch.Tensor:
    """(1 - fraction) * prior + fraction * Dirichlet(alpha) over the legal actions of each row.

    prior float [B, A], legal bool [B, A] -> float [B, A].
    """
    gamma = rng.gamma(alpha, 1.0, size=tuple(prior.shape)).astype(np.float32)
    noise = torch.from_numpy(gamma).to(prior.device) * legal
    noise = noise / noise.sum(dim=1, keepdim=True).clamp(min=1e-30)
    return (1.0 - fraction) * prior + fraction * noise


class NetworkSearch:
    """PUCT search driven by a network, for all B positions at once."""

    def __init__(self, game: Game, net: PolicyValueNet, *, device="cpu", c_init=1.25, c_base=19652.0,
                 fpu_reduction=0.0, precision="auto", forced_playouts=0.0):
        self.game = game
        self.evaluator = NetworkEvaluator(net, game, device, precision)
        self.rule = PUCT(c_init=c_init, c_base=c_base, fpu_reduction=fpu_reduction, forced_playouts=forced_playouts)
        # the rule of searches that should not explore (cheap searches of playout cap randomization)
        self.plain_rule = PUCT(c_init=c_init, c_base=c_base, fpu_reduction=fpu_reduction)

    def fresh_tree(self, states: State, keys: torch.Tensor, capacity: int) -> Tree:
        """A tree per position whose root carries the network's prior (one forward pass)."""
        prior, _ = self.evaluator(states, keys)
        return new_tree(self.game, states, capacity, keys, root_prior=prior, with_prior=True)

    def search(self, tree: Tree, simulations: int, *, explore: bool = True) -> Tree:
        """`simulations` more in every tree; without `explore`, no forced playouts."""
        return simulate(tree, self.game, self.evaluator, self.rule if explore else self.plain_rule, simulations)
