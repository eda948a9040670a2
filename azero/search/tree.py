"""The search tree of B independent searches, held in preallocated arrays.

Node 0 of each tree is its root; every simulation adds at most one node.  Values
follow one sign convention, written here once:

    a node's value is from the view of the player who moved into it
    (for the root: the opponent of the player to move at the root).

`value_sum` and `child_value_sum` add up values in [-1, 1] (+1 = a win for that
player), so a child's mean is directly the payoff of choosing it for the player
who chooses at its parent.  Leaf evaluations arrive from the first player's view
(a game result) and are turned into each node's view by `mover_sign`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from games import Game, State, player_sign


@dataclass(eq=False)
class Tree:
    """Arrays of B trees with room for N nodes each and A actions.

    Fields:
      states:          State [B * N]   the position at each node (flat: tree b, node n -> b * N + n)
      to_play:         long  [B, N]    player to move at the node
      mover_sign:      float [B, N]    +1 if the first player moved into the node, else -1
      parent:          long  [B, N]    parent node, -1 for the root and unused nodes
      action:          long  [B, N]    action from the parent, -1 for the root
      visits:          float [B, N]    simulations through the node
      value_sum:       float [B, N]    sum of values, node's mover's view
      terminal:        bool  [B, N]    the game is over at the node
      terminal_value:  float [B, N]    the result there, first player's view
      legal:           bool  [B, N, A] legal actions at the node
      children:        int32 [B, N, A] child node per action, -1 = not expanded
      child_visits:    float [B, N, A] visits of each child (0 if not expanded)
      child_value_sum: float [B, N, A] value sums of each child, chooser's view
      prior:           float [B, N, A] policy prior at the node, or None for rules that use none
      next_node:       long  [B]       index of the next free node
      keys:            long  [B]       per-tree random keys (games/random.py)
    """

    states: State
    to_play: torch.Tensor
    mover_sign: torch.Tensor
    parent: torch.Tensor
    action: torch.Tensor
    visits: torch.Tensor
    value_sum: torch.Tensor
    terminal: torch.Tensor
    terminal_value: torch.Tensor
    legal: torch.Tensor
    children: torch.Tensor
    child_visits: torch.Tensor
    child_value_sum: torch.Tensor
    prior: torch.Tensor | None
    next_node: torch.Tensor
    keys: torch.Tensor

    @property
    def batch_size(self) -> int:
        return self.visits.shape[0]

    @property
    def capacity(self) -> int:
        return self.visits.shape[1]

    @property
    def num_actions(self) -> int:
        return self.legal.shape[2]

    # -- root summaries ------------------------------------------------------------------------
    def root_visits(self) -> torch.Tensor:
        """float [B, A]: visits of each root action."""
        return self.child_visits[:, 0]

    def root_q(self) -> torch.Tensor:
        """float [B, A]: mean value of each root action for the player to move (0 where unvisited)."""
        n = self.child_visits[:, 0]
        return torch.where(n > 0, self.child_value_sum[:, 0] / n.clamp(min=1), torch.zeros_like(n))

    def root_value(self) -> torch.Tensor:
        """float [B]: the search's value of the root for the player to move there, in [-1, 1]."""
        n = self.child_visits[:, 0].sum(dim=1)
        total = self.child_value_sum[:, 0].sum(dim=1)
        return torch.where(n > 0, total / n.clamp(min=1), torch.zeros_like(n))

    def principal_variation(self, index: int, max_length: int = 20) -> list[int]:
        """The most visited line from the root of tree `index` (actions)."""
        line, node = [], 0
        for _ in range(max_length):
            visits = self.child_visits[index, node]
            if not bool((visits > 0).any()):
                break
            action = int(visits.argmax())
            line.append(action)
            node = int(self.children[index, node, action])
            if node < 0:
                break
        return line


def new_tree(
    game: Game,
    roots: State,
    capacity: int,
    keys: torch.Tensor,
    root_prior: torch.Tensor | None = None,
    with_prior: bool = True,
) -> Tree:
    """An empty tree for each root (B roots, `capacity` nodes, root at node 0).

    roots: State [B] of unfinished games; keys: long [B]; root_prior: float [B, A]
    (probabilities; uniform over legal actions if None); with_prior: keep priors at all.
    """
    batch, nodes, actions = roots.batch_size, capacity, game.num_actions
    device = roots.device
    if bool(roots.done.any()):
        raise ValueError("search was asked to search a finished game")
    states = roots.repeat_interleave(nodes)

    def full(shape, value, dtype=torch.float32):
        return torch.full(shape, value, dtype=dtype, device=device)

    legal = full((batch, nodes, actions), False, torch.bool)
    legal[:, 0] = game.legal_mask(roots)
    prior = None
    if with_prior:
        prior = full((batch, nodes, actions), 0.0)
        if root_prior is None:
            root_prior = legal[:, 0].float() / legal[:, 0].sum(dim=1, keepdim=True).clamp(min=1)
        prior[:, 0] = root_prior
    to_play = full((batch, nodes), 0, torch.long)
    to_play[:, 0] = roots.to_play
    mover = full((batch, nodes), 0.0)
    mover[:, 0] = -player_sign(roots.to_play).float()
    return Tree(
        states=states,
        to_play=to_play,
        mover_sign=mover,
        parent=full((batch, nodes), -1, torch.long),
        action=full((batch, nodes), -1, torch.long),
        visits=full((batch, nodes), 0.0),
        value_sum=full((batch, nodes), 0.0),
        terminal=full((batch, nodes), False, torch.bool),
        terminal_value=full((batch, nodes), 0.0),
        legal=legal,
        children=full((batch, nodes, actions), -1, torch.int32),
        child_visits=full((batch, nodes, actions), 0.0),
        child_value_sum=full((batch, nodes, actions), 0.0),
        prior=prior,
        next_node=full((batch,), 1, torch.long),
        keys=keys.to(device),
    )
