"""The network's search: PUCT or Gumbel AlphaZero driven by a policy-value network.

    searcher = NetworkSearch(game, net, config.search, device="cpu")     # the settings, whole
    tree = searcher.fresh_tree(states, keys, capacity=simulations + 1)
    searcher.search(tree, simulations)                                 # visits: tree.root_visits()

    searcher = NetworkSearch(game, net, algorithm="gumbel")            # the defaults, one changed
    result = searcher.gumbel_search(states, keys, simulations, noise=True)   # result.action, result.policy

Self-play, the ladder and the `az:` player (azero/players/az.py) all search this way, each
with a SearchSettings (azero/search/settings.py).
PUCT's root noise is Dirichlet noise mixed into the root prior only (AlphaZero): the
concentration alpha defaults to 10 / (typical number of legal moves), estimated
once per game from random play. Gumbel's root noise is its Gumbel sample (search/gumbel.py).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
import torch

from games import Game, State, sample_uniform_legal
from games.keyed_random import fold, make_keys

from .network import NetworkEvaluator, PolicyValueNet
from .search import PUCT, Gumbel, GumbelResult, Tree, gumbel_noise, gumbel_search, memory, new_tree, simulate
from .search.cache import CachedEvaluator
from .search.run import start_capacity
from .search.settings import DEFAULTS, SearchSettings
from .search.tree import node_bytes


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
    """PUCT or Gumbel AlphaZero search driven by a network, for all B positions at once.

    settings: the search's settings (SearchSettings; its defaults if None), with `changes`, settings
    by name, applied over them. The network runs in `settings.precision`; the rule is PUCT
    (c_init, c_base, fpu_reduction; forced_playouts, KataGo's k, at self-play's root) or Gumbel
    (c_visit, c_scale, rescale_q; considered_actions, m, the root moves sampled); either proves
    results in its tree where `settings.solver` says so (search/proofs.py).
    virtual_loss: how a leaf-parallel PUCT search counts the leaves in flight (selection.py); a
    player's choice, not a setting (self-play walks one leaf a tree).
    """

    def __init__(self, game: Game, net: PolicyValueNet, settings: SearchSettings | None = None, *, device="cpu",
                 virtual_loss: bool = False, **changes):
        self.settings = settings = (settings or DEFAULTS).replace(**changes)
        self.game = game
        self.evaluator = NetworkEvaluator(net, game, device, settings.precision)
        if settings.cache_entries:  # (the table's hits and lookups: self.evaluator.hits, .lookups)
            self.evaluator = CachedEvaluator(self.evaluator, settings.cache_entries,
                                             version=self.evaluator.weights_version)
        if settings.algorithm == "gumbel":
            self.rule = self.plain_rule = Gumbel(c_visit=settings.c_visit, c_scale=settings.c_scale,
                                                 rescale=settings.rescale_q)
        else:
            self.rule = PUCT(c_init=settings.c_init, c_base=settings.c_base, fpu_reduction=settings.fpu_reduction,
                             virtual_loss=virtual_loss, forced_playouts=settings.forced_playouts)
            # the rule of searches that should not explore (cheap searches of playout cap randomization)
            self.plain_rule = dataclasses.replace(self.rule, forced_playouts=0.0)

    @property
    def algorithm(self) -> str:
        return self.settings.algorithm

    @property
    def threat_nodes(self) -> int:
        """The node bound of the threat search at each root (search/threat_proofs.py); 0 = off
        (the settings `threats` and `threat_nodes`)."""
        return self.settings.threat_nodes if self.settings.threats else 0

    @property
    def considered_actions(self) -> int:
        return self.settings.considered_actions

    def fresh_tree(self, states: State, keys: torch.Tensor, capacity: int, *, reuse: Tree | None = None) -> Tree:
        """A tree per position whose root carries the network's prior and value (one forward pass);
        `reuse`: an earlier tree nobody reads any more, whose arrays the new one may refill."""
        prior, value = self.evaluator(states, keys)
        return new_tree(self.game, states, capacity, keys, root_prior=prior, with_prior=True, root_value=value,
                        reuse=reuse)

    def search(self, tree: Tree, simulations: int, parallel: int = 1, *, explore: bool = True) -> Tree:
        """`simulations` more simulations of the rule in every tree (PUCT's search; in place),
        `parallel` leaves per tree for each network call; without `explore`, no forced playouts."""
        rule = self.rule if explore else self.plain_rule
        return simulate(tree, self.game, self.evaluator, rule, simulations, parallel=parallel,
                        solver=self.settings.solver, threat_nodes=self.threat_nodes)

    def gumbel_search(self, states: State, keys: torch.Tensor, simulations: int, *, noise: bool,
                      on_progress=None, should_stop=None, parallel: int = 1) -> GumbelResult:
        """Gumbel AlphaZero on fresh trees of `states` (State [B]; keys long [B]): the move and
        the improved policy of each. noise: sample the root moves with Gumbel noise (self-play),
        else consider the m moves of highest prior and play the best (evaluation, play).
        parallel: the simulations of a round of the schedule evaluated together, at most this
        many a tree (search.gumbel.gumbel_search; the same search, but for the network's
        precision at the larger batches, NetworkEvaluator)."""
        if not isinstance(self.rule, Gumbel):
            raise ValueError("gumbel_search needs NetworkSearch(algorithm='gumbel')")
        per_node = node_bytes(states, self.game.num_actions, with_prior=True)
        memory.check_tree_size(states.batch_size, simulations + 1, per_node)
        # a search that may stop early (a deadline) starts at most INITIAL_TREE_BYTES and grows with
        # the simulations it makes; one that makes them all gets its whole tree at once (no copies)
        capacity = simulations + 1 if should_stop is None else start_capacity(states.batch_size, per_node,
                                                                              simulations + 1)
        tree = self.fresh_tree(states, keys, capacity)
        actions = self.game.num_actions
        gumbel = gumbel_noise(fold(keys, 0x6B5E), actions) if noise else torch.zeros(states.batch_size, actions)
        return gumbel_search(tree, self.game, self.evaluator, self.rule, simulations, gumbel.to(tree.prior.device),
                             considered=self.considered_actions, parallel=parallel, on_progress=on_progress,
                             should_stop=should_stop, solver=self.settings.solver, threat_nodes=self.threat_nodes)
