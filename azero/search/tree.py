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

import dataclasses
from dataclasses import dataclass

import torch

from games import Game, State, player_sign


@dataclass(eq=False)
class Tree:
    """Arrays of B trees with room for N nodes each and A actions.

    Fields:
      states:          State [B * N]   the position at each node (flat: tree b, node n -> b * N + n)
      mover_sign:      float [B, N]    +1 if the first player moved into the node, else -1
      q_sign:          float [B, N]    turns the node's value into the view of the player to move there
                                       (written only in trees with priors: PUCT's first-play urgency)
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
    mover_sign: torch.Tensor
    q_sign: torch.Tensor
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
    reuse: Tree | None = None,
) -> Tree:
    """An empty tree for each root (B roots, `capacity` nodes, root at node 0).

    roots: State [B] of unfinished games; keys: long [B]; root_prior: float [B, A]
    (probabilities; uniform over legal actions if None); with_prior: keep priors at all.
    reuse: an earlier tree that nobody reads any more; arrays of the right shape are
    refilled in place instead of allocated (the arrays run to hundreds of megabytes, and
    a fresh allocation's first touch costs several times a refill).
    """
    batch, nodes, actions = roots.batch_size, capacity, game.num_actions
    device = roots.device
    if bool(roots.done.any()):
        raise ValueError("search was asked to search a finished game")
    states = _refill_states(reuse.states, roots, nodes) if reuse is not None else None
    if states is None:
        states = roots.repeat_interleave(nodes)

    def full(name, shape, value, dtype=torch.float32):
        old = getattr(reuse, name, None)
        if old is not None and old.shape == shape and old.dtype == dtype and old.device == device:
            return old.fill_(value)
        return torch.full(shape, value, dtype=dtype, device=device)

    mover = full("mover_sign", (batch, nodes), 0.0)
    mover[:, 0] = -player_sign(roots.to_play).float()
    q_sign = full("q_sign", (batch, nodes), 0.0)
    q_sign[:, 0] = -1.0
    parent = full("parent", (batch, nodes), -1, torch.long)
    action = full("action", (batch, nodes), -1, torch.long)
    visits = full("visits", (batch, nodes), 0.0)
    value_sum = full("value_sum", (batch, nodes), 0.0)
    terminal = full("terminal", (batch, nodes), False, torch.bool)
    terminal_value = full("terminal_value", (batch, nodes), 0.0)
    legal = full("legal", (batch, nodes, actions), False, torch.bool)
    legal[:, 0] = game.legal_mask(roots)
    children = full("children", (batch, nodes, actions), -1, torch.int32)
    child_visits = full("child_visits", (batch, nodes, actions), 0.0)
    child_value_sum = full("child_value_sum", (batch, nodes, actions), 0.0)
    prior = None
    if with_prior:
        prior = full("prior", (batch, nodes, actions), 0.0)
        if root_prior is None:
            root_prior = legal[:, 0].float() / legal[:, 0].sum(dim=1, keepdim=True).clamp(min=1)
        prior[:, 0] = root_prior
    return Tree(
        states=states,
        mover_sign=mover,
        q_sign=q_sign,
        parent=parent,
        action=action,
        visits=visits,
        value_sum=value_sum,
        terminal=terminal,
        terminal_value=terminal_value,
        legal=legal,
        children=children,
        child_visits=child_visits,
        child_value_sum=child_value_sum,
        prior=prior,
        next_node=torch.ones(batch, dtype=torch.long, device=device),
        keys=keys.to(device),
    )


def tree_bytes(tree: Tree) -> int:
    """The memory the tree's arrays take."""
    arrays = [getattr(tree, f.name) for f in dataclasses.fields(tree) if f.name != "states"]
    arrays += [getattr(tree.states, f.name) for f in dataclasses.fields(tree.states)]
    return sum(a.numel() * a.element_size() for a in arrays if a is not None)


def _refill_states(old: State, roots: State, nodes: int) -> State | None:
    """`roots.repeat_interleave(nodes)` written into `old` if it has the same layout, else None."""
    batch = roots.batch_size
    if type(old) is not type(roots) or old.batch_size != batch * nodes:
        return None
    pairs = [(getattr(old, f.name), getattr(roots, f.name)) for f in dataclasses.fields(roots)]
    if any(dst.shape[1:] != src.shape[1:] or dst.dtype != src.dtype or dst.device != src.device for dst, src in pairs):
        return None
    for dst, src in pairs:
        rest = src.shape[1:]
        dst.view(batch, nodes, *rest).copy_(src.unsqueeze(1).expand(batch, nodes, *rest))
    return old


def _gather_nodes(array: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """array [B, N, ...] reordered along nodes: out[b, j] = array[b, old[b, j]]."""
    index = old.view(*old.shape, *([1] * (array.dim() - 2))).expand(-1, -1, *array.shape[2:])
    return array.gather(1, index)


def subtree(tree: Tree, actions: torch.Tensor) -> tuple[Tree, torch.Tensor]:
    """The subtrees under the root actions taken (long [B]), compacted into a tree of the same size.

    Returns (tree, kept bool [B]); where the child was never expanded (kept False) the
    row is an empty tree and the caller must reset it with `replace_rows`.
    The kept child becomes node 0 with its visits, values and priors; its descendants
    keep their order (so parents still come before children).
    """
    from . import kernels  # (a cycle at import time otherwise)

    if kernels.supports_tree(tree):
        return kernels.subtree(tree, actions)
    batch, nodes = tree.batch_size, tree.capacity
    device = tree.visits.device
    rows = torch.arange(batch, device=device)
    new_root = tree.children[rows, 0, actions.clamp(min=0)].long()
    kept = (new_root >= 0) & (actions >= 0)
    index = torch.arange(nodes, device=device).expand(batch, nodes)
    # member[b, n]: node n descends from (or is) the new root; pointer jumping up the parents
    member = index == new_root.unsqueeze(1)
    jump = tree.parent.clone()
    for _ in range(max(1, nodes.bit_length())):
        valid = jump >= 0
        member = member | (valid & member.gather(1, jump.clamp(min=0)))
        jump = torch.where(valid, jump.gather(1, jump.clamp(min=0)), jump)
    member &= kept.unsqueeze(1)
    count = member.sum(dim=1)
    new_id = member.long().cumsum(dim=1) - 1  # position of each member in the new tree
    old = torch.where(member, index, index + nodes).argsort(dim=1)  # old node of each new slot
    used = index < count.unsqueeze(1)

    def nodes_of(array, empty):
        out = _gather_nodes(array, old)
        mask = used.view(*used.shape, *([1] * (array.dim() - 2)))
        return torch.where(mask, out, torch.as_tensor(empty, dtype=array.dtype, device=device))

    parent = nodes_of(tree.parent, -1)
    parent = torch.where(parent >= 0, new_id.gather(1, parent.clamp(min=0)), parent)
    parent[:, 0] = -1
    children = nodes_of(tree.children, -1).long()
    flat_children = children.clamp(min=0).view(batch, -1)
    children = torch.where(children >= 0, new_id.gather(1, flat_children).view_as(children), children)
    action = nodes_of(tree.action, -1)
    action[:, 0] = -1
    flat_old = (rows.unsqueeze(1) * nodes + old).view(-1)
    return (
        Tree(
            states=tree.states.take(flat_old),
            mover_sign=nodes_of(tree.mover_sign, 0.0),
            q_sign=nodes_of(tree.q_sign, 0.0),
            parent=parent,
            action=action,
            visits=nodes_of(tree.visits, 0.0),
            value_sum=nodes_of(tree.value_sum, 0.0),
            terminal=nodes_of(tree.terminal, False),
            terminal_value=nodes_of(tree.terminal_value, 0.0),
            legal=nodes_of(tree.legal, False),
            children=children.to(torch.int32),
            child_visits=nodes_of(tree.child_visits, 0.0),
            child_value_sum=nodes_of(tree.child_value_sum, 0.0),
            prior=None if tree.prior is None else nodes_of(tree.prior, 0.0),
            next_node=torch.where(kept, count, torch.ones_like(count)),
            keys=tree.keys.clone(),
        ),
        kept,
    )


def replace_rows(tree: Tree, rows: torch.Tensor, other: Tree) -> Tree:
    """In place: trees `rows` (long [n]) become the trees of `other` (a Tree of n rows, same capacity)."""
    nodes = tree.capacity
    for name in ("mover_sign", "q_sign", "parent", "action", "visits", "value_sum", "terminal",
                 "terminal_value", "legal", "children", "child_visits", "child_value_sum", "next_node", "keys"):
        getattr(tree, name).index_copy_(0, rows, getattr(other, name))
    if tree.prior is not None:
        tree.prior.index_copy_(0, rows, other.prior)
    flat = (rows.unsqueeze(1) * nodes + torch.arange(nodes, device=rows.device)).view(-1)
    tree.states.put_(flat, other.states)
    return tree


def grow(tree: Tree, capacity: int) -> Tree:
    """The same trees with room for `capacity` nodes each (a copy; capacity >= the current one)."""
    old = tree.capacity
    if capacity <= old:
        return tree
    extra = capacity - old

    def widen(array, empty):
        if array is None:
            return None
        pad = torch.full((array.shape[0], extra, *array.shape[2:]), empty, dtype=array.dtype, device=array.device)
        return torch.cat([array, pad], dim=1)

    batch = tree.batch_size

    def widen_state(t):
        shaped = t.view(batch, old, *t.shape[1:])
        pad = shaped[:, :1].expand(batch, extra, *t.shape[1:])  # any valid position; overwritten when used
        return torch.cat([shaped, pad], dim=1).reshape(batch * capacity, *t.shape[1:])

    return Tree(
        states=tree.states._map(widen_state),
        mover_sign=widen(tree.mover_sign, 0.0),
        q_sign=widen(tree.q_sign, 0.0),
        parent=widen(tree.parent, -1),
        action=widen(tree.action, -1),
        visits=widen(tree.visits, 0.0),
        value_sum=widen(tree.value_sum, 0.0),
        terminal=widen(tree.terminal, False),
        terminal_value=widen(tree.terminal_value, 0.0),
        legal=widen(tree.legal, False),
        children=widen(tree.children, -1),
        child_visits=widen(tree.child_visits, 0.0),
        child_value_sum=widen(tree.child_value_sum, 0.0),
        prior=widen(tree.prior, 0.0),
        next_node=tree.next_node.clone(),
        keys=tree.keys.clone(),
    )
