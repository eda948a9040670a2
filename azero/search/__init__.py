"""Batched array-tree search: B independent searches advanced together.

    from azero.search import UCB1, RolloutEvaluator, search
    tree = search(game, roots, RolloutEvaluator(game), UCB1(), num_simulations=1000, keys=keys)
    tree.root_visits()   # float [B, A]
"""

from __future__ import annotations

import torch

from games import Game, State

from .engine import Evaluator, Rule, simulate
from .evaluators import RolloutEvaluator
from .final import CRITERIA, choose
from .gumbel import GumbelResult, gumbel_noise, gumbel_search
from .selection import PUCT, UCB1, Gumbel, NodeView
from .tree import Tree, grow, new_tree

__all__ = [
    "CRITERIA",
    "PUCT",
    "UCB1",
    "Evaluator",
    "Gumbel",
    "GumbelResult",
    "NodeView",
    "RolloutEvaluator",
    "Rule",
    "Tree",
    "choose",
    "grow",
    "gumbel_noise",
    "gumbel_search",
    "new_tree",
    "search",
    "search_with_budget",
    "simulate",
]


def search(
    game: Game,
    roots: State,
    evaluator: Evaluator,
    rule: Rule,
    num_simulations: int,
    keys: torch.Tensor,
    *,
    root_prior: torch.Tensor | None = None,
    extra_capacity: int = 0,
    reuse: Tree | None = None,
) -> Tree:
    """Search each root with `num_simulations` simulations; returns the trees.

    roots: State [B] (unfinished games); keys: long [B] per-tree random keys;
    root_prior: float [B, A] (e.g. the network's policy with Dirichlet noise);
    reuse: an earlier tree nobody reads any more, whose memory the new one may take.
    """
    tree = new_tree(
        game,
        roots,
        capacity=num_simulations + 1 + extra_capacity,
        keys=keys,
        root_prior=root_prior,
        with_prior=rule.uses_prior,
        reuse=reuse,
    )
    return simulate(tree, game, evaluator, rule, num_simulations)


def search_with_budget(
    game: Game,
    roots: State,
    evaluator: Evaluator,
    rule: Rule,
    keys: torch.Tensor,
    *,
    simulations: int | None = None,
    seconds: float | None = None,
    root_prior: torch.Tensor | None = None,
    chunk: int = 32,
    on_progress=None,
    should_stop=None,
) -> Tree:
    """Search until `simulations` are done, or until `seconds` pass (at least one chunk),
    or until `should_stop()` says so; the tree grows as needed. `on_progress(tree)` is
    called after every chunk (live analysis)."""
    if simulations is None and seconds is None:
        raise ValueError("give simulations, seconds or both")
    import time

    deadline = None if seconds is None else time.monotonic() + seconds
    capacity = (simulations or 1024) + 1
    tree = new_tree(game, roots, capacity, keys, root_prior=root_prior, with_prior=rule.uses_prior)
    done = 0
    while True:
        step = chunk if simulations is None else min(chunk, simulations - done)
        if step <= 0:
            break
        if int(tree.next_node.max()) + step >= tree.capacity:
            tree = grow(tree, tree.capacity * 2)
        simulate(tree, game, evaluator, rule, step)
        done += step
        if on_progress is not None:
            on_progress(tree)
        if deadline is not None and time.monotonic() >= deadline:
            break
        if should_stop is not None and should_stop():
            break
    return tree
