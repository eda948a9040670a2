"""One simulation step advances all B trees together: select, expand, evaluate, back up.

    tree = new_tree(game, roots, capacity=S + 1, keys=keys)
    simulate(tree, game, evaluator, rule, S)               # one leaf per tree and step
    simulate(tree, game, evaluator, rule, S, parallel=32)  # up to 32 leaves per tree and step

Selection walks all B trees down in lock-step, one level per iteration, with the
rule (UCB1, PUCT, Gumbel) choosing at each node; a tree stops at an action whose child
does not exist yet (the new node, a leaf: one `game.step` for all of them, or the game's
compiled expansion, Game.expand_rows) or at a
finished game (its result is the value, backed up at once). All new leaves are
evaluated in one call, and the values are added along every path. Randomness comes
from per-tree keys folded with the simulation and depth, so each tree's search is the
same alone or in any batch (with a network evaluator in float32: in its default "auto"
precision it computes batches of 16 or more in int8 or bfloat16, see azero.network).
A caller may impose each root's action (`root_action`: Gumbel's sequential halving,
search/gumbel.py), one for every walk of a step or one per walk.

Leaf parallelism: with `parallel=K` a step walks each tree up to K times before
evaluating, and the K leaves of all B trees go to the evaluator in one call (one
network forward pass, one batched rollout). Each walk leaves pending visits on its
path (the tree's `pending` field), which the rule counts (selection.py: as virtual
losses, or as visits only), so the next walk of the step goes elsewhere. A walk that
reaches a leaf an earlier walk of the step found (a collision) adds nothing but its
pending visits, which keep later walks away; after K collisions a tree stops
gathering for this step. Each tree gets exactly the simulations asked for; K = 1 is
the sequential search, simulation for simulation. UCB1 and PUCT take K > 1; Gumbel,
whose selection has no pending visits, takes K > 1 only with imposed root actions, one per
walk (sequential halving gives each walk of a step a different root move, and walks below
different root moves cannot meet).

Proven results (search/proofs.py, MCTS-Solver): a walk that reaches a node proven won, lost
or drawn stops there as at a finished game and backs up the proven value, and the rules never
choose a child proven lost; with `solver` (simulate's), the new leaves that are finished games
are proven and their ancestors settled.

On a CPU, with UCB1, PUCT or Gumbel, the walks and the backup run as compiled loops over
the trees (search/kernels.py) with the same rules as the torch form below (children whose
scores tie to within float32 rounding may be ordered differently: the compiled loops' logarithms
and exponentials are not torch's, and Gumbel's policy below the root is computed there as
prior * exp(sigma), normalised, not as a softmax of logarithms).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Protocol

import torch

from games import NO_ACTION, Game, State
from games.base import player_signs
from games.keyed_random import step_keys, uniform_draw

from . import kernels, threat_proofs
from .kernels import Leaves
from .proofs import DRAWN, LOST, UNKNOWN, carry_edge_proofs, record_finished
from .selection import NodeView
from .tree import ROOT, Tree

_PAST_END = -1  # path entries below a path's last node


class Evaluator(Protocol):
    """Evaluates leaves: (states [n], keys long [n]) -> (prior float [n, A] or None, value float [n]).

    The value is from the first player's view (like a game result). The prior, when
    given, is a probability vector over actions (illegal ones 0). An evaluator whose
    `uses_keys` attribute is False gets keys None (the search then skips making them).
    The search passes `legal`, the states' legal mask, which it has already computed.
    An evaluator without keys may also have `evaluate_encoded(planes, legal, to_play)`,
    the same for positions already encoded (`game.encode`), whose legal mask and player
    to move are given: where the game has a compiled expansion (Game.expand_rows, which
    encodes the new nodes in its pass) the search calls that instead (the network's does;
    with `reads_planes = False` the planes are None, and not made). An evaluator with a
    `fixed_weights()` context manager (the network's) is called inside it for each `simulate`.
    """

    def __call__(
        self, states: State, keys: torch.Tensor | None, legal: torch.Tensor | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor]: ...


# the root actions a caller imposes on simulate (see simulate): long [B] or [B, W], or a function
# of the step's budget (long [B]) giving them before each step
RootAction = torch.Tensor | Callable[[torch.Tensor], torch.Tensor]


class Rule(Protocol):
    uses_prior: bool  # the tree keeps priors for it
    uses_uniform: bool  # it wants one uniform random number per tree and level

    def select(self, view: NodeView) -> torch.Tensor: ...


def _rows(array: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
    """Entries `flat` (b * N + n) of a [B, N, ...] array: [len(flat), ...]."""
    return array.view(-1, *array.shape[2:]).index_select(0, flat)


def _node_view(tree: Tree, flat: torch.Tensor, uniform_draw: torch.Tensor, active: torch.Tensor | None = None,
               with_pending: bool = False, root: bool = False) -> NodeView:
    """The NodeView of node `flat` (index b * N + n) of each tree; the pending visits too if
    asked (`root`: the nodes are the roots)."""
    visits = _rows(tree.visits, flat)
    raw_value = None
    if tree.prior is not None:  # PUCT's first-play urgency and Gumbel's mixed value need the node's own values
        q_sign = _rows(tree.q_sign, flat)
        q = _rows(tree.value_sum, flat) / visits.clamp(min=1) * q_sign
        raw_value = _rows(tree.raw_value, flat) * q_sign
    else:
        q = torch.zeros_like(visits)
    pending = child_pending = None
    if with_pending:
        pending = _rows(tree.pending, flat)
        children = _rows(tree.children, flat).long()
        tree_base = flat.div(tree.capacity, rounding_mode="floor").mul_(tree.capacity).unsqueeze(1)
        child_pending = tree.pending.view(-1).take(children.clamp(min=0) + tree_base)
        child_pending = child_pending.masked_fill_(children < 0, 0.0)
    return NodeView(
        visits=visits,
        q=q,
        child_visits=_rows(tree.child_visits, flat),
        child_value_sum=_rows(tree.child_value_sum, flat),
        prior=None if tree.prior is None else _rows(tree.prior, flat),
        legal=_rows(tree.legal, flat),
        uniform=uniform_draw,
        active=active,
        pending=pending,
        child_pending=child_pending,
        raw_value=raw_value,
        root=root,
        lost=_rows(tree.child_proof, flat) == LOST,
    )


def simulate(
    tree: Tree,
    game: Game,
    evaluator: Evaluator,
    rule: Rule,
    num_simulations: int,
    *,
    parallel: int = 1,
    root_action: RootAction | None = None,
    solver: bool = False,
    threat_nodes: int = 0,
) -> Tree:
    """Run `num_simulations` simulations in each of the B trees (in place), gathering up to
    `parallel` leaves per tree for each evaluator call; returns the tree.

    solver: prove the finished games the walks reach and settle their ancestors (MCTS-Solver,
    search/proofs.py; the search setting `solver`). Proofs already in the tree are honoured
    either way: walks stop at proven nodes, the rules skip children proven lost.
    threat_nodes: first prove what the threat search finds at the roots not checked yet (k-in-a-row
    games; a bound of that many nodes a search; 0 = off; search/threat_proofs.py, the search
    settings `threats` and `threat_nodes`): a win by fours for the side to move, the moves that
    lose to the opponent's.

    root_action: the actions the walks take at each root instead of the rule's choice (NO_ACTION:
    the rule's): long [B], the first action of every walk of tree b; or long [B, W] (W <=
    parallel), one per walk: tree b walks once for each action of its row (>= 0, at the
    row's start; every tree with simulations left needs one), at most the simulations it
    has left, walk j of the step taking column j (a walk that collides counts; distinct
    moves cannot collide at the root). Or a function called before each step
    with the step's budget (long [B], the walks each tree may make: its simulations left, at
    most `parallel`) that returns them (Gumbel's sequential halving chooses there,
    search/gumbel.py).
    """
    if parallel < 1:
        raise ValueError(f"parallel must be at least 1, not {parallel}")
    if parallel > 1 and root_action is None and not hasattr(rule, "virtual_loss"):
        raise ValueError(f"{type(rule).__name__} selection walks one leaf at a time; use parallel=1 "
                         "(or impose each walk's root action)")
    # Inference mode spares the many small tensor operations autograd's bookkeeping. The
    # tree's arrays stay normal tensors (only written in place here), and nothing made here
    # outlives the call (caches that do are built with inference mode off). Nothing writes an
    # evaluator's weights during the call: a network looks its inference module up once.
    fixed = getattr(evaluator, "fixed_weights", contextlib.nullcontext)
    with torch.inference_mode(), fixed():
        if threat_nodes > 0:
            threat_proofs.check_roots(tree, game, threat_nodes)
        return _simulate(tree, game, evaluator, rule, num_simulations, parallel, root_action, solver)


def _budgets(tree: Tree, num_simulations: int, parallel: int):
    """The walks each tree makes in each step (long [B] per step) until every tree has done
    `num_simulations` more: one step per simulation when parallel is 1 (no walk is lost then)."""
    batch = tree.batch_size
    if parallel == 1:
        ones = torch.ones(batch, dtype=torch.long)
        for _ in range(num_simulations):
            yield ones
        return
    target = tree.visits[:, ROOT] + float(num_simulations)
    while True:
        remaining = (target - tree.visits[:, ROOT]).long()
        if int(remaining.max()) <= 0:
            return
        yield remaining.clamp_(min=0, max=parallel)


def _simulate(tree, game, evaluator, rule, num_simulations, parallel, root_action=None, solver=False) -> Tree:
    needs_keys = getattr(evaluator, "uses_keys", True)
    walker = kernels.Walker(tree, rule, parallel, solver) if kernels.supports(rule, tree) else None
    for budget in _budgets(tree, num_simulations, parallel):
        first = root_action(budget) if callable(root_action) else root_action
        if first is not None and first.dim() == 2:  # one walk per action
            if first.shape[1] > parallel:
                raise ValueError(f"{first.shape[1]} root actions a step for parallel={parallel}")
            given = (first >= 0).sum(dim=1).to(budget.device)
            if bool(((given == 0) & (budget > 0)).any()):
                raise ValueError("the imposed root actions give no walk to a tree with simulations left")
            budget = torch.minimum(budget, given)
        elif parallel > 1 and not hasattr(rule, "virtual_loss"):
            raise ValueError(f"{type(rule).__name__} selection walks several leaves a step only with one "
                             "imposed root action per walk ([B, W])")
        if walker is not None:  # its _expand backs the step up
            leaves = walker.gather(budget, first)
            _expand(tree, game, evaluator, leaves, leaves.keys if needs_keys else None, walker)
        else:
            leaves, rounds = _gather(tree, rule, budget.to(tree.visits.device), parallel > 1, needs_keys, first)
            value = _expand(tree, game, evaluator, leaves, leaves.keys if needs_keys else None,
                            solver=solver)
            _backup_rounds(tree, rounds, value)
    return tree


# -- the torch form of a step's walks ------------------------------------------------------------


def _gather(tree: Tree, rule: Rule, budget: torch.Tensor, track_pending: bool, leaf_keys: bool,
            root_action: torch.Tensor | None = None) -> tuple[Leaves, list]:
    """The torch form of kernels.Walker.gather: walk every tree up to budget[b] times, the
    walks of all trees in lock-step, one walk per tree at a time (a round); root_action
    (long [B] for every walk, or [B, W] for walk j of tree b in column j; NO_ACTION: the
    rule's choice): each walk's first action instead of the rule's.

    Returns the leaves (in the order of the rounds, then the trees; keys only if
    `leaf_keys`, else anything) and the rounds, for the
    backup: (path, edges, the trees that found a leaf bool [B], the trees whose walk left
    pending visits bool [B] or None without pending visits) each.
    """
    batch, capacity, actions = tree.batch_size, tree.capacity, tree.num_actions
    device = tree.visits.device
    base = torch.arange(batch, device=device) * capacity
    start = tree.visits[:, ROOT].long()
    found = torch.zeros(batch, dtype=torch.long, device=device)
    collided = torch.zeros_like(found)
    parts: list[list[torch.Tensor]] = [[] for _ in Leaves._fields]
    rounds = []
    # at most budget[b] walks that find a leaf or a finished game and budget[b] collisions
    for walk in range(2 * int(budget.max()) if track_pending else 1):
        active = (found < budget) & (collided < budget)
        if walk and not bool(active.any()):
            break
        keys = step_keys(tree.keys, start + walk) if rule.uses_uniform or leaf_keys else None
        first = root_action
        if root_action is not None and root_action.dim() == 2:  # this walk's column of each tree
            column = found + collided
            width = root_action.shape[1]
            first = root_action.gather(1, column.clamp(max=width - 1).unsqueeze(1)).squeeze(1)
            first = torch.where(column < width, first, NO_ACTION)
        path, edges, last, expand_action, collide = _walk(
            tree, rule, base, active, keys if rule.uses_uniform else None, track_pending, first)
        expanding = expand_action >= 0
        ends = active & ~expanding & ~collide
        if bool(ends.any()):  # finished games and proven nodes: back up their values now
            at = base + last
            value = torch.where(tree.terminal.view(-1).index_select(0, at), tree.terminal_value.view(-1).index_select(0, at),
                                (tree.proof.view(-1).index_select(0, at).float() - DRAWN)
                                * tree.mover_sign.view(-1).index_select(0, at))
            _backup(tree, path, edges, value, ends)
        leaf_rows = expanding.nonzero().squeeze(1)
        if leaf_rows.numel():
            new = tree.next_node.index_select(0, leaf_rows)
            if int(new.max()) >= capacity:
                raise RuntimeError(f"search tree is full ({capacity} nodes); allocate more capacity")
            parent = last.index_select(0, leaf_rows)
            action = expand_action.index_select(0, leaf_rows)
            flat = base.index_select(0, leaf_rows) + new
            tree.children.view(-1).index_copy_(
                0, (base.index_select(0, leaf_rows) + parent) * actions + action, new.to(tree.children.dtype))
            tree.parent.view(-1).index_copy_(0, flat, parent)
            tree.action.view(-1).index_copy_(0, flat, action)
            tree.next_node.index_copy_(0, leaf_rows, new + 1)
            leaf_keys_now = keys.index_select(0, leaf_rows) if keys is not None else leaf_rows
            parent_flat = base.index_select(0, leaf_rows) + parent
            for part, values in zip(parts, (leaf_rows, new, parent, action, leaf_keys_now, flat, parent_flat)):
                part.append(values)
        walked = expanding | collide if track_pending else None
        if walked is not None:
            _add_pending(tree, path, walked, 1.0)
        rounds.append((path, edges, expanding, walked))
        found += (expanding | ends).long()
        collided += collide.long()
    empty = torch.zeros(0, dtype=torch.long, device=device)
    return Leaves(*(torch.cat(part) if part else empty for part in parts)), rounds


def _walk(tree: Tree, rule: Rule, base: torch.Tensor, active: torch.Tensor, keys: torch.Tensor | None,
          with_pending: bool, root_action: torch.Tensor | None = None):
    """One walk down each active tree (bool [B]), all trees a level at a time.

    Returns path long [D + 1, B] (the nodes from the root down, the new node of a tree that
    expands at its depth, the leaf it collided with for a tree that collides, _PAST_END past
    the end), edges long [D, B] (flat indices into [B, N, A] of the edges between), the last
    node each walk stood on (the new node's parent, the collided leaf's parent, a finished
    game), the action to expand (NO_ACTION where none) and whether the walk collided.
    """
    batch, actions = tree.batch_size, tree.num_actions
    everywhere = bool(active.all())
    node = torch.full((batch,), ROOT, dtype=torch.long, device=base.device)
    path, edges = [node], []
    expand_action = torch.full((batch,), NO_ACTION, dtype=torch.long, device=base.device)
    collide = torch.zeros(batch, dtype=torch.bool, device=base.device)
    new_node = tree.next_node.clone()
    walking, depth = active, 0
    while True:
        flat = base + node
        draw = uniform_draw(keys, depth) if keys is not None else None  # UCB1's untried moves
        if depth == 0 and root_action is not None and bool((root_action >= 0).all()):
            action = root_action
        else:
            view = _node_view(tree, flat, draw, None if depth == 0 and everywhere else walking, with_pending,
                              root=depth == 0)
            action = rule.select(view)
            if depth == 0 and root_action is not None:  # imposed where given
                action = torch.where(root_action >= 0, root_action, action)
        edge = flat * actions + action
        child = tree.children.view(-1).index_select(0, edge).long()
        open_node = walking & ~tree.terminal.view(-1).index_select(0, flat) & (
            tree.proof.view(-1).index_select(0, flat) == UNKNOWN)  # (a proven node ends the walk as a finished game)
        exists = child >= 0
        if with_pending:  # a child without visits is a leaf an earlier walk of this step found
            unvisited = tree.visits.view(-1).index_select(0, base + child.clamp(min=0)) == 0
            hit = open_node & exists & unvisited
            collide |= hit
            go = open_node & exists & ~unvisited
        else:
            hit, go = None, open_node & exists
        expand_here = open_node & ~exists
        expand_action = torch.where(expand_here, action, expand_action)
        edges.append(edge)
        stop = torch.where(expand_here, new_node, _PAST_END)
        path.append(torch.where(go if hit is None else go | hit, child, stop))
        if not bool(go.any()):
            break
        node = torch.where(go, child, node)
        walking = go
        depth += 1
    return torch.stack(path), torch.stack(edges), node, expand_action, collide


def _add_pending(tree: Tree, path: torch.Tensor, trees: torch.Tensor, delta: float) -> None:
    """`delta` pending visits on every node of the paths of `trees` (bool [B])."""
    batch, capacity = tree.batch_size, tree.capacity
    weight = ((path >= 0) & trees).float().mul_(delta)
    flat = path.clamp(min=0) + torch.arange(0, batch * capacity, capacity, device=path.device)
    tree.pending.view(-1).index_add_(0, flat.view(-1), weight.view(-1))


def _backup_rounds(tree: Tree, rounds: list, value: torch.Tensor) -> None:
    """Back up the values of the leaves (float [n], in the order `_gather` found them), round
    by round, and take back the pending visits the walks left."""
    start = 0
    for path, edges, expanding, walked in rounds:
        count = int(expanding.sum())
        if count:
            per_tree = torch.zeros(tree.batch_size, device=value.device)
            per_tree.index_copy_(0, expanding.nonzero().squeeze(1), value[start:start + count])
            _backup(tree, path, edges, per_tree, expanding)
            start += count
        if walked is not None:
            _add_pending(tree, path, walked, -1.0)


# -- expansion and backup ------------------------------------------------------------------------


def _expand(tree: Tree, game: Game, evaluator: Evaluator, leaves: Leaves, keys: torch.Tensor | None,
            walker: "kernels.Walker | None" = None, solver: bool = False) -> torch.Tensor | None:
    """Compute the leaves' positions (one `game.step`, or the game's compiled expansion),
    write their fields and evaluate them.

    leaves: the new nodes, whose parent links the walks wrote; keys: long [n] for the
    evaluator (None for evaluators without randomness). A game's compiled expansion
    (Game.expand_rows) does the step, the positions' writes, the legal moves, the results
    and the encoding in one call, for evaluators that take encoded positions
    (`evaluate_encoded`: the network's; the encoding is skipped for one with `reads_planes`
    False, the bench's trivial evaluator). Returns the values float [n], first player's
    view; with a walker (the compiled loops) nothing: its `finish` writes the fields and backs
    up the whole step in one call after the evaluation. solver: prove the leaves that are
    finished games and settle their ancestors (search/proofs.py; the walker has its own).
    """
    if leaves.rows.numel() == 0:
        if walker is not None:
            walker.finish_without_leaves()
        return torch.zeros(0, device=tree.visits.device)
    new_flat, parent_flat, action = leaves.flat, leaves.parent_flat, leaves.actions
    expansion = None
    if keys is None and hasattr(evaluator, "evaluate_encoded"):
        expansion = game.expand_rows(tree.states, parent_flat, new_flat, action,
                                     encode=getattr(evaluator, "reads_planes", True))
    if expansion is not None:
        legal, result, to_play, parent_to_play, done = (
            expansion.legal, expansion.result, expansion.to_play, expansion.parent_to_play, expansion.done)
        prior, leaf_value = evaluator.evaluate_encoded(expansion.planes, legal, to_play)
    else:
        parent_states = tree.states.take(parent_flat) if walker is None else walker.take_states(parent_flat)
        states = game.step(parent_states, action, trusted=True)  # legal by construction
        legal = game.legal_mask(states)
        result = game.result(states)
        if walker is None:
            tree.states.put_(new_flat, states)
        else:
            walker.put_states(new_flat, states)
        to_play, parent_to_play, done = states.to_play, parent_states.to_play, states.done
        prior, leaf_value = evaluator(states, keys, legal)
    if walker is not None:
        walker.finish(leaves, parent_to_play, to_play, done, legal, result, prior, leaf_value,
                      None if expansion is None else expansion.arrays)
        return None

    def put(array, values):
        array.view(-1, *array.shape[2:]).index_copy_(0, new_flat, values)

    signs = player_signs(to_play.device, torch.float32)
    mover = signs.index_select(0, parent_to_play)
    put(tree.mover_sign, mover)
    if tree.prior is not None:  # only PUCT's first-play urgency reads q_sign
        put(tree.q_sign, mover * signs.index_select(0, to_play))
    put(tree.legal, legal)
    put(tree.terminal, done)
    put(tree.terminal_value, result)
    carry_edge_proofs(tree, new_flat)
    if solver and bool(done.any()):
        record_finished(tree, new_flat[done])
    leaf_value = torch.where(done, result, leaf_value)
    if tree.prior is not None:
        if prior is None:
            prior = legal.float() / legal.sum(dim=1, keepdim=True).clamp(min=1)
        put(tree.prior, prior)
        put(tree.raw_value, leaf_value * mover)
    return leaf_value


def _backup(tree: Tree, path: torch.Tensor, edges: torch.Tensor, value: torch.Tensor, trees: torch.Tensor) -> None:
    """Add one visit of `value` (first player's view, float [B]) to every node and edge on the
    paths of `trees` (bool [B]).

    path: long [D + 1, B], node indices from the root down, _PAST_END past a path's end;
    edges: long [D, B], flat indices (into [B, N, A]) of the edges from path[d] to
    path[d + 1] (some valid edge of the tree where path[d + 1] is _PAST_END). No boolean
    indexing: entries past a path's end, and the paths of other trees, add zero (to the
    root, or to that edge).
    """
    batch, capacity = tree.batch_size, tree.capacity
    weight = ((path >= 0) & trees).float()
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
