"""Batched array-tree search: B independent searches advanced together.

    from azero.search import UCB1, RolloutEvaluator, search
    tree = search(game, roots, RolloutEvaluator(game), UCB1(), num_simulations=1000, keys=keys)
    tree.root_visits()   # float [B, A]
"""

from __future__ import annotations

from .engine import Evaluator, Rule, simulate
from .final import CRITERIA, choose
from .gumbel import GumbelResult, gumbel_noise, gumbel_search
from .rollouts import RolloutEvaluator
from .run import search, search_with_budget
from .selection import PUCT, UCB1, Gumbel, NodeView
from .settings import SearchSettings
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
    "SearchSettings",
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
