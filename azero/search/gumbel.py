"""Gumbel AlphaZero's root: Gumbel-top-k sampling of m root moves, sequential halving over
them, the move to play and the improved-policy training target (Danihelka, Guez,
Schrittwieser & Silver, "Policy improvement by planning with Gumbel", ICLR 2022).

    tree = new_tree(game, roots, capacity=n + 1, keys=keys, root_prior=prior, root_value=value)
    result = gumbel_search(tree, game, evaluator, Gumbel(), n, gumbel_noise(keys, game.num_actions))
    result.action   # long [B]: the move to play
    result.policy   # float [B, A]: softmax(logits + sigma(completed Q)), the training target

Every simulation starts with a root move chosen here and continues below it with the
`Gumbel` rule (search/selection.py). The root's schedule is a table of visit counts, one
per simulation (`visit_schedule`): simulation k visits, among the root moves whose visit
count is the table's k-th entry, the one with the highest g + logits + sigma(q_hat).
Unvisited moves all have the same completed Q (the mixed value), so the first m
simulations visit the m best moves by g + logits, which is Gumbel-top-k sampling of m moves
without replacement; the later entries give the remaining half of them one more visit each
phase after phase, which is sequential halving. After the last simulation the move played
is the best by that score among the most visited moves. The noise g is Gumbel(0, 1) in
self-play (it explores, in place of Dirichlet noise) and zero to play the best move.

The schedule assumes the root's children start unvisited: search a fresh tree.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import torch

from games import Game
from games.random import uniform

from . import kernels
from .engine import Evaluator, simulate
from .selection import Gumbel, NodeView
from .tree import ROOT, Tree


def visit_schedule(considered: int, simulations: int) -> tuple[int, ...]:
    """The root visit count each simulation adds to, for `considered` moves and `simulations`
    simulations (length `simulations`).

    Sequential halving (Karnin, Koren & Somekh 2013) as the paper runs it: ceil(log2 m) phases;
    a phase that starts with c moves gives each of them max(1, floor(n / (ceil(log2 m) * c)))
    visits, round by round, then keeps the better half (at least 2); simulations left over at
    the end go on to the last two moves. With m = 4 and n = 8: 0 0 0 0 (each move once), 1 1
    2 2 (the better two moves twice more each). A single move takes every simulation.
    """
    if considered <= 1:
        return tuple(range(simulations))
    phases = math.ceil(math.log2(considered))
    sequence: list[int] = []
    level, width = 0, considered
    while len(sequence) < simulations:
        for _ in range(max(1, simulations // (phases * width))):
            sequence.extend([level] * width)
            level += 1
        width = max(2, width // 2)
    return tuple(sequence[:simulations])


@lru_cache(maxsize=64)
def _schedule_table(considered: int, simulations: int) -> torch.Tensor:
    """float [considered + 1, simulations]: row c is visit_schedule(c, simulations) (row 0 unused)."""
    return torch.tensor([visit_schedule(c, simulations) for c in range(considered + 1)], dtype=torch.float32)


def gumbel_noise(keys: torch.Tensor, actions: int) -> torch.Tensor:
    """Gumbel(0, 1) noise float [B, A], finite; row i depends only on keys[i] (long [B])."""
    u = uniform(keys, (keys.shape[0], actions), device=keys.device) + 2.0**-25
    # the largest draw, 1 - 2^-24 + 2^-25, rounds to 1.0 in float32 (a tie, to even), whose
    # noise would be +inf: an illegal move's score -inf + inf is NaN, which no argmax passes over
    return -torch.log(-torch.log(u.clamp(max=1.0 - 2.0**-24)))


def root_view(tree: Tree) -> NodeView:
    """The NodeView of every tree's root."""
    q_sign = tree.q_sign[:, ROOT]
    return NodeView(
        visits=tree.visits[:, ROOT],
        q=tree.value_sum[:, ROOT] / tree.visits[:, ROOT].clamp(min=1) * q_sign,
        child_visits=tree.child_visits[:, ROOT],
        child_value_sum=tree.child_value_sum[:, ROOT],
        prior=tree.prior[:, ROOT],
        legal=tree.legal[:, ROOT],
        uniform=None,
        raw_value=tree.raw_value[:, ROOT] * q_sign,
    )


def root_scores(tree: Tree, rule: Gumbel, gumbel: torch.Tensor) -> torch.Tensor:
    """float [B, A]: g + logits + sigma(q_hat) of each root move, -inf for illegal ones."""
    return (rule.logits(root_view(tree)) + gumbel).masked_fill(~tree.legal[:, ROOT], -math.inf)


def _best_with_visits(scores: torch.Tensor, child_visits: torch.Tensor, target: torch.Tensor,
                      legal: torch.Tensor) -> torch.Tensor:
    """long [B]: the highest-scoring legal move among those with `target` (float [B]) visits; a
    row with no such move (not reached by the schedule) takes its best move."""
    candidate = (child_visits == target.unsqueeze(1)) & legal
    masked = scores.masked_fill(~candidate, -math.inf)
    return torch.where(candidate.any(dim=1), masked.argmax(dim=1), scores.argmax(dim=1))


def considered_counts(legal: torch.Tensor, considered: int) -> torch.Tensor:
    """long [B]: the moves sequential halving considers at each root, min(m, legal moves)."""
    return legal.sum(dim=1).clamp(max=considered)


def chosen_action(tree: Tree, rule: Gumbel, gumbel: torch.Tensor) -> torch.Tensor:
    """long [B]: the move to play, the best by g + logits + sigma(q_hat) among the most visited root moves."""
    visits, legal = tree.child_visits[:, ROOT], tree.legal[:, ROOT]
    most = visits.masked_fill(~legal, -1.0).amax(dim=1)
    return _best_with_visits(root_scores(tree, rule, gumbel), visits, most, legal)


def root_action(tree: Tree, rule: Gumbel, gumbel: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """long [B]: the root move of the next simulation, the best by g + logits + sigma(q_hat)
    among the legal moves with `target` (float [B], the schedule's entry) visits."""
    if kernels.supports_tree(tree) and gumbel.device.type == "cpu":
        return kernels.gumbel_root_actions(tree, rule, gumbel, target)
    return _best_with_visits(root_scores(tree, rule, gumbel), tree.child_visits[:, ROOT], target, tree.legal[:, ROOT])


def improved_policy(tree: Tree, rule: Gumbel) -> torch.Tensor:
    """float [B, A]: the training target softmax(logits + sigma(completed Q)) at each root."""
    return rule.improved_policy(root_view(tree))


@dataclass(frozen=True)
class GumbelResult:
    """action: long [B], the move to play; policy: float [B, A], the improved policy (target)."""

    action: torch.Tensor
    policy: torch.Tensor
    tree: Tree


def gumbel_search(
    tree: Tree,
    game: Game,
    evaluator: Evaluator,
    rule: Gumbel,
    simulations: int,
    gumbel: torch.Tensor,
    *,
    considered: int = 16,
    chunk: int = 32,
    on_progress: Callable[[Tree], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> GumbelResult:
    """Run `simulations` simulations of Gumbel AlphaZero in each tree (fresh trees with priors
    and root values; in place) and return the move and the training target of each.

    gumbel: float [B, A], the root noise g (gumbel_noise; zeros for the best move); considered:
    m, the root moves sampled. `on_progress(tree)` is called and `should_stop()` asked after
    every `chunk` simulations; a search stopped early plays the best of its most visited moves.
    """
    if tree.prior is None:
        raise ValueError("a Gumbel search needs a tree with priors (new_tree(with_prior=True))")
    if simulations < 1 or considered < 1:
        raise ValueError(f"a Gumbel search needs simulations >= 1 and considered >= 1, not {simulations}, {considered}")
    if bool((tree.child_visits[:, ROOT] > 0).any()):
        raise ValueError("a Gumbel search starts from fresh trees (its schedule counts the root's visits from 0)")
    table = _schedule_table(considered, simulations).to(tree.visits.device)
    counts = considered_counts(tree.legal[:, ROOT], considered)
    done = 0

    def next_root_action() -> torch.Tensor:
        nonlocal done
        done += 1
        return root_action(tree, rule, gumbel, table[counts, done - 1])

    while True:
        simulate(tree, game, evaluator, rule, min(chunk, simulations - done), root_action=next_root_action)
        if on_progress is not None:
            on_progress(tree)
        if done >= simulations or (should_stop is not None and should_stop()):
            break
    return GumbelResult(chosen_action(tree, rule, gumbel), improved_policy(tree, rule), tree)


def deadline_stop(seconds: float | None, should_stop: Callable[[], bool] | None) -> Callable[[], bool] | None:
    """A `should_stop` that also says yes once `seconds` have passed from now (None if neither is given)."""
    if seconds is None:
        return should_stop
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() >= deadline or (should_stop is not None and bool(should_stop()))
