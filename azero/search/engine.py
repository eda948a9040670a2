"""One simulation step advances all B trees together: select, expand, evaluate, back up.

    tree = new_tree(game, roots, capacity=S + 1, keys=keys)
    simulate(tree, game, evaluator, rule, S)

Selection walks all B trees down in lock-step, one level per iteration, with the
rule (UCB1, PUCT, Gumbel) choosing at each node; a tree stops at an action whose child
does not exist yet (it is expanded: one `game.step` for all such trees) or at a
finished game.  All new leaves are evaluated in one call, and the values are
added along every path with one scatter-add.  Randomness comes from per-tree
keys folded with the simulation and depth, so each tree's search is the same
alone or in any batch (with a network evaluator in float32: in its default "auto"
precision it computes batches of 16 or more in bfloat16, see azero.network).

On a CPU, with UCB1, PUCT or Gumbel, the descent and the backup run as compiled loops over
the trees (search/kernels.py) with the same rules as the torch form below (children whose
scores tie to within float32 rounding of a logarithm may be ordered differently).
"""

from __future__ import annotations

from typing import Callable, Protocol

import torch

from games import NO_ACTION, Game, State
from games.base import player_signs
from games.random import step_keys, uniform_draw

from . import kernels
from .selection import NodeView
from .tree import ROOT, Tree

_PAST_END = -1  # path entries below a path's last node


class Evaluator(Protocol):
    """Evaluates leaves: (states [n], keys long [n]) -> (prior float [n, A] or None, value float [n]).

    The value is from the first player's view (like a game result). The prior, when
    given, is a probability vector over actions (illegal ones 0). An evaluator whose
    `uses_keys` attribute is False gets keys None (the search then skips making them).
    The search passes `legal`, the states' legal mask, which it has already computed.
    """

    def __call__(
        self, states: State, keys: torch.Tensor | None, legal: torch.Tensor | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor]: ...


# the root actions a caller imposes on simulate: long [B], or a function giving them before each simulation
RootAction = torch.Tensor | Callable[[], torch.Tensor]


class Rule(Protocol):
    uses_prior: bool  # the tree keeps priors for it
    uses_uniform: bool  # it wants one uniform random number per tree and level

    def select(self, view: NodeView) -> torch.Tensor: ...


def _rows(array: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
    """Entries `flat` (b * N + n) of a [B, N, ...] array: [len(flat), ...]."""
    return array.view(-1, *array.shape[2:]).index_select(0, flat)


def _node_view(tree: Tree, flat: torch.Tensor, uniform_draw: torch.Tensor, active: torch.Tensor | None = None,
               root: bool = False) -> NodeView:
    """The NodeView of node `flat` (index b * N + n) of each tree (`root`: the roots)."""
    visits = _rows(tree.visits, flat)
    raw_value = None
    if tree.prior is not None:  # PUCT's first-play urgency and Gumbel's mixed value need the node's own values
        q_sign = _rows(tree.q_sign, flat)
        q = _rows(tree.value_sum, flat) / visits.clamp(min=1) * q_sign
        raw_value = _rows(tree.raw_value, flat) * q_sign
    else:
        q = torch.zeros_like(visits)
    return NodeView(
        visits=visits,
        q=q,
        child_visits=_rows(tree.child_visits, flat),
        child_value_sum=_rows(tree.child_value_sum, flat),
        prior=None if tree.prior is None else _rows(tree.prior, flat),
        legal=_rows(tree.legal, flat),
        uniform=uniform_draw,
        active=active,
        raw_value=raw_value,
        root=root,
    )


def simulate(
    tree: Tree,
    game: Game,
    evaluator: Evaluator,
    rule: Rule,
    num_simulations: int,
    *,
    root_action: RootAction | None = None,
) -> Tree:
    """Run `num_simulations` simulations in each of the B trees (in place); returns the tree.

    root_action: the action each simulation takes at each root instead of the rule's choice:
    long [B] for every simulation of the call, or a function called before each simulation
    that returns them (Gumbel's sequential halving chooses there, search/gumbel.py).
    """
    # Inference mode spares the many small tensor operations autograd's bookkeeping. The
    # tree's arrays stay normal tensors (only written in place here), and nothing made here
    # outlives the call (caches that do are built with inference mode off).
    with torch.inference_mode():
        return _simulate(tree, game, evaluator, rule, num_simulations, root_action)


def _simulate(tree, game, evaluator, rule, num_simulations, root_action=None) -> Tree:
    batch, capacity, actions = tree.batch_size, tree.capacity, tree.num_actions
    device = tree.visits.device
    rows = torch.arange(batch, device=device)
    base = rows * capacity
    needs_keys = rule.uses_uniform or getattr(evaluator, "uses_keys", True)
    # each simulation adds at most one node to a tree: check fullness only when it can happen
    check_full = int(tree.next_node.max()) + num_simulations > capacity
    if kernels.supports(rule, tree):
        return _simulate_compiled(tree, game, evaluator, rule, num_simulations, check_full, needs_keys, root_action)
    for _ in range(num_simulations):
        if check_full and int(tree.next_node.max()) >= capacity:
            raise RuntimeError(f"search tree is full ({capacity} nodes); allocate more capacity")
        # keys from each tree's own simulation counter, for rules and evaluators that draw random numbers
        sim_keys = step_keys(tree.keys, tree.visits[:, ROOT].long()) if needs_keys else None
        first = root_action() if callable(root_action) else root_action
        # -- select ------------------------------------------------------------------------
        # path[d]: the node at depth d of each tree's path, _PAST_END past its end; the node
        # a tree expands (next_node, known in advance) sits at its depth. edges[d]: the edge
        # from path[d] to path[d + 1], as a flat index into the [B, N, A] arrays.
        node = torch.full((batch,), ROOT, dtype=torch.long, device=device)
        path, edges = [node], []
        active = torch.ones(batch, dtype=torch.bool, device=device)
        expand_action = torch.full((batch,), NO_ACTION, dtype=torch.long, device=device)
        new_node = tree.next_node.clone()
        depth = 0
        while True:
            flat = base + node
            if depth == 0 and first is not None:
                action = first
            else:
                draw = uniform_draw(sim_keys, depth) if rule.uses_uniform else None  # UCB1's untried moves
                action = rule.select(_node_view(tree, flat, draw, active if depth else None, root=depth == 0))
            edge = flat * actions + action
            child = tree.children.view(-1).index_select(0, edge).long()
            open_node = active & ~tree.terminal.view(-1).index_select(0, flat)
            go = open_node & (child >= 0)
            expand_here = open_node & (child < 0)
            expand_action = torch.where(expand_here, action, expand_action)
            edges.append(edge)
            path.append(torch.where(go, child, torch.where(expand_here, new_node, _PAST_END)))
            if not bool(go.any()):
                break
            node = torch.where(go, child, node)
            active = go
            depth += 1
        # -- expand and evaluate -------------------------------------------------------------
        value = _expand_where_needed(tree, game, evaluator, rows, node, expand_action, sim_keys)
        # -- back up -------------------------------------------------------------------------
        _backup(tree, torch.stack(path), torch.stack(edges), value)
    return tree


def _simulate_compiled(tree, game, evaluator, rule, num_simulations, check_full, needs_keys, root_action) -> Tree:
    """The loop of `_simulate` with the descent and the backup compiled (search/kernels.py)."""
    capacity = tree.capacity
    rows = torch.arange(tree.batch_size)
    walker = kernels.Walker(tree, rule)
    for _ in range(num_simulations):
        if check_full and int(tree.next_node.max()) >= capacity:
            raise RuntimeError(f"search tree is full ({capacity} nodes); allocate more capacity")
        sim_keys = step_keys(tree.keys, tree.visits[:, ROOT].long()) if needs_keys else None
        walker.descend(sim_keys if rule.uses_uniform else None, root_action() if callable(root_action) else root_action)
        value = _expand_where_needed(tree, game, evaluator, rows, walker.last, walker.expand_action, sim_keys, walker)
        walker.backup(value)
    return tree


def _expand_where_needed(tree, game, evaluator, rows, node, expand_action, sim_keys, walker=None) -> torch.Tensor:
    """Expand and evaluate the trees whose descent ended at an unexpanded edge (expand_action
    not NO_ACTION); the others stopped at a finished game, whose result is their value. Returns float [B]."""
    value = tree.terminal_value.view(-1).index_select(0, rows * tree.capacity + node)
    expanding = (expand_action >= 0).nonzero().squeeze(1)
    if expanding.numel() == rows.numel():  # the usual case: every tree expands a node
        return _expand(tree, game, evaluator, rows, node, expand_action, sim_keys, value, walker)
    if expanding.numel():
        return _expand(
            tree,
            game,
            evaluator,
            expanding,
            node.index_select(0, expanding),
            expand_action.index_select(0, expanding),
            None if sim_keys is None else sim_keys.index_select(0, expanding),
            value,
            walker,
        )
    return value


def _expand(
    tree: Tree,
    game: Game,
    evaluator: Evaluator,
    rows: torch.Tensor,
    parent: torch.Tensor,
    action: torch.Tensor,
    keys: torch.Tensor | None,
    value: torch.Tensor,
    walker: "kernels.Walker | None" = None,
) -> torch.Tensor:
    """Create one child in each tree of `rows` (long [n]) and evaluate it; returns the values [B].

    parent, action, keys: long [n], for those trees (keys None for evaluators without randomness).
    With a walker (the compiled loop), its `record` writes the new nodes' fields in one call.
    """
    capacity, actions = tree.capacity, tree.num_actions
    parent_flat = rows * capacity + parent
    new = tree.next_node.index_select(0, rows)
    new_flat = rows * capacity + new
    parent_states = tree.states.take(parent_flat)
    states = game.step(parent_states, action, trusted=True)  # legal by construction
    legal = game.legal_mask(states)
    result = game.result(states)

    def put(array, values):
        array.view(-1, *array.shape[2:]).index_copy_(0, new_flat, values)

    tree.states.put_(new_flat, states)
    if walker is not None:
        walker.record(rows, parent, action, new, parent_states, states, legal, result)
    else:
        signs = player_signs(states.device, torch.float32)
        mover = signs.index_select(0, parent_states.to_play)
        put(tree.mover_sign, mover)
        if tree.prior is not None:  # only PUCT's first-play urgency reads q_sign
            put(tree.q_sign, mover * signs.index_select(0, states.to_play))
        put(tree.parent, parent)
        put(tree.action, action)
        put(tree.legal, legal)
        put(tree.terminal, states.done)
        put(tree.terminal_value, result)
        tree.children.view(-1).index_copy_(0, parent_flat * actions + action, new.to(tree.children.dtype))
        tree.next_node.index_copy_(0, rows, new + 1)

    prior, leaf_value = evaluator(states, keys, legal)
    leaf_value = torch.where(states.done, result, leaf_value)
    if tree.prior is not None:
        if prior is None:
            prior = legal.float() / legal.sum(dim=1, keepdim=True).clamp(min=1)
        put(tree.prior, prior)
        put(tree.raw_value, leaf_value * tree.mover_sign.view(-1).index_select(0, new_flat))
    return value.index_copy(0, rows, leaf_value)


def _backup(tree: Tree, path: torch.Tensor, edges: torch.Tensor, value: torch.Tensor) -> None:
    """Add `value` (first player's view, float [B]) to every node and edge on each path.

    path: long [D + 1, B], node indices from the root down, _PAST_END past a path's end;
    edges: long [D, B], flat indices (into [B, N, A]) of the edges from path[d] to
    path[d + 1] (some valid edge of the tree where path[d + 1] is _PAST_END). No boolean
    indexing: entries past a path's end add zero (to the root, or to that edge).
    """
    batch, capacity = tree.batch_size, tree.capacity
    weight = (path >= 0).float()
    flat = path.clamp(min=0) + torch.arange(0, batch * capacity, capacity, device=path.device)
    flat = flat.view(-1)
    signed = (value * weight).view(-1) * tree.mover_sign.view(-1).index_select(0, flat)
    tree.visits.view(-1).index_add_(0, flat, weight.view(-1))
    tree.value_sum.view(-1).index_add_(0, flat, signed)
    # the edge into each node but the root has the same visits and values (the chooser's
    # view at the parent is the mover's view at the child)
    edges = edges.view(-1)
    tree.child_visits.view(-1).index_add_(0, edges, weight[1:].reshape(-1))
    tree.child_value_sum.view(-1).index_add_(0, edges, signed[batch:])
