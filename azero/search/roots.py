"""Root parallelism: R independent trees of each position, searched as one batch, whose
root statistics are summed to choose the move (Chaslot, Winands and van den Herik,
"Parallel Monte-Carlo Tree Search", 2008: "root parallelization").

    states_r, keys_r = replicate(states, keys, roots)   # position b's copies: rows b*R .. b*R+R-1
    tree = search(game, states_r, evaluator, rule, ceil(N / roots), keys_r, parallel=K)
    stats = RootStats.of(tree, roots)                   # visits, value sums, ... per position [B, A]

Each copy has its own random keys (the searches differ by their random draws: UCB1's
untried moves, the rollouts). A step of R copies with K leaves each fills the evaluator's
batch as one tree with R * K leaves in flight would (leaf parallelism, search/engine.py),
but each tree has only K leaves in flight and sees 1/R of the simulations.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from games import State
from games.random import fold

from .tree import Tree

MAX_ROOTS = 256  # trees a position may be searched with


def replicate(states: State, keys: torch.Tensor, roots: int) -> tuple[State, torch.Tensor]:
    """Each of the B positions `roots` times (copy r of position b at row b * roots + r) and a
    key per copy: the position's key folded with r (copy 0 keeps the position's own key, so
    one root searches as without this module)."""
    if roots == 1:
        return states, keys
    index = torch.arange(states.batch_size, device=keys.device).repeat_interleave(roots)
    copy = torch.arange(roots, device=keys.device).repeat(states.batch_size)
    copied = keys.index_select(0, index)
    return states.take(index.to(states.to_play.device)), torch.where(copy == 0, copied, fold(copied, copy))


@dataclass
class RootStats:
    """The root statistics of B positions, summed over their R trees: visits and value sums
    float [B, A] (the view of the player to move), and `created` long [B, A], each root
    child's earliest expansion in any of the trees (its node index there; -1 if none
    expanded it), which UCT's robust child takes to break ties in visits."""

    visits: torch.Tensor
    value_sum: torch.Tensor
    created: torch.Tensor
    tree: Tree
    roots: int

    @staticmethod
    def of(tree: Tree, roots: int) -> "RootStats":
        """The sums over each position's `roots` consecutive trees of `tree` (batch B * roots)."""
        batch, actions = tree.batch_size // roots, tree.num_actions
        visits = tree.child_visits[:, 0].view(batch, roots, actions)
        value_sum = tree.child_value_sum[:, 0].view(batch, roots, actions)
        created = tree.children[:, 0].long().view(batch, roots, actions)
        unset = torch.iinfo(torch.long).max
        earliest = torch.where(created >= 0, created, unset).amin(dim=1)
        return RootStats(visits.sum(dim=1), value_sum.sum(dim=1), torch.where(earliest == unset, -1, earliest),
                         tree, roots)

    def q(self) -> torch.Tensor:
        """float [B, A]: each root action's mean value over all its visits (0 where unvisited)."""
        n = self.visits
        return torch.where(n > 0, self.value_sum / n.clamp(min=1), torch.zeros_like(n))

    def value(self) -> torch.Tensor:
        """float [B]: the position's value for the player to move, over all its trees' visits."""
        n, total = self.visits.sum(dim=1), self.value_sum.sum(dim=1)
        return torch.where(n > 0, total / n.clamp(min=1), torch.zeros_like(n))

    def principal_variation(self, index: int, max_length: int = 20) -> list[int]:
        """The most visited line of position `index` (actions): its most visited root move over
        all its trees, then the most visited line below it in the tree that visited it most
        (with one tree, Tree.principal_variation)."""
        visits = self.visits[index]
        if max_length < 1 or not bool((visits > 0).any()):
            return []
        action = int(visits.argmax())
        first = index * self.roots
        copy = first + int(self.tree.child_visits[first:first + self.roots, 0, action].argmax())
        child = int(self.tree.children[copy, 0, action])
        return [action] + (self.tree.principal_variation(copy, max_length - 1, child) if child >= 0 else [])
