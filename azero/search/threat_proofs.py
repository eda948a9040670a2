"""The threat search (games/threats.py: victory by continuous fours, VCF) at the root of a search,
as proofs on the root's edges (search/proofs.py).

    check_roots(tree, game, max_nodes=20_000)   # engine.simulate's `threat_nodes` calls it

For each root of a k-in-a-row game not checked yet (the per-node `threats_checked`; a kept
subtree's new root is unchecked, so it is checked again), once per position whatever the number
of `simulate` calls (Gumbel makes one a chunk):

* `find_win` for the side to move: where it finds a VCF, its first move is proven WON, in the
  win's length in plies (the attacker's moves and the defender's forced replies); the root is
  then proven (settled).
* else `forced_defence`: where the opponent threatens a VCF and some moves stop it (DEFENDED),
  every legal move outside `moves` (after it the opponent completes a line or has a VCF) is
  proven LOST in the opponent's threat length + 1 plies (the move, then the threat as found
  with the side to move passing: an estimate of the loss's length, used only to order losses);
  where the side to move completes a line (WINS), those moves are proven WON in 1. LOST,
  UNKNOWN and NO_THREAT prove nothing. The delaying fours (`delaying`: after the forced block
  the opponent threatens again) are not proven lost: the side to move may still stop the
  renewed threat then, so they are not proven anything (the search weighs them as any move).

Both searches are exact within their bounds (tests/test_threats.py), so the proofs are as sure
as the solver's; `max_nodes` bounds each search's attacker moves (forced_defence's total is ten
times that). The proofs are written on root edges whether or not the child is expanded: the
edge's `child_plies` holds their plies, and a child expanded later takes them
(proofs.carry_edge_proofs).
"""

from __future__ import annotations

import torch

from games import Game, threats

from .proofs import LOST, UNKNOWN, WON, prove_root_moves
from .tree import ROOT, Tree


def check_roots(tree: Tree, game: Game, max_nodes: int, max_depth: int = 20) -> None:
    """Prove what the threat search finds at the roots of `tree` not checked yet (in place; the
    module's docstring says what). Nothing for games the threat search does not play or
    max_nodes 0."""
    if max_nodes <= 0 or not threats.supports(game):
        return
    unchecked = ~tree.threats_checked[:, ROOT]
    if not bool(unchecked.any()):
        return
    rows = unchecked.nonzero().squeeze(1)
    tree.threats_checked[rows, ROOT] = True
    rows = rows[tree.proof[rows, ROOT] == UNKNOWN]  # (a proven root needs nothing more)
    if rows.numel() == 0:
        return
    device = tree.visits.device
    states = tree.states.take(rows * tree.capacity + ROOT)
    legal = tree.legal[rows, ROOT]
    proof = torch.zeros_like(legal, dtype=torch.int8)
    plies = torch.zeros(legal.shape, dtype=torch.long, device=device)
    win = threats.find_win(game, states, max_depth=max_depth, max_nodes=max_nodes)
    found = (win.status.to(device) == threats.FOUND).nonzero().squeeze(1)
    if found.numel():
        first = win.action.to(device)[found]
        proof[found, first] = WON
        plies[found, first] = win.length.to(device)[found]
    rest = (win.status.to(device) != threats.FOUND).nonzero().squeeze(1)
    if rest.numel():
        guard = threats.forced_defence(game, states.take(rest), max_depth=max_depth, max_nodes=max_nodes,
                                       max_total_nodes=10 * max_nodes)
        status = guard.status.to(device)
        moves = guard.moves.to(device)  # (the delaying fours included: see the module's docstring)
        lost = (status == threats.DEFENDED).unsqueeze(1) & legal[rest] & ~moves & moves.any(dim=1, keepdim=True)
        won = (status == threats.WINS).unsqueeze(1) & moves & legal[rest]
        length = guard.threat_length.to(device).unsqueeze(1) + 1
        proof[rest] = torch.where(won, WON, torch.where(lost, LOST, UNKNOWN)).to(torch.int8)
        plies[rest] = torch.where(won, 1, torch.where(lost, length, 0))
    prove_root_moves(tree, rows, proof, plies)
