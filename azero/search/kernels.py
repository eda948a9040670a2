"""Compiled CPU loops (numba) for the parts of a simulation that walk each tree: the
descent through the tree (selection), the new nodes' bookkeeping and the backup of the
leaf value along the path; and for the subtree kept between moves.

The engine's torch form does each level of every tree's descent as a dozen operations
over [B, A] arrays, with a Python round trip per level; on a CPU that overhead, not the
arithmetic, is the cost. Here one call walks every tree from its root to the node it
expands, with the same rule as azero.search.selection (UCB1, PUCT or Gumbel, same formulas,
same random draws, first maximum on ties), and one call adds the values along the paths;
another makes Gumbel's root choices (search/gumbel.py's sequential halving). The
torch form stays the reference and serves other devices and other rules; the tests check
that both make the same searches on test positions. The float32 logarithm here (numba's)
and torch's vectorised one differ in the last bit for some visit counts, so two children
whose scores tie to within that may be ordered differently by the two forms; each form is
deterministic and batch-independent on its own.

The subtree is field-generic: one kernel maps the nodes, and gathers compiled per dtype
copy the arrays of search.tree.FIELDS (those of one dtype and rank in one pass). These
loops take the tree's conventions as plain numbers: node 0 is the root and a negative
node index is no node (search.tree's ROOT, NO_PARENT, UNEXPANDED; this module sits below
search.tree and does not import it).
See games.kernels for the why, AZERO_NO_KERNELS, and a note on numba's disk cache.
"""

from __future__ import annotations

import numpy as np
import torch

from games import NO_ACTION
from games import kernels as _games_kernels
from games.kernels import hash_one, njit, nth_of

from .selection import PUCT, UCB1, Gumbel

UCB1_KIND, PUCT_KIND, GUMBEL_KIND = 1, 2, 3
_TINY = np.float32(np.finfo(np.float32).tiny)


@njit(cache=True, nogil=True, inline="always")
def _uniform_draw(key, depth):  # pragma: no cover - compiled; games.random.uniform_draw, one value
    v = hash_one(key + (((depth + 1) * 0x632BE5AB) & 0xFFFFFFFF))
    return np.float32(v >> 8) * np.float32(1.0 / (1 << 24))


@njit(cache=True, nogil=True, inline="always")
def _first_max(scores, count):  # pragma: no cover - compiled; torch.argmax: the first maximum
    best, index = scores[0], 0
    for a in range(1, count):
        if scores[a] > best:
            best, index = scores[a], a
    return index


@njit(cache=True, nogil=True, inline="always")
def _gumbel_logits(flat, child_visits, child_value_sum, legal, prior, raw, c_visit, c_scale, out):  # pragma: no cover - compiled
    """out[a] = log prior + sigma(completed Q) at node `flat`, -inf where illegal (selection.Gumbel.logits);
    raw: the node's raw value for the chooser. Returns the node's total child visits."""
    actions = out.shape[0]
    total, most = np.float32(0.0), np.float32(0.0)
    weighted, weight_sum = np.float32(0.0), np.float32(0.0)
    for a in range(actions):
        n = child_visits[flat, a]
        total += n
        most = max(most, n)
        if n > 0:
            p = max(prior[flat, a], _TINY)
            weighted += p * (child_value_sum[flat, a] / n)
            weight_sum += p
    mean_q = weighted / max(weight_sum, _TINY)
    mixed = (raw + total * mean_q) / (np.float32(1.0) + total)
    scale = (np.float32(c_visit) + most) * np.float32(c_scale)
    for a in range(actions):
        n = child_visits[flat, a]
        q = child_value_sum[flat, a] / n if n > 0 else mixed
        value = np.log(max(prior[flat, a], _TINY)) + scale * (np.float32(0.5) * (q + np.float32(1.0)))
        out[a] = value if legal[flat, a] != 0 else -np.float32(np.inf)
    return total


@njit(cache=True, nogil=True)
def _descend(
    kind, children, child_visits, child_value_sum, legal, prior, visits, value_sum, q_sign, terminal, raw_value,
    keys, next_node, root_action, capacity, c, c_init, c_base, fpu_reduction, c_visit, c_scale, forced,
    path, edges, length, expand_action, last,
):  # pragma: no cover - compiled
    batch = next_node.shape[0]
    actions = children.shape[1]
    inf = np.float32(np.inf)
    scores = np.empty(actions, dtype=np.float32)
    for b in range(batch):
        base = b * capacity
        node = 0  # the root
        path[b, 0] = node
        depth = 0
        expand_action[b] = NO_ACTION
        while True:
            flat = base + node
            n_parent = max(visits[flat], np.float32(1.0))
            action = 0
            if depth == 0 and root_action[b] >= 0:  # chosen by the caller (Gumbel's sequential halving)
                action = root_action[b]
            elif kind == GUMBEL_KIND:
                raw = raw_value[flat] * q_sign[flat]
                total = _gumbel_logits(flat, child_visits, child_value_sum, legal, prior, raw, c_visit, c_scale, scores)
                top = scores[_first_max(scores, actions)]
                mass = np.float32(0.0)
                for a in range(actions):
                    if legal[flat, a] != 0:
                        mass += np.exp(scores[a] - top)
                for a in range(actions):  # pi'(a) - N(a) / (1 + sum N), -inf if illegal
                    if legal[flat, a] != 0:
                        scores[a] = np.exp(scores[a] - top) / mass - child_visits[flat, a] / (np.float32(1.0) + total)
                action = _first_max(scores, actions)
            elif kind == UCB1_KIND:
                untried = 0
                for a in range(actions):  # branch-free, vectorised
                    untried += (legal[flat, a] != 0) & (child_visits[flat, a] == 0)
                if untried > 0:
                    nth = nth_of(_uniform_draw(keys[b], depth), untried)
                    seen = 0
                    for a in range(actions):
                        seen += (legal[flat, a] != 0) & (child_visits[flat, a] == 0)
                        if seen > nth:
                            action = a
                            break
                else:
                    weight = np.sqrt(np.log(n_parent)) * np.float32(2.0 * c)
                    for a in range(actions):  # vectorised: every child's score, -inf if untried
                        n = max(child_visits[flat, a], np.float32(1.0))
                        score = child_value_sum[flat, a] / n + weight * (np.float32(1.0) / np.sqrt(n))
                        scores[a] = score if child_visits[flat, a] != 0 else -inf
                    action = _first_max(scores, actions)
            else:
                w = np.log1p((n_parent + np.float32(1.0)) * np.float32(1.0 / c_base)) + np.float32(c_init)
                w = w * np.sqrt(n_parent) * np.float32(2.0)
                q = value_sum[flat] / n_parent * q_sign[flat]
                fpu = min(max(q - np.float32(2.0 * fpu_reduction), np.float32(-1.0)), np.float32(1.0)) / w
                for a in range(actions):  # vectorised: every child's score, -inf if illegal
                    n = child_visits[flat, a]
                    exploit = child_value_sum[flat, a] / (n * w) if n > 0 else fpu
                    score = exploit + prior[flat, a] / (n + np.float32(1.0))
                    scores[a] = score if legal[flat, a] != 0 else -inf
                if depth == 0 and forced > 0:  # forced playouts (search/forced.py): root moves short of theirs first
                    root_total = np.float32(0.0)
                    for a in range(actions):
                        root_total += child_visits[flat, a]
                    for a in range(actions):
                        if legal[flat, a] != 0 and child_visits[flat, a] < np.sqrt(
                                np.float32(forced) * prior[flat, a] * root_total):
                            scores[a] = inf
                action = _first_max(scores, actions)
            edges[b, depth] = flat * actions + action
            if terminal[flat]:  # a finished game: the path ends here
                break
            child = children[flat, action]
            depth += 1
            if child < 0:  # expand this edge: the new node is the path's last
                expand_action[b] = action
                path[b, depth] = next_node[b]
                break
            path[b, depth] = child
            node = child
        length[b] = depth + 1
        last[b] = node


@njit(cache=True, nogil=True)
def _record(
    rows, parent, action, new, capacity, parent_to_play, child_to_play, done, result, legal, with_q,
    mover_sign, q_sign, t_parent, t_action, t_legal, terminal, terminal_value, children, next_node,
):  # pragma: no cover - compiled
    for i in range(rows.shape[0]):
        b = rows[i]
        flat = b * capacity + new[i]
        mover = np.float32(1 - 2 * parent_to_play[i])
        mover_sign[flat] = mover
        if with_q:
            q_sign[flat] = mover * np.float32(1 - 2 * child_to_play[i])
        t_parent[flat] = parent[i]
        t_action[flat] = action[i]
        for a in range(legal.shape[1]):
            t_legal[flat, a] = legal[i, a]
        terminal[flat] = done[i]
        terminal_value[flat] = result[i]
        children[b * capacity + parent[i], action[i]] = new[i]
        next_node[b] = new[i] + 1


@njit(cache=True, nogil=True)
def _backup(path, edges, length, value, mover_sign, visits, value_sum, child_visits, child_value_sum, capacity):  # pragma: no cover - compiled
    batch = path.shape[0]
    for b in range(batch):
        base = b * capacity
        v = value[b]
        for d in range(length[b]):
            flat = base + path[b, d]
            signed = v * mover_sign[flat]
            visits[flat] += np.float32(1.0)
            value_sum[flat] += signed
            if d > 0:
                edge = edges[b, d - 1]
                child_visits[edge] += np.float32(1.0)
                child_value_sum[edge] += signed


def supports_tree(tree) -> bool:
    """Whether the compiled loops can work on this tree (numba present, CPU, float32 statistics)."""
    return (
        _games_kernels.AVAILABLE
        and tree.visits.device.type == "cpu"
        and tree.visits.dtype == torch.float32
        and tree.child_visits.dtype == torch.float32
    )


def supports(rule, tree) -> bool:
    """Whether the compiled descent can run this rule on this tree."""
    if isinstance(rule, (PUCT, Gumbel)) and tree.prior is None:  # (the torch form reports the misuse)
        return False
    return type(rule) in (UCB1, PUCT, Gumbel) and supports_tree(tree)


def _numpy(array: torch.Tensor) -> np.ndarray:
    """A numpy view of a tree array (bool as uint8): [B * N] per node, [B * N, A] per edge."""
    if array.dtype == torch.bool:
        array = array.view(torch.uint8)
    return array.view(-1, array.shape[2]).numpy() if array.dim() > 2 else array.view(-1).numpy()


def _rows(array: torch.Tensor) -> np.ndarray:
    """A numpy view of a tree array [B, N, ...] as one row per node, [B * N, width] (bool as uint8)."""
    array = array.view(torch.uint8) if array.dtype == torch.bool else array
    return array.view(array.shape[0] * array.shape[1], -1).numpy()


# the tree arrays each compiled step takes, in the order of its parameters
_DESCEND = (
    "children", "child_visits", "child_value_sum", "legal", "prior", "visits", "value_sum", "q_sign", "terminal",
    "raw_value",
)
_RECORD = ("mover_sign", "q_sign", "parent", "action", "legal", "terminal", "terminal_value", "children")
_BACKUP = ("mover_sign", "visits", "value_sum", "child_visits", "child_value_sum")


class Walker:
    """Buffers for one `simulate` call: path (long [B, N + 1]), edges, lengths."""

    def __init__(self, tree, rule):
        batch, capacity, actions = tree.batch_size, tree.capacity, tree.num_actions
        self.tree, self.capacity = tree, capacity
        self.path = torch.empty((batch, capacity + 1), dtype=torch.long)
        self.edges = torch.empty((batch, capacity + 1), dtype=torch.long)
        self.length = torch.empty(batch, dtype=torch.long)
        self.expand_action = torch.empty(batch, dtype=torch.long)
        self.last = torch.empty(batch, dtype=torch.long)
        self.root_action = torch.full((batch,), NO_ACTION, dtype=torch.long)  # NO_ACTION: the rule chooses
        # (c, c_init, c_base, fpu_reduction, c_visit, c_scale, forced_playouts): each rule reads its own
        if isinstance(rule, UCB1):
            self.kind, self.params = UCB1_KIND, (float(rule.c), 0.0, 1.0, 0.0, 0.0, 0.0, 0.0)
        elif isinstance(rule, Gumbel):
            self.kind, self.params = GUMBEL_KIND, (0.0, 0.0, 1.0, 0.0, float(rule.c_visit), float(rule.c_scale), 0.0)
        else:
            self.kind = PUCT_KIND
            self.params = (0.0, float(rule.c_init), float(rule.c_base), float(rule.fpu_reduction), 0.0, 0.0,
                           float(rule.forced_playouts))
        with_prior = {"prior", "raw_value"}
        arrays = {name: _numpy(getattr(tree, name)) for name in {*_DESCEND, *_RECORD, *_BACKUP} - with_prior}
        # a tree without priors (UCB1): PUCT's and Gumbel's arguments are there but never read
        arrays["prior"] = np.zeros((1, actions), np.float32) if tree.prior is None else _numpy(tree.prior)
        arrays["raw_value"] = np.zeros(1, np.float32) if tree.raw_value is None else _numpy(tree.raw_value)
        self.arrays = tuple(arrays[name] for name in _DESCEND)
        self.record_arrays = (*(arrays[name] for name in _RECORD), tree.next_node.numpy())
        # the backup takes edges as flat indices into [B * N * A]
        self.backup_arrays = tuple(arrays[name].reshape(-1) for name in _BACKUP)

    def descend(self, keys: torch.Tensor | None, root_action: torch.Tensor | None = None) -> None:
        """Walk every tree from its root, from `root_action` (long [B]) if given; fills path,
        edges, length, expand_action, last."""
        tree = self.tree
        if keys is None:
            keys = tree.keys
        if root_action is not None:
            self.root_action.copy_(root_action)
        _descend(
            self.kind,
            *self.arrays,
            keys.numpy(),
            tree.next_node.numpy(),
            self.root_action.numpy(),
            self.capacity,
            *self.params,
            self.path.numpy(),
            self.edges.numpy(),
            self.length.numpy(),
            self.expand_action.numpy(),
            self.last.numpy(),
        )

    def record(self, rows, parent, action, new, parent_states, states, legal, result) -> None:
        """Write the new nodes' fields (search.engine._expand's bookkeeping, one call): their
        signs, parent, action, legal moves, end of game and result, the parents' child links
        and the trees' next free node."""
        _record(
            rows.numpy(),
            parent.contiguous().numpy(),
            action.contiguous().numpy(),
            new.numpy(),
            self.capacity,
            parent_states.to_play.contiguous().numpy(),
            states.to_play.contiguous().numpy(),
            states.done.contiguous().view(torch.uint8).numpy(),
            result.to(torch.float32).contiguous().numpy(),
            legal.contiguous().view(torch.uint8).numpy(),
            self.tree.prior is not None,  # only PUCT's first-play urgency reads q_sign
            *self.record_arrays,
        )

    def backup(self, value: torch.Tensor) -> None:
        """Add `value` (float [B], first player's view) along every path of the last descent."""
        _backup(
            self.path.numpy(),
            self.edges.numpy(),
            self.length.numpy(),
            value.to(torch.float32).contiguous().numpy(),
            *self.backup_arrays,
            self.capacity,
        )


@njit(cache=True, nogil=True)
def _subtree_nodes(taken, parent, children, old, count):  # pragma: no cover - compiled
    batch, capacity = old.shape
    new_id = np.empty(capacity, dtype=np.int64)
    for b in range(batch):
        base = b * capacity
        root = -1
        if taken[b] >= 0:
            root = children[base, taken[b]]
        # members: the new root and every node whose parent is a member (parents come first)
        kept = 0
        for n in range(capacity):
            p = parent[base + n]
            if root >= 0 and (n == root or (n > root and p >= 0 and new_id[p] >= 0)):
                new_id[n] = kept
                old[b, kept] = n
                kept += 1
            else:
                new_id[n] = -1
        count[b] = kept
        spare = kept
        for n in range(capacity):  # the other slots take the other nodes (any valid position)
            if new_id[n] < 0:
                old[b, spare] = n
                spare += 1


# The gathers below take a group of arrays of one type (a tuple: one compiled form per dtype,
# rank and group size) and move each node's entries of all of them in one pass, which is
# faster than a pass per array.


@njit(cache=True, nogil=True)
def _gather_values(sources, targets, empties, old, count):  # pragma: no cover - compiled
    batch, capacity = old.shape
    for b in range(batch):
        base = b * capacity
        for j in range(count[b]):
            s = base + old[b, j]
            for i in range(len(sources)):
                targets[i][base + j] = sources[i][s]
        for j in range(count[b], capacity):
            for i in range(len(sources)):
                targets[i][base + j] = empties[i]


@njit(cache=True, nogil=True, inline="always")
def _fill_rows(targets, empties, start, stop):  # pragma: no cover - compiled
    """Rows start..stop-1 of every target [B * N, width] set to its empty value."""
    for i in range(len(targets)):
        target, empty = targets[i], empties[i]
        for row in range(start, stop):
            for a in range(target.shape[1]):
                target[row, a] = empty


@njit(cache=True, nogil=True)
def _gather_rows(sources, targets, empties, old, count):  # pragma: no cover - compiled
    batch, capacity = old.shape
    for b in range(batch):
        base = b * capacity
        for j in range(count[b]):
            s = base + old[b, j]
            for i in range(len(sources)):
                source, target = sources[i], targets[i]
                for a in range(source.shape[1]):
                    target[base + j, a] = source[s, a]
        _fill_rows(targets, empties, base + count[b], base + capacity)


@njit(cache=True, nogil=True)
def _gather_node_ids(sources, targets, empties, old, count):  # pragma: no cover - compiled
    batch, capacity = old.shape
    new_id = np.empty(capacity, dtype=np.int64)
    for b in range(batch):
        base = b * capacity
        new_id[:] = -1
        for j in range(count[b]):
            new_id[old[b, j]] = j
        for j in range(count[b]):
            s = base + old[b, j]
            for i in range(len(sources)):
                source, target, empty = sources[i], targets[i], empties[i]
                for a in range(source.shape[1]):
                    n = source[s, a]
                    renumbered = new_id[n] if n >= 0 else -1
                    target[base + j, a] = renumbered if renumbered >= 0 else empty
        _fill_rows(targets, empties, base + count[b], base + capacity)


def subtree_nodes(children: torch.Tensor, parent: torch.Tensor, actions: torch.Tensor):
    """The compiled form of search.tree._subtree_nodes: (old long [B, N], count long [B]) for
    the subtrees under `actions` (long [B]); children [B, N, A], parent [B, N]."""
    batch, capacity = parent.shape
    old = torch.empty((batch, capacity), dtype=torch.long)
    count = torch.empty(batch, dtype=torch.long)
    _subtree_nodes(actions.contiguous().numpy(), _numpy(parent), _numpy(children), old.numpy(), count.numpy())
    return old, count


def gather_nodes(fields, old: torch.Tensor, count: torch.Tensor) -> list[torch.Tensor]:
    """The compiled form of search.tree._gather_nodes: each array of `fields`, a list of
    (array [B, N, ...], empty, node_ids), with node j of tree b taken from node old[b, j]
    where j < count[b] and `empty` after; with node_ids the values are node indices,
    renumbered to the new slots (`empty` for nodes left behind). Arrays of one dtype and
    rank move together, in one pass."""
    outs = [torch.empty_like(array) for array, _, _ in fields]
    groups = {}
    for i, (array, _, ids) in enumerate(fields):
        groups.setdefault((array.dtype, array.dim(), ids), []).append(i)
    for (_, rank, ids), members in groups.items():
        view = _rows if ids else _numpy  # node ids as rows [B * N, width]: one kernel for both ranks
        targets = tuple(view(outs[i]) for i in members)
        kernel = _gather_node_ids if ids else _gather_rows if rank > 2 else _gather_values
        kernel(
            tuple(view(fields[i][0]) for i in members),
            targets,
            np.array([fields[i][1] for i in members], dtype=targets[0].dtype),
            old.numpy(),
            count.numpy(),
        )
    return outs


@njit(cache=True, nogil=True)
def _gumbel_root(
    child_visits, child_value_sum, legal, prior, raw_value, q_sign, capacity, c_visit, c_scale, gumbel, target, action,
):  # pragma: no cover - compiled
    batch, actions = gumbel.shape
    scores = np.empty(actions, dtype=np.float32)
    candidates = np.empty(actions, dtype=np.float32)
    for b in range(batch):
        flat = b * capacity  # the root
        raw = raw_value[flat] * q_sign[flat]
        _gumbel_logits(flat, child_visits, child_value_sum, legal, prior, raw, c_visit, c_scale, scores)
        found = False
        for a in range(actions):
            scores[a] = scores[a] + gumbel[b, a]
            found |= child_visits[flat, a] == target[b] and legal[flat, a] != 0
            candidates[a] = scores[a] if child_visits[flat, a] == target[b] else -np.float32(np.inf)
        action[b] = _first_max(candidates, actions) if found else _first_max(scores, actions)


def gumbel_root_actions(tree, rule, gumbel: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The compiled form of search.gumbel's root choice: long [B], the best root move by
    g + logits + sigma(q_hat) among those with `target` (float [B]) visits (the best of all
    where none has). gumbel: float [B, A]."""
    action = torch.empty(tree.batch_size, dtype=torch.long)
    _gumbel_root(
        _numpy(tree.child_visits), _numpy(tree.child_value_sum), _numpy(tree.legal), _numpy(tree.prior),
        _numpy(tree.raw_value), _numpy(tree.q_sign), tree.capacity, float(rule.c_visit), float(rule.c_scale),
        gumbel.to(torch.float32).contiguous().numpy(), target.to(torch.float32).contiguous().numpy(), action.numpy(),
    )
    return action
