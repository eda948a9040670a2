"""Compiled CPU loops (numba) for the parts of a simulation that walk each tree: the
descent through the tree (selection), the new nodes' bookkeeping and the backup of the
leaf value along the path (the subtree kept between moves: search/subtree_kernels.py).

The engine's torch form does each level of every tree's descent as a dozen operations
over [B, A] arrays, with a Python round trip per level; on a CPU that overhead, not the
arithmetic, is the cost. Here one call walks every tree from its root to the node it
expands, with the same rule as azero.search.selection (UCB1, PUCT or Gumbel, same formulas,
same random draws, first maximum on ties: search/rule_kernels.py), and one call adds the
values along the paths;
another makes Gumbel's root choices (search/gumbel.py's sequential halving). The
torch form stays the reference and serves other devices and other rules; the tests check
that both make the same searches on test positions. The float32 logarithm here (numba's)
and torch's vectorised one differ in the last bit for some visit counts, so two children
whose scores tie to within that may be ordered differently by the two forms; each form is
deterministic and batch-independent on its own.

The loops take the tree as one record, `Tree.Arrays` (`tree_arrays`: a numpy view of each
field of search.tree.FIELDS, by name), and the rule as the record of its constants
(rule_kernels.rule_params). Each loop reads the fields it uses into local names once, at its
top: a record's field read inside a loop is fetched again at every pass, which cost the walks
10-25% of their speed before the fields were read once. They take the tree's conventions as
plain numbers: node 0 is the root and a negative node index is no node (search.tree's ROOT,
NO_PARENT, UNEXPANDED; this module sits below search.tree and does not import it).
See games.kernels for the why, AZERO_NO_KERNELS, and a note on numba's disk cache.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import torch

from games import NO_ACTION
from games import kernels as _games_kernels
from games.base import Expansion
from games.kernels import Entries, hash_one, njit

from .proofs import DRAWN, LOST, UNKNOWN, WON
from .rule_kernels import _PARAMS, _first_max, _gumbel_sigma, _legal_score, rule_params, select_child

TERMINAL, NEW_LEAF, COLLISION = 0, 1, 2  # how a walk down a tree ends
_INF = np.float32(np.inf)
_TINY = np.float32(np.finfo(np.float32).tiny)
_FAR = np.int64(1 << 30)  # more plies than any game lasts (proofs.node_proofs)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _step_key(key, counter):  # pragma: no cover - compiled; games.keyed_random.step_keys, one value
    return hash_one(key * 0x9E3779B1 + counter)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _add_pending(base, node, delta, tree):  # pragma: no cover - compiled
    """`delta` descents in flight through `node` and its ancestors."""
    pending, parent = tree.pending, tree.parent
    while node >= 0:
        pending[base + node] += delta
        node = parent[base + node]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _add_value(base, node, value, pending_delta, tree):  # pragma: no cover - compiled; engine._backup for one path
    """One visit of `value` (first player's view) to `node` and its ancestors, and to the edges between."""
    visits, value_sum, pending, parent, mover_sign = tree.visits, tree.value_sum, tree.pending, tree.parent, tree.mover_sign
    child_visits, child_value_sum, moved = tree.child_visits, tree.child_value_sum, tree.action
    while node >= 0:
        flat = base + node
        signed = value * mover_sign[flat]
        visits[flat] += np.float32(1.0)
        value_sum[flat] += signed
        pending[flat] += pending_delta
        up = parent[flat]
        if up >= 0:  # the edge into the node: the chooser's view at the parent is the mover's here
            child_visits[base + up, moved[flat]] += np.float32(1.0)
            child_value_sum[base + up, moved[flat]] += signed
        node = up


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _settle(base, node, tree):  # pragma: no cover - compiled; proofs.settle for one newly proven node
    """The ancestors of `node` (just proven) proven where their children now prove them
    (proofs.node_proofs), up the path until one's proof stays as it was."""
    proof, proof_plies, parent, moved, children = tree.proof, tree.proof_plies, tree.parent, tree.action, tree.children
    child_proof, child_plies, legal, mover_sign = tree.child_proof, tree.child_plies, tree.legal, tree.mover_sign
    actions = children.shape[1]
    up = parent[base + node]
    while up >= 0:
        flat = base + up
        any_legal, settled, won, drawn = False, True, False, False
        win, draw, loss = _FAR, _FAR, np.int64(-1)
        chooser = -mover_sign[flat]  # (at an edge not expanded: the threat search's, at a root)
        expanded = False
        for a in range(actions):
            if legal[flat, a] == 0:
                continue
            any_legal = True
            known = child_proof[flat, a]
            if known == UNKNOWN:
                settled = False
                continue
            plies = np.int64(child_plies[flat, a])
            if children[flat, a] >= 0 and not expanded:
                chooser = mover_sign[base + children[flat, a]]
                expanded = True
            if known == WON:
                won = True
                win = min(win, plies)
            elif known == DRAWN:
                drawn = True
                draw = min(draw, plies)
            else:
                loss = max(loss, plies)
        if won:
            result, count = WON, win + 1
        elif settled and any_legal:
            result, count = (DRAWN, draw + 1) if drawn else (LOST, loss + 1)
        else:
            break
        if chooser != mover_sign[flat]:
            result = 4 - result
        if proof[flat] == result and np.int64(proof_plies[flat]) == count:
            break
        proof[flat] = result
        proof_plies[flat] = count
        grand = parent[flat]
        if grand >= 0:
            child_proof[base + grand, moved[flat]] = result
            child_plies[base + grand, moved[flat]] = count
        up = grand


@njit(cache=True, nogil=True, error_model="numpy")
def _gather(rule, tree, keys, next_node, budget, root_action, capacity, leaves, collisions,
            counts):  # pragma: no cover - compiled; the walks of one step of engine._simulate
    children, visits, terminal, terminal_value = tree.children, tree.visits, tree.terminal, tree.terminal_value
    parent, moved, proof, mover_sign = tree.parent, tree.action, tree.proof, tree.mover_sign
    leaf_rows, leaf_nodes, leaf_parents, leaf_actions = leaves.rows, leaves.nodes, leaves.parents, leaves.actions
    collision_rows, collision_nodes = collisions.rows, collisions.nodes
    leaf_keys, leaf_flat, leaf_parent_flat = leaves.keys, leaves.flat, leaves.parent_flat
    batch = next_node.shape[0]
    actions = children.shape[1]
    scores = np.empty(actions, dtype=np.float32)
    flight = np.empty(actions, dtype=np.float32)
    found_leaves = 0
    collided_walks = 0
    full = 0
    for b in range(batch):
        base = b * capacity
        counter = np.int64(visits[base])  # the root's visits number the simulations: their random keys
        found = 0
        collided = 0
        while found < budget[b] and collided < budget[b]:
            walk = found + collided  # (at most 2 * budget - 2 < the buffer's 2 * parallel columns)
            key = _step_key(keys[b], counter)
            counter += 1
            node = 0  # the root
            depth = 0
            end = TERMINAL
            action = 0
            while True:
                flat = base + node
                if terminal[flat] or proof[flat] != UNKNOWN:  # a finished game or a proven node: its value is known
                    break
                if depth == 0 and root_action[b, walk] >= 0:  # chosen by the caller (Gumbel's sequential halving)
                    action = root_action[b, walk]
                else:
                    action = select_child(rule, tree, flat, base, key, depth, flight, scores)
                child = children[flat, action]
                if child < 0:  # an edge not expanded yet: a new leaf
                    end = NEW_LEAF
                    break
                if visits[base + child] == 0:  # a leaf another descent of this step found
                    end = COLLISION
                    node = child
                    break
                node = child
                depth += 1
            if end == TERMINAL:
                flat = base + node
                value = (terminal_value[flat] if terminal[flat]
                         else np.float32(proof[flat] - DRAWN) * mover_sign[flat])  # (a proven value: first player's view)
                _add_value(base, node, value, np.float32(0.0), tree)
                found += 1
            elif end == NEW_LEAF:
                new = next_node[b]
                if new >= capacity:
                    full = 1
                    break
                children[base + node, action] = new
                parent[base + new] = node
                moved[base + new] = action
                next_node[b] = new + 1
                _add_pending(base, new, np.float32(1.0), tree)
                leaf_rows[found_leaves] = b
                leaf_nodes[found_leaves] = new
                leaf_parents[found_leaves] = node
                leaf_actions[found_leaves] = action
                leaf_keys[found_leaves] = key
                leaf_flat[found_leaves] = base + new
                leaf_parent_flat[found_leaves] = base + node
                found_leaves += 1
                found += 1
            else:
                _add_pending(base, node, np.float32(1.0), tree)
                collision_rows[collided_walks] = b
                collision_nodes[collided_walks] = node
                collided_walks += 1
                collided += 1
    counts[0] = found_leaves
    counts[1] = collided_walks
    counts[2] = full


@njit(cache=True, nogil=True, error_model="numpy")
def _record(rows, new, capacity, expansion, value, prior, has_prior, with_prior, solver,
            tree):  # pragma: no cover - compiled; engine._expand's bookkeeping for the new leaves, after their evaluation
    mover_sign, legal_of, terminal, terminal_value = tree.mover_sign, tree.legal, tree.terminal, tree.terminal_value
    q_sign, prior_of, raw_value = tree.q_sign, tree.prior, tree.raw_value
    proof, proof_plies, child_proof, parent, moved = tree.proof, tree.proof_plies, tree.child_proof, tree.parent, tree.action
    child_plies = tree.child_plies
    legal, done, result, to_play, parent_to_play = (expansion.legal, expansion.done, expansion.result, expansion.to_play,
                                                  expansion.parent_to_play)
    actions = legal.shape[1]
    for i in range(rows.shape[0]):
        flat = rows[i] * capacity + new[i]
        mover = np.float32(1 - 2 * parent_to_play[i])
        mover_sign[flat] = mover
        count = 0
        for a in range(actions):
            legal_of[flat, a] = legal[i, a]
            count += legal[i, a] != 0
        terminal[flat] = done[i]
        terminal_value[flat] = result[i]
        edge = child_proof[rows[i] * capacity + parent[flat], moved[flat]]
        if edge != UNKNOWN:  # an edge proven before its child was expanded (proofs.carry_edge_proofs)
            proof[flat] = edge
            proof_plies[flat] = child_plies[rows[i] * capacity + parent[flat], moved[flat]]
        if done[i]:  # a finished game's value is its result
            value[i] = result[i]
            if solver:  # proven (proofs.terminal_proofs), and its ancestors settled
                signed = result[i] * mover
                proven = WON if signed > 0 else LOST if signed < 0 else DRAWN
                proof[flat] = proven
                proof_plies[flat] = 0
                base = rows[i] * capacity
                child_proof[base + parent[flat], moved[flat]] = proven
                child_plies[base + parent[flat], moved[flat]] = 0
                _settle(base, new[i], tree)
        if with_prior:  # PUCT's and Gumbel's fields
            q_sign[flat] = mover * np.float32(1 - 2 * to_play[i])
            if has_prior:
                for a in range(actions):
                    prior_of[flat, a] = prior[i, a]
            else:  # uniform over the legal moves
                share = np.float32(1.0) / np.float32(max(count, 1))
                for a in range(actions):
                    prior_of[flat, a] = share if legal[i, a] != 0 else np.float32(0.0)
            raw_value[flat] = value[i] * mover


@njit(cache=True, nogil=True, error_model="numpy")
def _backup(leaf_rows, leaf_nodes, values, leaves, collisions, collision_count, capacity,
            tree):  # pragma: no cover - compiled
    for i in range(leaves):
        _add_value(leaf_rows[i] * capacity, leaf_nodes[i], values[i], np.float32(-1.0), tree)
    for i in range(collision_count):
        _add_pending(collisions.rows[i] * capacity, collisions.nodes[i], np.float32(-1.0), tree)


@njit(cache=True, nogil=True, error_model="numpy")
def _finish(rows, new, capacity, expansion, value, prior, has_prior, with_prior, solver, collisions, collision_count,
            tree):  # pragma: no cover - compiled; _record, then _backup, in one call
    _record(rows, new, capacity, expansion, value, prior, has_prior, with_prior, solver, tree)
    _backup(rows, new, value, rows.shape[0], collisions, collision_count, capacity, tree)


_GATHER, _FINISH = Entries(_gather), Entries(_finish)


def supports(rule, tree, *tensors: torch.Tensor) -> bool:
    """Whether the compiled loops run this search: the one place that chooses them over the torch
    form. True when numba is there, the tree is on the CPU with float32 statistics, `tensors`
    (the caller's other inputs, e.g. Gumbel's noise) are on the CPU too, and `rule` has a
    compiled walk (`rule_params`) on a tree it can use (PUCT and Gumbel need priors: the torch form
    reports the misuse); rule None asks for the tree's loops alone (search.tree.subtree)."""
    if not (_games_kernels.AVAILABLE and tree.visits.device.type == "cpu" and tree.visits.dtype == torch.float32
            and tree.child_visits.dtype == torch.float32 and all(t.device.type == "cpu" for t in tensors)):
        return False
    if rule is None:
        return True
    return type(rule) in _PARAMS and (tree.prior is not None or not rule.uses_prior)


def _numpy(array: torch.Tensor) -> np.ndarray:
    """A numpy view of a tree array (bool as uint8): [B * N] per node, [B * N, A] per edge."""
    if array.dtype == torch.bool:
        array = array.view(torch.uint8)
    return array.view(-1, array.shape[2]).numpy() if array.dim() > 2 else array.view(-1).numpy()


def _rows(array: torch.Tensor) -> np.ndarray:
    """A numpy view of a tree array [B, N, ...] as one row per node, [B * N, width] (bool as uint8)."""
    array = array.view(torch.uint8) if array.dtype == torch.bool else array
    return array.view(array.shape[0] * array.shape[1], -1).numpy()


def tree_arrays(tree):
    """The tree as the compiled loops take it: one record (`type(tree).Arrays`, a namedtuple of
    the field table's names) holding a numpy view of each field, [B * N] per node and
    [B * N, A] per edge (bool as uint8); a field the tree does not hold (priors in a UCB1 tree)
    is a one-row placeholder of its type, never read. Made once per tree (the views follow
    in-place writes) and kept on it."""
    made = tree.__dict__.get("_arrays")
    if made is None:
        views = {}
        for field in type(tree).FIELDS:
            array = getattr(tree, field.name)
            if array is None:
                dtype = np.uint8 if field.dtype == torch.bool else torch.empty(0, dtype=field.dtype).numpy().dtype
                views[field.name] = np.zeros((1, tree.num_actions) if field.per_edge else 1, dtype)
            else:
                views[field.name] = _numpy(array)
        made = tree._arrays = type(tree).Arrays(**views)
    return made


class Leaves(NamedTuple):
    """The new nodes one step's walks made (their parent links are in the tree already):
    rows, nodes, parents, actions, keys: long [n], the tree, the node, its parent, the action
    from there and the walk's random key (games.keyed_random.step_keys of the tree's key and the
    simulation's number) of each leaf; flat, parent_flat: the node's and its parent's index
    into the trees' [B * N] rows (b * N + node). The compiled walk fills the same record of
    numpy arrays."""

    rows: torch.Tensor
    nodes: torch.Tensor
    parents: torch.Tensor
    actions: torch.Tensor
    keys: torch.Tensor
    flat: torch.Tensor
    parent_flat: torch.Tensor


class Collisions(NamedTuple):
    """The walks of a step that ended at a leaf of the same step: rows, nodes, long [n] (numpy
    arrays in the compiled walk): the tree and the leaf."""

    rows: torch.Tensor
    nodes: torch.Tensor


class Walker:
    """The compiled steps of one `simulate` call, with their buffers: `gather` walks every
    tree up to `parallel` times; `finish` writes the new leaves' fields and adds their values.
    Leaves and collisions are at most B * parallel per step."""

    def __init__(self, tree, rule, parallel: int = 1, solver: bool = False):
        batch, capacity = tree.batch_size, tree.capacity
        self.tree, self.capacity = tree, capacity
        most = batch * parallel
        self.leaves = Leaves(*(torch.empty(most, dtype=torch.long) for _ in Leaves._fields))
        self.leaves_np = Leaves(*(t.numpy() for t in self.leaves))
        self.collisions_np = Collisions(*(np.empty(most, dtype=np.int64) for _ in Collisions._fields))
        self.counts = np.zeros(3, dtype=np.int64)
        self.values = np.empty(most, dtype=np.float32)  # finish's copy of the leaves' values
        self.last_leaves: tuple[int, Leaves | None] = (-1, None)  # gather's last answer: views of the buffers
        self.no_value = np.zeros(0, np.float32)
        # walk j of a step (collisions counted) of tree b starts with root_action[b, j] (NO_ACTION:
        # the rule chooses); a step makes at most 2 * parallel walks
        self.root_action = torch.full((batch, 2 * parallel), NO_ACTION, dtype=torch.long)
        self.root_action_np = self.root_action.numpy()
        self.imposed = False
        self.params = rule_params(rule)
        self.arrays = tree_arrays(tree)
        self.with_prior = tree.prior is not None
        self.solver = bool(solver)  # prove the finished games the walks reach (search/proofs.py)
        self.no_prior = np.zeros((1, tree.num_actions), np.float32)  # finish's prior when the evaluator gives none
        self.no_planes = np.zeros((1, 1, 1), np.float32)  # (the bookkeeping reads no planes)
        self.keys, self.next_node = tree.keys.numpy(), tree.next_node.numpy()
        # the positions' fields (numpy's row copies cost less than torch's index_select/index_copy_ here)
        self.state_type = type(tree.states)
        self.state_fields = {f.name: getattr(tree.states, f.name).numpy() for f in dataclasses.fields(tree.states)}
        self.collisions = 0
        # the calls' argument types, fixed by these record classes and buffers: gather and finish
        # call the compiled code directly (games.kernels.Entries); None if a tree array is unusual
        usual = all(a.dtype == np.int64 and a.flags.c_contiguous for a in (self.keys, self.next_node))
        self.gather_key = (type(self.params), type(self.arrays)) if usual else None

    def gather(self, budget: torch.Tensor, root_action: torch.Tensor | None = None) -> Leaves:
        """Walk tree b `budget[b]` times (long [B]) from its root with the rule (from the
        imposed root actions if given: long [B] for every walk, or [B, W] for walk j of the
        step in column j, a walk that collides counted, as engine.simulate takes them), pending
        visits steering each walk away from the earlier ones. A walk that ends at a finished game is
        backed up at once; one that ends at an unexpanded edge makes the new node (the leaf);
        one that ends at a leaf of this step (a collision) only leaves its pending visits.
        Collisions count against the walks too, at most `budget[b]` of them per tree.
        RuntimeError if a tree has no room for a new node. The Leaves returned, and their
        tensors (views of the walker's buffers), are the next gather's too: read them before it."""
        if root_action is not None:
            if root_action.dim() == 1:
                self.root_action.copy_(root_action.unsqueeze(1).expand_as(self.root_action))
            else:
                self.root_action[:, :root_action.shape[1]] = root_action
                self.root_action[:, root_action.shape[1]:] = NO_ACTION
            self.imposed = True
        elif self.imposed:
            self.root_action.fill_(NO_ACTION)
            self.imposed = False
        budget_np = budget.numpy()
        args = (self.params, self.arrays, self.keys, self.next_node, budget_np, self.root_action_np, self.capacity,
                self.leaves_np, self.collisions_np, self.counts)
        if self.gather_key is not None and budget_np.dtype == np.int64 and budget_np.flags.c_contiguous:
            _GATHER(self.gather_key, *args)
        else:
            _gather(*args)
        leaves, self.collisions, full = self.counts.tolist()
        if full:
            raise RuntimeError(f"search tree is full ({self.capacity} nodes); allocate more capacity")
        if self.last_leaves[0] != leaves:  # (views of the buffers: the same views serve every step of that size)
            self.last_leaves = (leaves, Leaves(*(t[:leaves] for t in self.leaves)))
        return self.last_leaves[1]

    def finish(self, leaves: Leaves, parent_to_play, to_play, done, legal, result, prior, value,
               arrays: Expansion | None = None) -> None:
        """Write the new nodes' fields (search.engine._expand's bookkeeping) once the evaluator
        has seen them: their signs (from the player who moved into each, `parent_to_play`, and
        the one to move, `to_play`, long [n]), legal moves, end of game (`done`), result, prior
        (uniform over the legal moves where `prior` is None) and raw value; then back the step
        up: each leaf's value (float [n], first player's view: `value`, or the result where the
        game is over) from the leaf to the root, and the pending visits of the step's walks
        taken back. One compiled call. `arrays`: games.base.Expansion.arrays, the same fields as
        numpy arrays (read instead of the tensors when given)."""
        has_prior = prior is not None
        rows, nodes, own = self._found(leaves)
        values = self.values[:rows.shape[0]]  # (written where the game is over: the caller's tensor stays as it was)
        values[:] = value.numpy() if value.dtype == torch.float32 else value.to(torch.float32).numpy()
        if arrays is not None:
            expansion = Expansion(arrays.legal.view(np.uint8), arrays.result, self.no_planes, arrays.to_play,
                                  arrays.parent_to_play, arrays.done.view(np.uint8))
        else:
            expansion = Expansion(legal.contiguous().view(torch.uint8).numpy(),
                                  result.to(torch.float32).contiguous().numpy(), self.no_planes,
                                  to_play.contiguous().numpy(), parent_to_play.contiguous().numpy(),
                                  done.contiguous().view(torch.uint8).numpy())
        prior_np = prior.to(torch.float32).contiguous().numpy() if has_prior else self.no_prior
        args = (rows, nodes, self.capacity, expansion, values, prior_np, has_prior, self.with_prior, self.solver,
                self.collisions_np, self.collisions, self.arrays)
        if own and arrays is not None and self.gather_key is not None:  # (a compiled expansion's arrays: their types are fixed)
            _FINISH((type(self.arrays), prior_np.ndim), *args)
        else:
            _finish(*args)

    def finish_without_leaves(self) -> None:
        """Back up a step whose walks made no new node: take back its collisions' pending visits."""
        none = self.leaves_np.rows[:0]
        _backup(none, none, self.no_value, 0, self.collisions_np, self.collisions, self.capacity, self.arrays)

    def take_states(self, flat: torch.Tensor):
        """The positions of nodes `flat` (long [n], b * N + node): tree.states.take(flat)."""
        index = flat.numpy()
        return self.state_type(**{name: torch.from_numpy(array[index]) for name, array in self.state_fields.items()})

    def put_states(self, flat: torch.Tensor, states) -> None:
        """Nodes `flat` (long [n], distinct) take the positions `states`: tree.states.put_(flat, states)."""
        index = flat.numpy()
        for name, array in self.state_fields.items():
            array[index] = getattr(states, name).numpy()

    def _found(self, leaves: Leaves) -> tuple[np.ndarray, np.ndarray, bool]:
        """The rows and nodes of `leaves` as numpy arrays, and whether they are prefixes of the
        walker's own buffers (when `leaves` came from its gather: a tensor's .numpy() costs more
        than the loops here)."""
        count = leaves.rows.shape[0]
        if leaves is self.last_leaves[1] or (leaves.rows.data_ptr() == self.leaves.rows.data_ptr()
                                             and leaves.nodes.data_ptr() == self.leaves.nodes.data_ptr()):
            return self.leaves_np.rows[:count], self.leaves_np.nodes[:count], True
        return leaves.rows.numpy(), leaves.nodes.numpy(), False


@njit(cache=True, nogil=True, error_model="numpy")
def _gumbel_round(rule, tree, capacity, gumbel, target, lengths, log_prior, action):  # pragma: no cover - compiled
    child_visits, legal = tree.child_visits, tree.legal
    batch, actions = gumbel.shape
    scores = np.empty(actions, dtype=np.float32)
    candidates = np.empty(actions, dtype=np.float32)
    for b in range(batch):
        flat = b * capacity  # the root
        raw = tree.raw_value[flat] * tree.q_sign[flat]
        for j in range(action.shape[1]):
            action[b, j] = -1
        for j in range(lengths[b]):
            # the logits (selection.Gumbel.logits: log prior + sigma) from the root's logarithms, which
            # stay as they are all search
            _gumbel_sigma(flat, tree, raw, rule, scores)
            found = False
            for a in range(actions):  # (an illegal move stays -inf whatever its noise: -inf + inf is NaN)
                scores[a] = (_legal_score(log_prior[b, a] + scores[a] + gumbel[b, a]) if legal[flat, a] != 0
                             else -np.float32(np.inf))
                wanted = child_visits[flat, a] == target[b] and legal[flat, a] != 0
                found |= wanted
                candidates[a] = scores[a] if wanted else -np.float32(np.inf)
            chosen = _first_max(candidates, actions) if found else _first_max(scores, actions)
            action[b, j] = chosen
            child_visits[flat, chosen] += np.float32(1.0)  # counted as visited for the round's later walks
        for j in range(lengths[b]):  # (whole numbers: taken back exactly)
            child_visits[flat, action[b, j]] -= np.float32(1.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _root_log_prior(tree, capacity, out):  # pragma: no cover - compiled
    prior, legal = tree.prior, tree.legal
    for b in range(out.shape[0]):
        flat = b * capacity
        for a in range(out.shape[1]):
            out[b, a] = np.log(max(prior[flat, a], _TINY)) if legal[flat, a] != 0 else -np.float32(np.inf)


def root_log_prior(tree) -> np.ndarray:
    """float32 [B, A]: selection.prior_logits of the roots, as the compiled Gumbel loops compute it
    (numba's logarithm, not torch's), for gumbel_round_actions."""
    out = np.empty((tree.batch_size, tree.num_actions), dtype=np.float32)
    _root_log_prior(tree_arrays(tree), tree.capacity, out)
    return out


def gumbel_round_actions(tree, rule, gumbel: torch.Tensor, target: torch.Tensor, lengths: torch.Tensor,
                         width: int, log_prior: np.ndarray | None = None) -> torch.Tensor:
    """The compiled form of search.gumbel.round_actions: long [B, width], the root moves of
    the next lengths[b] walks of tree b, each the best by g + logits + sigma(q_hat) among the
    legal moves with `target` (float [B]) visits (the best of all where none has), the
    earlier walks' moves counted as visited once more; NO_ACTION after them. gumbel: float [B, A];
    log_prior: root_log_prior(tree), which a search may make once for all its rounds (else made here)."""
    if int(lengths.max()) > width:
        raise ValueError(f"a round of {int(lengths.max())} walks for {width} columns")
    action = torch.empty(tree.batch_size, width, dtype=torch.long)
    if log_prior is None:
        log_prior = root_log_prior(tree)
    elif log_prior.shape != (tree.batch_size, tree.num_actions) or log_prior.dtype != np.float32:
        raise ValueError(f"log priors of shape {log_prior.shape} for {tree.batch_size} trees of "
                         f"{tree.num_actions} actions")  # (the compiled loop would read past them)
    _gumbel_round(
        rule_params(rule), tree_arrays(tree), tree.capacity,
        gumbel.to(torch.float32).contiguous().numpy(), target.to(torch.float32).contiguous().numpy(),
        lengths.to(torch.long).contiguous().numpy(), log_prior, action.numpy(),
    )
    return action
