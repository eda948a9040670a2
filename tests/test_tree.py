"""The tree's field table: every array declared in search.tree.FIELDS is allocated, refilled,
grown, carried into a kept subtree (torch and compiled forms), replaced with its node, and
handed to the compiled walk by name."""

from __future__ import annotations

import pytest
import torch

import games
from azero.search import PUCT, UCB1, RolloutEvaluator, simulate, subtree_kernels
from azero.search import kernels as search_kernels
from azero.search import tree as tree_module
from azero.search.tree import (
    FIELDS,
    NO_PARENT,
    ROOT,
    UNEXPANDED,
    grow,
    new_tree,
    per_edge,
    per_node,
    replace_rows,
    subtree,
)
from games import NO_ACTION
from games import kernels as game_kernels
from games.keyed_random import make_keys

GAME = games.make("tictactoe")
EMPTY = 7
# throwaway fields, as a new node statistic would be declared
EXTRA = (
    per_node("node_tag", torch.int16, EMPTY, "the node's own id, written by the test"),
    per_edge("edge_tag", torch.float64, -EMPTY, "the node's id times 100 plus the action, written by the test"),
    per_node("grandparent", torch.int16, -5, "the parent's parent, written by the test", node_ids=True),
)


PLAIN_TREE = tree_module.Tree


@pytest.fixture
def wide_tree(monkeypatch):
    """Trees built with the table FIELDS + EXTRA."""
    monkeypatch.setattr(tree_module, "Tree", tree_module.tree_type(FIELDS + EXTRA))
    if game_kernels.AVAILABLE:
        # The compiled loops specialise on the wide tree's record, a class no other process has:
        # keep those compilations off numba's disk cache (saved each run, never found again).
        from numba.core.caching import NullCache
        from numba.core.registry import CPUDispatcher

        for module in (search_kernels, subtree_kernels):
            for value in vars(module).values():
                if isinstance(value, CPUDispatcher):
                    monkeypatch.setattr(value, "_cache", NullCache())


def searched(batch=3, capacity=40, simulations=30, seed=0):
    """A UCB1 tree of `batch` tic-tac-toe roots whose used nodes carry their ids in the extra fields."""
    roots = GAME.step(GAME.initial_state(batch), torch.arange(batch) % GAME.num_actions)
    tree = new_tree(GAME, roots, capacity, make_keys(seed, batch), with_prior=False)
    simulate(tree, GAME, RolloutEvaluator(GAME), UCB1(), simulations)
    tag(tree)
    return tree


def tag(tree):
    """node_tag[b, n] = n, edge_tag[b, n, a] = 100 n + a and the grandparent on the nodes in use."""
    nodes, actions = tree.capacity, tree.num_actions
    used = torch.arange(nodes).unsqueeze(0) < tree.next_node.unsqueeze(1)
    node_ids = torch.arange(nodes).expand_as(used)
    tree.node_tag.copy_(torch.where(used, node_ids, EMPTY))
    edge_ids = node_ids.unsqueeze(2) * 100.0 + torch.arange(actions).double()
    tree.edge_tag.copy_(torch.where(used.unsqueeze(2), edge_ids, -EMPTY))
    parent = tree.parent.clamp(min=0)
    grandparent = torch.where(tree.parent >= 0, tree.parent.gather(1, parent), NO_PARENT)
    tree.grandparent.copy_(torch.where(grandparent >= 0, grandparent, -5))


def descendants(tree, b, node):
    """The nodes under `node` (itself included) of tree b, by the parent links."""
    out = {node}
    for n in range(node + 1, int(tree.next_node[b])):
        if int(tree.parent[b, n]) in out:
            out.add(n)
    return out


def test_a_new_tree_has_every_field_of_the_table_and_unused_nodes_hold_its_empty_value(wide_tree):
    tree = new_tree(GAME, GAME.initial_state(2), 5, make_keys(0, 2))
    assert tree.node_tag.shape == (2, 5) and tree.node_tag.dtype == torch.int16
    assert tree.edge_tag.shape == (2, 5, 9) and tree.edge_tag.dtype == torch.float64
    assert bool((tree.node_tag == EMPTY).all()) and bool((tree.edge_tag == -EMPTY).all())
    assert bool((tree.parent == NO_PARENT).all()) and bool((tree.children == UNEXPANDED).all())
    assert bool((tree.action[:, ROOT] == NO_ACTION).all())
    assert "node_tag" in tree_module.Tree.__doc__ and "int16 [B, N]" in tree_module.Tree.__doc__
    # a tree refilled in place takes the old arrays and empties them
    old = searched(batch=2, capacity=5, simulations=3)
    refilled = new_tree(GAME, GAME.initial_state(2), 5, make_keys(0, 2), reuse=old, with_prior=False)
    assert refilled.node_tag.data_ptr() == old.node_tag.data_ptr()
    assert refilled.edge_tag.data_ptr() == old.edge_tag.data_ptr()
    assert bool((refilled.node_tag == EMPTY).all()) and bool((refilled.edge_tag == -EMPTY).all())


def test_grow_keeps_the_values_and_fills_the_new_nodes_with_the_empty_value(wide_tree):
    tree = searched()
    grown = grow(tree, 64)
    for f in FIELDS + EXTRA:
        if getattr(tree, f.name) is None:
            assert getattr(grown, f.name) is None
            continue
        old, new = getattr(tree, f.name), getattr(grown, f.name)
        assert new.shape[1] == 64 and new.dtype == old.dtype, f.name
        assert torch.equal(new[:, :40], old), f.name
        assert bool((new[:, 40:] == f.empty).all()), f.name
    simulate(grown, GAME, RolloutEvaluator(GAME), UCB1(), 20)  # the search goes on in the grown tree
    assert bool((grown.node_tag[:, 40:] == EMPTY).all())


@pytest.mark.parametrize("compiled", [True, False])
def test_the_fields_follow_their_node_into_the_kept_subtree(wide_tree, monkeypatch, compiled):
    if compiled and not game_kernels.AVAILABLE:
        pytest.skip("numba is not available")
    monkeypatch.setattr(game_kernels, "AVAILABLE", compiled)
    tree = searched()
    taken = tree.root_visits().argmax(dim=1)
    taken[2] = NO_ACTION
    kept_tree, kept = subtree(tree, taken)
    assert kept.tolist() == [True, True, False]
    for b in range(3):
        count = int(kept_tree.next_node[b])
        if not kept[b]:
            assert count == 1 and bool((kept_tree.node_tag[b] == EMPTY).all())
            assert bool((kept_tree.edge_tag[b] == -EMPTY).all())
            continue
        child = int(tree.children[b, ROOT, taken[b]])
        old_ids = kept_tree.node_tag[b, :count].long()
        assert sorted(old_ids.tolist()) == sorted(descendants(tree, b, child)) and int(old_ids[0]) == child
        expected_edges = old_ids.unsqueeze(1) * 100.0 + torch.arange(GAME.num_actions).double()
        assert torch.equal(kept_tree.edge_tag[b, :count], expected_edges)
        assert torch.equal(kept_tree.visits[b, :count], tree.visits[b, old_ids])
        assert torch.equal(kept_tree.child_visits[b, :count], tree.child_visits[b, old_ids])
        # spare slots hold the empty values; links point at the new ids
        assert bool((kept_tree.node_tag[b, count:] == EMPTY).all())
        assert bool((kept_tree.edge_tag[b, count:] == -EMPTY).all())
        assert int(kept_tree.parent[b, ROOT]) == NO_PARENT and int(kept_tree.action[b, ROOT]) == NO_ACTION
        for j in range(1, count):
            assert int(kept_tree.node_tag[b, kept_tree.parent[b, j]]) == int(tree.parent[b, old_ids[j]])
        # a node-id field of the test's own: renumbered, or its empty value where the node was left behind
        for j in range(count):
            old_grandparent = int(tree.grandparent[b, old_ids[j]])
            new_grandparent = int(kept_tree.grandparent[b, j])
            if old_grandparent in old_ids.tolist():
                assert int(kept_tree.node_tag[b, new_grandparent]) == old_grandparent
            else:
                assert new_grandparent == -5
        assert bool((kept_tree.grandparent[b, :2] == -5).all())  # the new root's and its children's are gone
        for j in range(count):
            for a in range(GAME.num_actions):
                c = int(kept_tree.children[b, j, a])
                old_c = int(tree.children[b, old_ids[j], a])
                assert (c == UNEXPANDED) == (old_c < 0) and (c < 0 or int(kept_tree.node_tag[b, c]) == old_c)


def test_the_compiled_and_torch_subtrees_agree_on_every_field(wide_tree, monkeypatch):
    if not game_kernels.AVAILABLE:
        pytest.skip("numba is not available")
    tree = searched(batch=4, simulations=35, seed=3)
    taken = tree.root_visits().argmax(dim=1)
    taken[1] = NO_ACTION
    compiled, kept_compiled = subtree(tree, taken)
    monkeypatch.setattr(game_kernels, "AVAILABLE", False)
    reference, kept_reference = subtree(tree, taken)
    assert torch.equal(kept_compiled, kept_reference)
    for f in FIELDS + EXTRA:
        a, b = getattr(compiled, f.name), getattr(reference, f.name)
        assert (a is None and b is None) or (a.dtype == b.dtype and torch.equal(a, b)), f.name
    assert torch.equal(compiled.next_node, reference.next_node)


def test_replaced_rows_take_every_field_of_the_other_tree(wide_tree):
    tree = searched()
    other = searched(batch=2, seed=5)
    other.node_tag.add_(1000)
    replace_rows(tree, torch.tensor([2, 0]), other)
    for f in FIELDS + EXTRA:
        if getattr(tree, f.name) is None:
            continue
        assert torch.equal(getattr(tree, f.name)[[2, 0]], getattr(other, f.name)), f.name
    assert int(tree.node_tag[1, 0]) == 0 and int(tree.node_tag[0, 0]) == 1000


@pytest.mark.parametrize("rule", [UCB1(), PUCT()], ids=["ucb1", "puct"])
def test_the_compiled_walk_takes_every_field_by_name_and_searches_the_same(wide_tree, monkeypatch, rule):
    """The compiled walk receives the whole table as one record of named arrays (no argument list
    to extend): a compiled function reads and writes a new field through the record the walker
    passes, and the search is the same with the extra fields as without."""
    if not game_kernels.AVAILABLE:
        pytest.skip("numba is not available")
    from numba import njit

    @njit
    def write_depths(tree, capacity, next_node):  # a new statistic's compiled code: fields by name
        for b in range(next_node.shape[0]):
            for n in range(next_node[b]):
                up = tree.parent[b * capacity + n]
                tree.node_tag[b * capacity + n] = 0 if up < 0 else tree.node_tag[b * capacity + up] + 1

    roots = GAME.step(GAME.initial_state(3), torch.tensor([0, 4, 8]))

    def search(keep_priors):
        tree = new_tree(GAME, roots, 60, make_keys(2, 3), with_prior=keep_priors)
        simulate(tree, GAME, RolloutEvaluator(GAME), rule, 50, parallel=3)
        return tree

    wide = search(rule.uses_prior)
    record = search_kernels.tree_arrays(wide)
    assert record._fields == tuple(f.name for f in FIELDS + EXTRA)
    walker = search_kernels.Walker(wide, rule)
    assert walker.arrays is record and record.node_tag.base is not None  # a view of the tree's tensor
    # the walk and the bookkeeping were compiled for a record of these names: the table reached them whole
    for kernel in (search_kernels._gather, search_kernels._finish):
        assert any(getattr(t, "fields", None) == record._fields for signature in kernel.signatures for t in signature), \
            kernel
    write_depths(record, wide.capacity, wide.next_node.numpy())
    depth = torch.zeros(3, 60, dtype=torch.int16)
    for b in range(3):
        for n in range(1, int(wide.next_node[b])):
            depth[b, n] = depth[b, wide.parent[b, n]] + 1
    used = torch.arange(60).unsqueeze(0) < wide.next_node.unsqueeze(1)
    assert torch.equal(wide.node_tag[used], depth[used]) and bool((wide.node_tag[~used] == EMPTY).all())
    monkeypatch.setattr(tree_module, "Tree", PLAIN_TREE)
    plain = search(rule.uses_prior)
    assert not hasattr(plain, "node_tag")
    for f in FIELDS:
        a, b = getattr(wide, f.name), getattr(plain, f.name)
        assert (a is None and b is None) or torch.equal(a, b), f.name
    assert torch.equal(wide.next_node, plain.next_node) and int(wide.visits[:, ROOT].min()) == 50
