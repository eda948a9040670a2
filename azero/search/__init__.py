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
from .selection import PUCT, UCB1, NodeView
from .tree import Tree, new_tree

__all__ = [
    "CRITERIA",
    "PUCT",
    "UCB1",
    "Evaluator",
    "NodeView",
    "RolloutEvaluator",
    "Rule",
    "Tree",
    "choose",
    "new_tree",
    "search",
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
) -> Tree:
    """Search each root with `num_simulations` simulations; returns the trees.

    roots: State [B] (unfinished games); keys: long [B] per-tree random keys;
    root_prior: float [B, A] (e.g. the network's policy with Dirichlet noise).
    """
    tree = new_tree(
        game,
        roots,
        capacity=num_simulations + 1 + extra_capacity,
        keys=keys,
        root_prior=root_prior,
        with_prior=rule.uses_prior,
    )
    return simulate(tree, game, evaluator, rule, num_simulations)
