"""Whole searches: a fixed number of simulations (`search`), or a budget of simulations, time
or both (`search_with_budget`), the tree growing as the simulations add nodes."""

from __future__ import annotations

import torch

from games import Game, State

from . import memory
from .engine import Evaluator, Rule, simulate
from .tree import Tree, grow, new_tree, node_bytes, room_for

INITIAL_TREE_BYTES = 64 << 20  # a search's tree starts at most this big, then grows with its simulations
MIN_NODES = 64  # and holds at least this many nodes


def start_capacity(batch: int, per_node: int, needed: int) -> int:
    """The nodes a tree for `needed` starts with: all of them if they fit in INITIAL_TREE_BYTES,
    else what does (at least MIN_NODES); a search grows it as its simulations add nodes."""
    return min(needed, max(INITIAL_TREE_BYTES // (batch * per_node), MIN_NODES))


def search(
    game: Game,
    roots: State,
    evaluator: Evaluator,
    rule: Rule,
    num_simulations: int,
    keys: torch.Tensor,
    *,
    root_prior: torch.Tensor | None = None,
    extra_capacity: int = 0,
    reuse: Tree | None = None,
    parallel: int = 1,
    solver: bool = False,
    threat_nodes: int = 0,
) -> Tree:
    """Search each root with `num_simulations` simulations; returns the trees.

    roots: State [B] (unfinished games); keys: long [B] per-tree random keys;
    root_prior: float [B, A] (e.g. the network's policy with Dirichlet noise);
    extra_capacity: room for this many more nodes in the tree returned (for searching on);
    reuse: an earlier tree nobody reads any more, whose memory the new one may take;
    parallel: leaves gathered per tree for each evaluator call (search/engine.py);
    solver: prove results in the tree (MCTS-Solver, engine.simulate's `solver`).
    threat_nodes: the threat search at the roots first (engine.simulate's `threat_nodes`; 0 = off).

    A search that fits in INITIAL_TREE_BYTES gets its whole tree at once; a bigger one
    starts there and grows as its simulations add nodes, so its memory follows the
    simulations actually made. One that could outgrow the tree memory limit
    (search/memory.py) is refused before anything is allocated.
    """
    needed = num_simulations + 1 + extra_capacity
    with_prior = rule.uses_prior
    per_node = node_bytes(roots, game.num_actions, with_prior)
    memory.check_tree_size(roots.batch_size, needed, per_node)
    capacity = start_capacity(roots.batch_size, per_node, needed)
    tree = new_tree(game, roots, capacity=capacity, keys=keys, root_prior=root_prior, with_prior=with_prior,
                    reuse=reuse)
    done = 0
    while done < num_simulations:
        left = num_simulations - done
        room = tree.capacity - int(tree.next_node.max())  # each simulation adds at most one node a tree
        step = min(left, room)
        if step < min(left, MIN_NODES) and tree.capacity < needed:  # (nearly) full: grow
            tree = grow(tree, min(needed, 2 * tree.capacity))
            continue
        simulate(tree, game, evaluator, rule, step, parallel=parallel, solver=solver,
                 threat_nodes=threat_nodes)
        done += step
    if extra_capacity:
        tree = grow(tree, needed)
    return tree


def search_with_budget(
    game: Game,
    roots: State,
    evaluator: Evaluator,
    rule: Rule,
    keys: torch.Tensor,
    *,
    simulations: int | None = None,
    seconds: float | None = None,
    root_prior: torch.Tensor | None = None,
    chunk: int = 32,
    on_progress=None,
    should_stop=None,
    parallel: int = 1,
    reuse: Tree | None = None,
    solver: bool = False,
    threat_nodes: int = 0,
) -> Tree:
    """Search until `simulations` are done, or until `seconds` pass (at least one chunk; no
    chunk is begun that the last one's duration says would end past the deadline), or until
    `should_stop()` says so; the tree grows as needed. `on_progress(tree)` is called after
    every chunk (live analysis); a chunk is at least `parallel` simulations. `reuse`: an
    earlier tree nobody reads any more, whose memory (and size, if larger) the new one takes.
    solver: prove results in the tree (MCTS-Solver, engine.simulate's `solver`).
    threat_nodes: the threat search at the roots first (engine.simulate's `threat_nodes`; 0 = off).

    Memory (search/memory.py): simulations the tree memory limit cannot hold are refused
    before anything is allocated; a search bounded by time alone stops at the limit.
    """
    if simulations is None and seconds is None:
        raise ValueError("give simulations, seconds or both")
    import time

    deadline = None if seconds is None else time.monotonic() + seconds
    per_node = node_bytes(roots, game.num_actions, rule.uses_prior)
    if simulations is not None:
        memory.check_tree_size(roots.batch_size, simulations + 1, per_node)
    most = simulations + 1 if simulations is not None else memory.max_nodes(roots.batch_size, per_node)
    wanted = simulations + 1 if simulations is not None else 1024
    capacity = start_capacity(roots.batch_size, per_node, min(most, wanted))
    if reuse is not None and reuse.batch_size == roots.batch_size:  # a timed search's last tree: its size again
        capacity = max(capacity, min(most, reuse.capacity))
    tree = new_tree(game, roots, capacity, keys, root_prior=root_prior, with_prior=rule.uses_prior, reuse=reuse)
    done, chunk = 0, max(chunk, parallel)
    while True:
        step = chunk if simulations is None else min(chunk, simulations - done)
        if step <= 0:
            break
        tree = room_for(tree, step, most)
        step = min(step, tree.capacity - int(tree.next_node.max()))
        if step <= 0:  # at the memory limit: search no further
            break
        began = time.monotonic()
        simulate(tree, game, evaluator, rule, step, parallel=parallel, solver=solver,
                 threat_nodes=threat_nodes)
        done += step
        if on_progress is not None:
            on_progress(tree)
        now = time.monotonic()
        if deadline is not None and now + (now - began) >= deadline:
            break
        if should_stop is not None and should_stop():
            break
    return tree
