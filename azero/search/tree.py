"""The search tree of B independent searches, held in preallocated arrays.

Node 0 (`ROOT`) of each tree is its root; every simulation adds at most one node.  Values
follow one sign convention, written here once:

    a node's value is from the view of the player who moved into it
    (for the root: the opponent of the player to move at the root).

`value_sum` and `child_value_sum` add up values in [-1, 1] (+1 = a win for that
player), so a child's mean is directly the payoff of choosing it for the player
who chooses at its parent.  Leaf evaluations arrive from the first player's view
(a game result) and are turned into each node's view by `mover_sign`.

Every per-node [B, N] and per-edge [B, N, A] array is declared once, in `FIELDS`, with
its dtype and the value of an unused node. Allocation, growth, subtree reuse and row
replacement (here, and in the compiled subtree of search/subtree_kernels.py) follow the table,
and the compiled walks take the tree as one record of the table's names (`Tree.Arrays`,
search.kernels.tree_arrays), so a new array is one line there plus the code that reads and
writes it.
"""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass

import torch

from games import NO_ACTION, Game, State, player_sign

from . import kernels, memory, subtree_kernels

ROOT = 0  # every tree's root node
NO_PARENT = -1  # the parent of the root and of unused nodes
UNEXPANDED = -1  # the child of an edge not expanded yet
# Sentinels are negative and node ids never are: `x >= 0` tells a node. The root's action is NO_ACTION.


@dataclass(frozen=True)
class TreeField:
    """One array of the tree: per node [B, N], or per edge [B, N, A] (one entry per action).

    empty:       the value of unused nodes (all of a new tree's but the root, a kept subtree's spare slots)
    with_prior:  the array exists only in trees of rules that use priors (None in the others)
    node_ids:    the array holds node indices: renumbered when a subtree is kept, and `empty`
                 where they named a node left behind
    from_parent: the array describes the edge into the node: a new root holds `empty`
    at_parents:  (per edge) entries leave `empty` only in the rows of nodes that have a child:
                 a refilled tree clears those rows, not the whole array
    """

    name: str
    dtype: torch.dtype
    empty: float | int | bool
    per_edge: bool
    doc: str
    with_prior: bool = False
    node_ids: bool = False
    from_parent: bool = False
    at_parents: bool = False

    def shape(self, batch: int, nodes: int, actions: int) -> tuple[int, ...]:
        return (batch, nodes, actions) if self.per_edge else (batch, nodes)


def per_node(name: str, dtype: torch.dtype, empty, doc: str, **flags) -> TreeField:
    """A [B, N] array: one entry per node."""
    return TreeField(name, dtype, empty, False, doc, **flags)


def per_edge(name: str, dtype: torch.dtype, empty, doc: str, **flags) -> TreeField:
    """A [B, N, A] array: one entry per node and action."""
    return TreeField(name, dtype, empty, True, doc, **flags)


FIELDS: tuple[TreeField, ...] = (
    per_node("mover_sign", torch.float32, 0.0, "+1 if the first player moved into the node, else -1"),
    per_node("q_sign", torch.float32, 0.0, "turns the node's value into the view of the player to move there "
             "(written only in trees with priors: PUCT's first-play urgency)"),
    per_node("parent", torch.long, NO_PARENT, "parent node", node_ids=True, from_parent=True),
    per_node("action", torch.long, NO_ACTION, "action from the parent", from_parent=True),
    per_node("visits", torch.float32, 0.0, "simulations through the node"),
    per_node("value_sum", torch.float32, 0.0, "sum of values, the node's mover's view"),
    per_node("pending", torch.float32, 0.0, "descents in flight through the node (leaf-parallel steps; 0 between steps)"),
    per_node("terminal", torch.bool, False, "the game is over at the node"),
    per_node("terminal_value", torch.float32, 0.0, "the result there, first player's view"),
    per_node("proof", torch.int8, 0, "the node's proven result, its mover's view (search/proofs.py: 0 unknown, "
             "LOST 1, DRAWN 2, WON 3; set only by a search with the solver)"),
    per_node("proof_plies", torch.int16, 0, "plies from the node to the end of the game where proven"),
    per_node("threats_checked", torch.bool, False, "the threat search has proven what it can of the node's moves "
             "(roots only: search/threat_proofs.py)", from_parent=True),
    per_edge("legal", torch.bool, False, "legal actions at the node"),
    per_edge("children", torch.int32, UNEXPANDED, "child node per action", node_ids=True, at_parents=True),
    per_edge("child_visits", torch.float32, 0.0, "visits of each child (0 if not expanded)", at_parents=True),
    per_edge("child_value_sum", torch.float32, 0.0, "value sums of each child, chooser's view", at_parents=True),
    per_edge("child_proof", torch.int8, 0, "each child's proof (its mover's: the chooser's view)", at_parents=True),
    per_edge("child_plies", torch.int16, 0, "each proven child's proof_plies (readable where the child is not "
             "expanded: a threat search's proofs at the root)", at_parents=True),
    per_edge("prior", torch.float32, 0.0, "policy prior at the node", with_prior=True),
    per_node("raw_value", torch.float32, 0.0, "the evaluator's value of the node, mover's view "
             "(Gumbel's mixed value)", with_prior=True),
)


class TreeMethods:
    """What a Tree has besides its arrays: sizes and root summaries."""

    FIELDS: tuple[TreeField, ...]

    @property
    def batch_size(self) -> int:
        return self.visits.shape[0]

    @property
    def capacity(self) -> int:
        return self.visits.shape[1]

    @property
    def num_actions(self) -> int:
        return self.legal.shape[2]

    def root_visits(self) -> torch.Tensor:
        """float [B, A]: visits of each root action."""
        return self.child_visits[:, ROOT]

    def root_q(self) -> torch.Tensor:
        """float [B, A]: mean value of each root action for the player to move (0 where unvisited)."""
        n = self.child_visits[:, ROOT]
        return torch.where(n > 0, self.child_value_sum[:, ROOT] / n.clamp(min=1), torch.zeros_like(n))

    def root_value(self) -> torch.Tensor:
        """float [B]: the search's value of the root for the player to move there, in [-1, 1]; a
        proven root's exact value (search/proofs.py; the threat search may prove one before any
        of its moves is visited)."""
        n = self.child_visits[:, ROOT].sum(dim=1)
        total = self.child_value_sum[:, ROOT].sum(dim=1)
        mean = torch.where(n > 0, total / n.clamp(min=1), torch.zeros_like(n))
        proof = self.proof[:, ROOT]  # (its mover's view: the other side's; DRAWN is 2)
        return torch.where(proof != 0, 2.0 - proof.float(), mean)

    def principal_variation(self, index: int, max_length: int = 20) -> list[int]:
        """The most visited line from the root of tree `index` (actions)."""
        line, node = [], ROOT
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


def tree_type(fields: tuple[TreeField, ...]) -> type:
    """The Tree dataclass of a field table: `states`, one tensor per field, `next_node`, `keys`."""
    lines = [f"  {'states':<16} State [B * N]  the position at each node (flat: tree b, node n -> b * N + n)"]
    for f in fields:
        dtype, shape = str(f.dtype).removeprefix("torch."), "[B, N, A]" if f.per_edge else "[B, N]"
        lines.append(f"  {f.name:<16} {dtype} {shape}  {f.doc}; unused: {f.empty}"
                     + (" (None in trees without priors)" if f.with_prior else ""))
    lines.append(f"  {'next_node':<16} int64 [B]  index of the next free node")
    lines.append(f"  {'keys':<16} int64 [B]  per-tree random keys (games/keyed_random.py)")
    arrays = [(f.name, "torch.Tensor | None" if f.with_prior else "torch.Tensor") for f in fields]
    # the compiled loops' view of a tree (search.kernels.tree_arrays): one numpy array per field, by name
    record = collections.namedtuple("Arrays", [f.name for f in fields])
    cls = dataclasses.make_dataclass(
        "Tree",
        [("states", "State"), *arrays, ("next_node", "torch.Tensor"), ("keys", "torch.Tensor")],
        bases=(TreeMethods,),
        namespace={"FIELDS": fields, "Arrays": record},
        eq=False,
    )
    cls.__module__ = record.__module__ = __name__
    record.__qualname__ = "Tree.Arrays"  # (numba's disk cache finds the class of the module's Tree by this name)
    cls.__doc__ = "Arrays of B trees with room for N nodes each and A actions.\n\n" + "\n".join(lines)
    return cls


Tree = tree_type(FIELDS)


def new_tree(
    game: Game,
    roots: State,
    capacity: int,
    keys: torch.Tensor,
    root_prior: torch.Tensor | None = None,
    with_prior: bool = True,
    reuse: Tree | None = None,
    root_value: torch.Tensor | None = None,
) -> Tree:
    """An empty tree for each root (B roots, `capacity` nodes, root at node ROOT).

    roots: State [B] of unfinished games; keys: long [B]; root_prior: float [B, A]
    (probabilities; uniform over legal actions if None); with_prior: keep priors at all;
    root_value: float [B], the evaluator's value of the roots, first player's view (0 if None).
    reuse: an earlier tree that nobody reads any more; arrays of the right shape are
    refilled in place instead of allocated (a refill is cheaper than a fresh allocation's first touch).
    """
    batch, nodes, actions = roots.batch_size, capacity, game.num_actions
    device = roots.device
    if bool(roots.done.any()):
        raise ValueError("search was asked to search a finished game")
    memory.check_tree_size(batch, nodes, node_bytes(roots, actions, with_prior))
    states = _refill_states(reuse.states, roots, nodes) if reuse is not None else None
    if states is None:
        states = roots.repeat_interleave(nodes)
    arrays = {}
    parents = _parent_rows(reuse) if reuse is not None and reuse.parent.shape == (batch, nodes) else None
    for f in Tree.FIELDS:
        shape = f.shape(batch, nodes, actions)
        old = getattr(reuse, f.name, None)
        if f.with_prior and not with_prior:
            arrays[f.name] = None
        elif old is not None and old.shape == shape and old.dtype == f.dtype and old.device == device:
            # (most nodes of a search are leaves: their rows of these arrays were never written)
            arrays[f.name] = old.view(-1, actions).index_fill_(0, parents, f.empty).view(shape) if f.at_parents \
                else old.fill_(f.empty)
        else:
            arrays[f.name] = torch.full(shape, f.empty, dtype=f.dtype, device=device)
    for f in Tree.FIELDS:  # (a refill clears the rows of nodes with a child; a root's proven edges may have none)
        if f.at_parents and arrays[f.name] is not None:
            arrays[f.name][:, ROOT] = f.empty
    tree = Tree(states=states, next_node=torch.full((batch,), ROOT + 1, device=device), keys=keys.to(device), **arrays)
    tree.mover_sign[:, ROOT] = -player_sign(roots.to_play).float()
    tree.q_sign[:, ROOT] = -1.0
    tree.legal[:, ROOT] = game.legal_mask(roots)
    if tree.prior is not None:
        if root_prior is None:
            legal = tree.legal[:, ROOT]
            root_prior = legal.float() / legal.sum(dim=1, keepdim=True).clamp(min=1)
        tree.prior[:, ROOT] = root_prior
        if root_value is not None:
            tree.raw_value[:, ROOT] = root_value.to(device) * tree.mover_sign[:, ROOT]
    return tree


def _parent_rows(tree: Tree) -> torch.Tensor:
    """long [k]: the flat rows (b * N + n) of the nodes that have a child, each once."""
    batch, nodes = tree.parent.shape
    base = torch.arange(0, batch * nodes, nodes, device=tree.parent.device).unsqueeze(1)
    # the root's and unused nodes' NO_PARENT mark the extra last entry
    flat = torch.where(tree.parent >= 0, tree.parent + base, batch * nodes).view(-1)
    has_child = torch.zeros(batch * nodes + 1, dtype=torch.bool, device=flat.device).index_fill_(0, flat, True)
    return has_child[:-1].nonzero().squeeze(1)


def node_bytes(states: State, actions: int, with_prior: bool) -> int:
    """The bytes one node takes in a tree's arrays: its position and its entry in every field."""
    total = sum(torch.empty((), dtype=f.dtype).element_size() * (actions if f.per_edge else 1)
                for f in Tree.FIELDS if with_prior or not f.with_prior)
    for f in dataclasses.fields(states):
        array = getattr(states, f.name)
        total += array.numel() // max(array.shape[0], 1) * array.element_size()
    return total


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


def subtree(tree: Tree, actions: torch.Tensor) -> tuple[Tree, torch.Tensor]:
    """The subtrees under the root actions taken (long [B]), compacted into a tree of the same size.

    Returns (tree, kept bool [B]); where the child was never expanded or the action is
    NO_ACTION (kept False) the row is an empty tree and the caller must reset it with
    `replace_rows`. The kept child becomes node ROOT with its visits, values and priors; its
    descendants keep their order (so parents still come before children).
    """
    if kernels.supports(None, tree):
        old, count = subtree_kernels.subtree_nodes(tree.children, tree.parent, actions)
        gather = subtree_kernels.gather_nodes
    else:
        old, count = _subtree_nodes(tree, actions)
        gather = _gather_nodes
    fields = [f for f in type(tree).FIELDS if getattr(tree, f.name) is not None]
    gathered = gather([(getattr(tree, f.name), f.empty, f.node_ids) for f in fields], old, count)
    arrays = {f.name: None for f in type(tree).FIELDS}
    for f, array in zip(fields, gathered):
        if f.from_parent:
            array[:, ROOT] = f.empty
        arrays[f.name] = array
    batch, nodes = old.shape
    kept = count > 0
    flat_old = (torch.arange(batch, device=old.device).unsqueeze(1) * nodes + old).view(-1)
    new = type(tree)(
        states=tree.states.take(flat_old),
        next_node=torch.where(kept, count, ROOT + 1),
        keys=tree.keys.clone(),
        **arrays,
    )
    return new, kept


def _subtree_nodes(tree: Tree, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where the nodes of the subtrees under `actions` (long [B]) go (torch form).

    Returns old long [B, N], the old node of each new slot (the kept nodes in their order,
    then the others), and count long [B], the nodes kept (0 where the action is NO_ACTION
    or its child unexpanded).
    """
    batch, nodes = tree.batch_size, tree.capacity
    device = tree.parent.device
    rows = torch.arange(batch, device=device)
    new_root = tree.children[rows, ROOT, actions.clamp(min=0)].long()
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
    old = torch.where(member, index, index + nodes).argsort(dim=1)
    return old, member.sum(dim=1)


def _gather_nodes(fields, old: torch.Tensor, count: torch.Tensor) -> list[torch.Tensor]:
    """Each array of `fields`, a list of (array [B, N, ...], empty, node_ids), reordered along
    nodes: out[b, j] = array[b, old[b, j]] for j < count[b], `empty` after; with node_ids the
    values are node indices, renumbered to the new slots (`empty` for nodes left behind).
    The torch form of subtree_kernels.gather_nodes."""
    batch, nodes = old.shape
    slot = torch.arange(nodes, device=old.device).expand(batch, nodes)
    used = slot < count.unsqueeze(1)
    new_id = torch.empty_like(old).scatter_(1, old, torch.where(used, slot, -1))  # -1: left behind
    outs = []
    for array, empty, ids in fields:
        trailing = [1] * (array.dim() - 2)
        out = array.gather(1, old.view(batch, nodes, *trailing).expand(-1, -1, *array.shape[2:]))
        if ids:
            renumbered = new_id.gather(1, out.long().clamp(min=0).view(batch, -1)).view_as(out)
            out = torch.where((out >= 0) & (renumbered >= 0), renumbered, empty).to(array.dtype)
        empty = torch.as_tensor(empty, dtype=array.dtype, device=array.device)
        outs.append(torch.where(used.view(batch, nodes, *trailing), out, empty))
    return outs


def take_rows(tree: Tree, rows: torch.Tensor) -> Tree:
    """A copy of trees `rows` (long [n]) as a Tree of n rows (`replace_rows` puts them back)."""
    nodes = tree.capacity
    flat = (rows.unsqueeze(1) * nodes + torch.arange(nodes, device=rows.device)).view(-1)
    arrays = {f.name: None if getattr(tree, f.name) is None else getattr(tree, f.name).index_select(0, rows)
              for f in type(tree).FIELDS}
    return type(tree)(states=tree.states.take(flat), next_node=tree.next_node.index_select(0, rows),
                      keys=tree.keys.index_select(0, rows), **arrays)


def replace_rows(tree: Tree, rows: torch.Tensor, other: Tree) -> Tree:
    """In place: trees `rows` (long [n]) become the trees of `other` (a Tree of n rows, same capacity)."""
    nodes = tree.capacity
    for f in type(tree).FIELDS:
        array = getattr(tree, f.name)
        if array is not None:
            array.index_copy_(0, rows, getattr(other, f.name))
    tree.next_node.index_copy_(0, rows, other.next_node)
    tree.keys.index_copy_(0, rows, other.keys)
    flat = (rows.unsqueeze(1) * nodes + torch.arange(nodes, device=rows.device)).view(-1)
    tree.states.put_(flat, other.states)
    return tree


def room_for(tree: Tree, simulations: int, most: int) -> Tree:
    """The tree, or a grown copy, with room for `simulations` more simulations in every tree
    (each adds at most one node a tree) where `most` nodes a tree allow it: a tree that is too
    small doubles, or takes what the simulations need if that is more, up to `most`."""
    if int(tree.next_node.max()) + simulations > tree.capacity and tree.capacity < most:
        tree = grow(tree, min(most, max(2 * tree.capacity, tree.capacity + simulations)))
    return tree


def grow(tree: Tree, capacity: int) -> Tree:
    """The same trees with room for `capacity` nodes each (a copy; capacity >= the current one)."""
    old = tree.capacity
    if capacity <= old:
        return tree
    batch, extra = tree.batch_size, capacity - old
    memory.check_tree_size(batch, capacity, node_bytes(tree.states, tree.num_actions, tree.prior is not None))

    def widen(array, empty):
        if array is None:
            return None
        pad = torch.full((batch, extra, *array.shape[2:]), empty, dtype=array.dtype, device=array.device)
        return torch.cat([array, pad], dim=1)

    def widen_state(t):
        shaped = t.view(batch, old, *t.shape[1:])
        pad = shaped[:, :1].expand(batch, extra, *t.shape[1:])  # any valid position; overwritten when used
        return torch.cat([shaped, pad], dim=1).reshape(batch * capacity, *t.shape[1:])

    return type(tree)(
        states=tree.states._map(widen_state),
        next_node=tree.next_node.clone(),
        keys=tree.keys.clone(),
        **{f.name: widen(getattr(tree, f.name), f.empty) for f in type(tree).FIELDS},
    )
