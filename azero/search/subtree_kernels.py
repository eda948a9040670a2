"""Compiled CPU loops (numba) for the subtree kept between moves (search.tree.subtree):
which nodes stay, and the copy of every field of those nodes to their new slots.

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

from games.kernels import njit

from .kernels import _numpy, _rows


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
