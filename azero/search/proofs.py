"""Proven results in the search tree: MCTS-Solver (Winands, Björnsson & Saito 2008; OpenSpiel's
mcts.py has one too), in the torch form; search/kernels.py has the compiled twin.

Each node may hold a proof (search.tree's `proof`, from the view of the player who moved into
it, like `value_sum`) and the plies from it to the end of the game (`proof_plies`); the edge
into it holds the same proof at its parent (`child_proof`, the chooser's view there):

    UNKNOWN 0, LOST 1, DRAWN 2, WON 3    (the value is proof - 2; the other side's is 4 - proof)

A finished game is proven by its result (0 plies). A node is proven once a child is won for
the player choosing there (the fastest such win: its plies + 1), or once all its legal moves
are expanded and proven (a draw if any is drawn, the fastest; else lost, the slowest loss). A
search with the solver on (each rule's `solver`, the search setting `solver`) records the
finished games it reaches and settles their ancestors at once; every search then treats
whatever proofs its tree holds alike: a walk that reaches a proven node stops there and backs
up the proven value, selection never picks a child proven lost while the node is unproven
(such a node always has a move that is not lost), and the move played and the policy target
follow the root's proofs (`allowed_moves`).

The proof of a node is a function of its children's proofs only, so settling the nodes a step
proved one after another (the compiled form) or level by level (here) ends in the same tree.
"""

from __future__ import annotations

import torch

from .selection import legal_scores

UNKNOWN, LOST, DRAWN, WON = 0, 1, 2, 3
_FAR = 1 << 30  # more plies than any game lasts


def terminal_proofs(result: torch.Tensor, mover: torch.Tensor) -> torch.Tensor:
    """int8 [n]: the proofs of finished games, their mover's view; result: float [n], the first
    player's view; mover: float [n], +1 where the first player moved into the node, else -1."""
    value = result * mover
    return torch.where(value > 0, WON, torch.where(value < 0, LOST, DRAWN)).to(torch.int8)


def node_proofs(child_proof: torch.Tensor, child_plies: torch.Tensor, legal: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """The proofs of nodes from their children's, the chooser's view: (int8 [k], plies long [k]),
    UNKNOWN (0 plies) where unproven. child_proof: int8 [k, A]; child_plies: [k, A] (read where
    proven); legal: bool [k, A]."""
    plies = child_plies.long()
    won, drawn, lost = child_proof == WON, child_proof == DRAWN, child_proof == LOST
    any_won, any_drawn = won.any(dim=1), drawn.any(dim=1)
    settled = ((child_proof != UNKNOWN) | ~legal).all(dim=1) & legal.any(dim=1)
    win = torch.where(won, plies, _FAR).amin(dim=1) + 1
    draw = torch.where(drawn, plies, _FAR).amin(dim=1) + 1
    loss = torch.where(lost, plies, -1).amax(dim=1) + 1
    proof = torch.where(any_won, WON, torch.where(settled, torch.where(any_drawn, DRAWN, LOST), UNKNOWN))
    count = torch.where(any_won, win, torch.where(settled, torch.where(any_drawn, draw, loss), 0))
    return proof.to(torch.int8), count


def record_finished(tree, flat: torch.Tensor) -> None:
    """Prove the finished games at nodes `flat` (long [n], b * N + node; their mover's signs and
    results written) and settle their ancestors (`settle`)."""
    if flat.numel() == 0:
        return
    proof = terminal_proofs(tree.terminal_value.view(-1)[flat], tree.mover_sign.view(-1)[flat])
    tree.proof.view(-1).index_copy_(0, flat, proof)
    tree.proof_plies.view(-1).index_fill_(0, flat, 0)
    _mark_edges(tree, flat, proof)
    settle(tree, flat)


def _mark_edges(tree, flat: torch.Tensor, proof: torch.Tensor) -> None:
    """The proofs `proof` (int8 [n]) of nodes `flat` on the edges into them, with their plies
    (`proof_plies`, written first; none for a root)."""
    capacity, actions = tree.capacity, tree.num_actions
    parent = tree.parent.view(-1)[flat]
    has = parent >= 0
    if not bool(has.all()):
        flat, parent, proof = flat[has], parent[has], proof[has]
    edge = (flat - flat % capacity + parent) * actions + tree.action.view(-1)[flat]
    tree.child_proof.view(-1).index_copy_(0, edge, proof)
    tree.child_plies.view(-1).index_copy_(0, edge, tree.proof_plies.view(-1)[flat])


def settle(tree, flat: torch.Tensor) -> None:
    """The ancestors of the newly proven nodes `flat` (long [n]) proven where their children now
    prove them, level by level until no proof changes (the compiled form: kernels._settle)."""
    capacity = tree.capacity
    parent = tree.parent.view(-1)[flat]
    has = parent >= 0
    _resettle(tree, torch.unique(flat[has] - flat[has] % capacity + parent[has]))


def _resettle(tree, nodes: torch.Tensor) -> None:
    """Nodes `nodes` (long [n], flat, distinct) proven where their children's proofs (the edges'
    `child_proof` and `child_plies`) prove them, then their parents, and so on while proofs change.
    The chooser's sign is the mover into a proven child where it is expanded; at an edge not
    expanded (the threat search's proofs at a root) the other side of the node's mover."""
    capacity, actions = tree.capacity, tree.num_actions
    while nodes.numel():
        child_proof = tree.child_proof.view(-1, actions)[nodes]
        children = tree.children.view(-1, actions)[nodes].long()
        base = (nodes - nodes % capacity).unsqueeze(1)
        proof, plies = node_proofs(child_proof, tree.child_plies.view(-1, actions)[nodes],
                                   tree.legal.view(-1, actions)[nodes])
        # the chooser's sign: the mover into a proven child (expanded ones first)
        proven = child_proof != UNKNOWN
        pick = (proven.to(torch.int8) * 2 + (proven & (children >= 0)).to(torch.int8)).argmax(dim=1, keepdim=True)
        child = children.gather(1, pick).squeeze(1)
        node_sign = tree.mover_sign.view(-1)[nodes]
        chooser = torch.where(child >= 0, tree.mover_sign.view(-1)[base.squeeze(1) + child.clamp(min=0)], -node_sign)
        same = chooser == node_sign
        proof = torch.where(same | (proof == UNKNOWN), proof, 4 - proof).to(torch.int8)
        changed = (proof != UNKNOWN) & ((proof != tree.proof.view(-1)[nodes])
                                        | (plies != tree.proof_plies.view(-1)[nodes].long()))
        nodes, proof, plies = nodes[changed], proof[changed], plies[changed]
        tree.proof.view(-1).index_copy_(0, nodes, proof)
        tree.proof_plies.view(-1).index_copy_(0, nodes, plies.to(tree.proof_plies.dtype))
        _mark_edges(tree, nodes, proof)
        parent = tree.parent.view(-1)[nodes]
        has = parent >= 0
        nodes = torch.unique(nodes[has] - nodes[has] % capacity + parent[has])


def carry_edge_proofs(tree, flat: torch.Tensor) -> None:
    """New nodes `flat` (long [n], their parent links written) take the proofs their edges held
    before they were expanded (a threat search's at a root: a walk that Gumbel's imposed root
    actions send there stops at the node as at any proven one; the compiled form: kernels._record)."""
    actions = tree.num_actions
    edge = (flat - flat % tree.capacity + tree.parent.view(-1)[flat]) * actions + tree.action.view(-1)[flat]
    proof = tree.child_proof.view(-1)[edge]
    known = proof != UNKNOWN
    if bool(known.any()):
        tree.proof.view(-1)[flat[known]] = proof[known]
        tree.proof_plies.view(-1)[flat[known]] = tree.child_plies.view(-1)[edge[known]]


def prove_root_moves(tree, rows: torch.Tensor, proof: torch.Tensor, plies: torch.Tensor) -> None:
    """Proofs of root moves found outside the tree (the threat search's: search/threat_proofs.py)
    written on the root edges of trees `rows` (long [n]): proof int8 [n, A] (the player to move's
    view; UNKNOWN where nothing is known), plies [n, A] (the move included). An edge proven
    already keeps its proof. The roots are then settled (a root with a won move is proven)."""
    if rows.numel() == 0:
        return
    old = tree.child_proof[rows, 0]
    new = (proof != UNKNOWN) & (old == UNKNOWN)
    tree.child_proof[rows, 0] = torch.where(new, proof.to(old.dtype), old)
    tree.child_plies[rows, 0] = torch.where(new, plies.to(tree.child_plies.dtype) - 1, tree.child_plies[rows, 0])
    touched = rows[new.any(dim=1)]
    _resettle(tree, touched * tree.capacity)


def proven_value(proof: torch.Tensor) -> torch.Tensor:
    """float: the value of proofs (int8; proven ones), their own view: +1 won, 0 drawn, -1 lost."""
    return (proof.float() - DRAWN)


# -- the root's moves ------------------------------------------------------------------------------


def root_proofs(tree) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 [B, A], long [B, A]): each root move's proof for the player to move (UNKNOWN where
    unproven or unexpanded) and the plies to the end of the game after it, the move included
    (0 where unproven)."""
    proof = tree.child_proof[:, 0]
    plies = tree.child_plies[:, 0].long() + 1
    return proof, torch.where(proof != UNKNOWN, plies, torch.zeros_like(plies))


def allowed_moves(proof: torch.Tensor, plies: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """bool [B, A]: the root moves the proofs allow: the fastest wins where a move wins; else the
    legal moves not proven lost, where there are any; else the slowest losses."""
    won, lost = proof == WON, (proof == LOST) & legal
    fastest = won & (plies == torch.where(won, plies, _FAR).amin(dim=1, keepdim=True))
    slowest = lost & (plies == torch.where(lost, plies, -1).amax(dim=1, keepdim=True))
    open_moves = legal & ~lost
    return torch.where(won.any(dim=1, keepdim=True), fastest,
                       torch.where(open_moves.any(dim=1, keepdim=True), open_moves, slowest))


def respect_proofs(tree, action: torch.Tensor, scores: torch.Tensor | None = None) -> torch.Tensor:
    """long [B]: `action` where the root's proofs allow it (`allowed_moves`), else the most visited
    allowed move, ties to the highest of `scores` (float [B, A]; the prior where the tree has
    one), then the first."""
    proof, plies = root_proofs(tree)
    if not bool((proof != UNKNOWN).any()):
        return action
    legal, visits = tree.legal[:, 0], tree.child_visits[:, 0]
    allowed = allowed_moves(proof, plies, legal)
    kept = allowed.gather(1, action.clamp(min=0).unsqueeze(1)).squeeze(1) & (action >= 0)
    most = visits.masked_fill(~allowed, -1.0).amax(dim=1, keepdim=True)
    candidates = allowed & (visits == most)
    if scores is None:
        scores = tree.prior[:, 0] if tree.prior is not None else torch.zeros_like(visits)
    fallback = legal_scores(scores.clone(), candidates).argmax(dim=1)
    return torch.where(kept, action, fallback)


def proven_target(tree, policy: torch.Tensor) -> torch.Tensor:
    """float [B, A]: a root's policy target with its proofs applied: all of it on the fastest
    winning moves (evenly) where a move wins; else the moves proven lost get none and the rest
    is renormalised (evenly over the moves not lost if they had none; over the slowest losses if
    every move loses). Rows without proven moves are `policy` as it is."""
    proof, plies = root_proofs(tree)
    if not bool((proof != UNKNOWN).any()):
        return policy
    allowed = allowed_moves(proof, plies, tree.legal[:, 0])
    wins = (proof == WON).any(dim=1, keepdim=True)
    kept = torch.where(allowed, policy, torch.zeros_like(policy))
    even = allowed.to(policy.dtype)
    mass = kept.sum(dim=1, keepdim=True)
    target = torch.where(wins | (mass <= 0), even / even.sum(dim=1, keepdim=True).clamp(min=1),
                         kept / mass.clamp(min=1e-30))
    touched = (proof != UNKNOWN).any(dim=1, keepdim=True)
    return torch.where(touched, target, policy)


def proof_words(proof: int, plies: int) -> str | None:
    """The words for a proven move: "wins in N", "loses in N", "draws in N" (N plies to the end
    of the game, the move included); None for an unproven one. The one place that words them."""
    if proof == WON:
        return f"wins in {plies}"
    if proof == LOST:
        return f"loses in {plies}"
    if proof == DRAWN:
        return f"draws in {plies}"
    return None
