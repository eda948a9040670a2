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

from games import NO_ACTION, Game
from games.keyed_random import uniform

from . import kernels
from .engine import Evaluator, simulate
from .proofs import proven_target, respect_proofs
from .selection import Gumbel, NodeView, legal_scores
from .tree import ROOT, Tree, room_for


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


def _schedule_row(considered: int, simulations: int, start: int = 0,
                  stop: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """visit_schedule(considered, simulations)[start:stop] as a long tensor, built a phase
    at a time, and long, the same length: how many entries from each one on, itself
    included, have its value (what is left of its round).

    A phase of width w and r rounds is the block of levels level .. level + r - 1, each w
    times (torch.arange(level, level + r).repeat_interleave(w)), cut at `simulations`; entry
    i of the block has min(w - i % w, size - i) left of its round. Once the width is 2 (or a
    single move's 1) every later phase is alike, so the rest of the row is one block. Only
    the part of each block inside [start, stop) is built.
    """
    stop = simulations if stop is None else stop
    levels, runs = torch.empty(stop - start, dtype=torch.long), torch.empty(stop - start, dtype=torch.long)
    phases = math.ceil(math.log2(considered)) if considered > 1 else 1
    level, width, filled = 0, max(1, considered), 0
    while filled < stop:
        if width <= 2:  # this phase and every later one: rounds of the last moves to the end
            rounds = -(-(simulations - filled) // width)
        else:
            rounds = max(1, simulations // (phases * width))
        size = min(rounds * width, simulations - filled)
        low, high = max(filled, start), min(filled + size, stop)
        if low < high:
            i = torch.arange(low - filled, high - filled)
            levels[low - start:high - start] = level + i // width
            runs[low - start:high - start] = torch.minimum(width - i % width, size - i)
        filled += size
        level += rounds
        width = max(2, width // 2)
    return levels, runs


CACHED_TABLE_ENTRIES = 1 << 20  # tables up to this many entries (12 MB) are kept for the next search
SCHEDULE_WINDOW = 1 << 16  # columns of a larger table a search holds at once (13 MB at 16 moves)


def _kept(considered: int, simulations: int) -> bool:
    """Whether the schedule table of (considered, simulations) is small enough to keep whole."""
    return (considered + 1) * simulations <= CACHED_TABLE_ENTRIES


def _schedule_table(considered: int, simulations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """float [considered + 1, simulations]: row c is visit_schedule(c, simulations) (row 0
    unused); and long, the same shape: how many entries from each one on, itself included,
    have its value (what is left of its round).

    Its size is considered x simulations: callers ask for at most the game's action count
    of rows (gumbel_search), since no root considers more moves than it has. The 8 last
    small tables are kept (self-play asks for the same one every move); a larger one (an
    analysis request of millions of simulations) is built for its search alone, not held
    after it."""
    if _kept(considered, simulations):
        return _cached_schedule_table(considered, simulations)
    return _build_schedule_table(considered, simulations)


@lru_cache(maxsize=8)
def _cached_schedule_table(considered: int, simulations: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _build_schedule_table(considered, simulations)


def _build_schedule_table(considered: int, simulations: int, start: int = 0,
                          stop: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """_schedule_table's columns start .. stop - 1 (all of them by default)."""
    stop = simulations if stop is None else stop
    table = torch.empty((considered + 1, stop - start), dtype=torch.float32)
    runs = torch.empty((considered + 1, stop - start), dtype=torch.long)
    for c in range(considered + 1):
        table[c], runs[c] = _schedule_row(c, simulations, start, stop)
    return table, runs


def schedule_columns(considered: int, simulations: int, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The schedule table's columns start .. stop - 1: the whole table (kept when small), or a
    window of a large one (a search of millions of simulations holds SCHEDULE_WINDOW columns at
    a time, so one stopped by its deadline builds little of it)."""
    if start == 0 and stop == simulations:
        return _schedule_table(considered, simulations)
    return _build_schedule_table(considered, simulations, start, stop)


def gumbel_noise(keys: torch.Tensor, actions: int) -> torch.Tensor:
    """Gumbel(0, 1) noise float [B, A], finite; row i depends only on keys[i] (long [B])."""
    u = uniform(keys, (keys.shape[0], actions), device=keys.device) + 2.0**-25
    # the largest draw, 1 - 2^-24 + 2^-25, rounds to 1.0 in float32 (a tie, to even), whose
    # noise would be +inf: an illegal move's score -inf + inf is NaN, which no argmax passes over
    return -torch.log(-torch.log(u.clamp(max=1.0 - 2.0**-24)))


def root_view(tree: Tree, child_visits: torch.Tensor | None = None) -> NodeView:
    """The NodeView of every tree's root (with these child visits, float [B, A], if given)."""
    q_sign = tree.q_sign[:, ROOT]
    return NodeView(
        visits=tree.visits[:, ROOT],
        q=tree.value_sum[:, ROOT] / tree.visits[:, ROOT].clamp(min=1) * q_sign,
        child_visits=tree.child_visits[:, ROOT] if child_visits is None else child_visits,
        child_value_sum=tree.child_value_sum[:, ROOT],
        prior=tree.prior[:, ROOT],
        legal=tree.legal[:, ROOT],
        uniform=None,
        raw_value=tree.raw_value[:, ROOT] * q_sign,
    )


def root_scores(tree: Tree, rule: Gumbel, gumbel: torch.Tensor, child_visits: torch.Tensor | None = None
                ) -> torch.Tensor:
    """float [B, A]: g + logits + sigma(q_hat) of each root move, -inf for illegal ones (with
    these child visits, float [B, A], if given)."""
    return legal_scores(rule.logits(root_view(tree, child_visits)) + gumbel, tree.legal[:, ROOT])


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
    """long [B]: the move to play, the best by g + logits + sigma(q_hat) among the most visited root moves;
    where the root's moves are proven (search/proofs.py), the fastest win, else never a lost move
    while one is not lost (the best of the most visited such moves)."""
    visits, legal = tree.child_visits[:, ROOT], tree.legal[:, ROOT]
    most = visits.masked_fill(~legal, -1.0).amax(dim=1)
    scores = root_scores(tree, rule, gumbel)
    return respect_proofs(tree, _best_with_visits(scores, visits, most, legal), scores)


def round_actions(tree: Tree, rule: Gumbel, gumbel: torch.Tensor, target: torch.Tensor, lengths: torch.Tensor,
                  width: int, log_prior=None) -> torch.Tensor:
    """long [B, width]: the root moves of the next lengths[b] (long [B], at most width)
    simulations of tree b, all of one round of the schedule (each wants a move with `target`
    visits, float [B]), NO_ACTION after them. Walk j takes the best legal move by
    g + logits + sigma(q_hat) among those with `target` visits, the moves of walks 0..j-1
    counted as visited once more.

    The same moves as choosing before each simulation: a walk's move has target + 1 visits
    after it, so it is no candidate of the round's later walks, and its new value changes no
    other candidate's score but through the moves' completed Q without visits, alike for
    all of them (the mixed value); what does change, sigma's scale (the most visits of a
    move), is counted. So the round's walks can go to the network in one call. With the
    rule's `rescale`, sigma's min and max are those of the round's start: the later walks'
    moves may then differ from choosing before each simulation (the first round's do not).
    log_prior: the roots' log priors (kernels.root_log_prior), made once a search where it runs
    compiled (gumbel_search asks kernels.supports): the compiled rounds run when it is given.
    """
    if log_prior is not None:
        return kernels.gumbel_round_actions(tree, rule, gumbel, target, lengths, width, log_prior)
    visits, legal = tree.child_visits[:, ROOT].clone(), tree.legal[:, ROOT]
    rows = torch.arange(tree.batch_size, device=visits.device)
    out = torch.full((tree.batch_size, width), NO_ACTION, dtype=torch.long, device=visits.device)
    for j in range(int(lengths.max())):
        walking = lengths > j
        action = _best_with_visits(root_scores(tree, rule, gumbel, visits), visits, target, legal)
        out[:, j] = torch.where(walking, action, NO_ACTION)
        visits[rows, action] += walking.to(visits.dtype)
    return out


def improved_policy(tree: Tree, rule: Gumbel) -> torch.Tensor:
    """float [B, A]: the training target softmax(logits + sigma(completed Q)) at each root, the root's
    proofs applied (proofs.proven_target: all of it on the fastest wins; none on lost moves)."""
    return proven_target(tree, rule.improved_policy(root_view(tree)))


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
    parallel: int = 1,
    chunk: int = 32,
    on_progress: Callable[[Tree], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    solver: bool = False,
    threat_nodes: int = 0,
) -> GumbelResult:
    """Run `simulations` simulations of Gumbel AlphaZero in each tree (fresh trees with priors
    and root values) and return the move and the training target of each. The search is in
    place, but a tree with room for fewer than simulations + 1 nodes is replaced by a larger
    copy as it fills: read the searched trees from `result.tree`.

    gumbel: float [B, A], the root noise g (gumbel_noise; zeros for the best move); considered:
    m, the root moves sampled; parallel: the simulations of one round of the schedule (one
    each for several root moves) that go to the evaluator together, at most this many a tree
    (`round_actions`: the same search as one at a time). `on_progress(tree)` is called and
    `should_stop()` asked after every `chunk` simulations (at least `parallel`); a search
    stopped early plays the best of its most visited moves. solver: prove results in the tree
    (MCTS-Solver, engine.simulate's `solver`); the move returned and the policy follow the root's
    proofs (`chosen_action`, `improved_policy`). threat_nodes: the threat search at the roots first
    (engine.simulate's `threat_nodes`; 0 = off): its proofs steer the move and the policy alike.
    """
    if tree.prior is None:
        raise ValueError("a Gumbel search needs a tree with priors (new_tree(with_prior=True))")
    if simulations < 1 or considered < 1 or parallel < 1:
        raise ValueError("a Gumbel search needs simulations, considered and parallel >= 1, "
                         f"not {simulations}, {considered}, {parallel}")
    if bool((tree.child_visits[:, ROOT] > 0).any()):
        raise ValueError("a Gumbel search starts from fresh trees (its schedule counts the root's visits from 0)")
    # no root considers more moves than the game has (considered_counts): the table needs no more rows
    rows = min(considered, tree.legal.shape[-1])
    counts = considered_counts(tree.legal[:, ROOT], considered)
    done = torch.zeros(tree.batch_size, dtype=torch.long, device=tree.visits.device)  # each tree's simulations
    chunk = max(chunk, parallel)
    # the schedule's columns held: all of a small table, else a window from the first simulation of
    # a chunk on (every tree has made `searched` simulations when a chunk begins, fewer than
    # searched + step when it ends)
    width = simulations if _kept(rows, simulations) else max(SCHEDULE_WINDOW, chunk)
    first, table, runs = 0, None, None
    # the roots' priors stay as they are: the compiled rounds take their logarithms once
    log_prior = kernels.root_log_prior(tree) if kernels.supports(rule, tree, gumbel) else None

    def next_root_actions(budget: torch.Tensor) -> torch.Tensor:
        at = done.clamp(max=simulations - 1) - first  # (a tree with its simulations done has budget 0)
        lengths = torch.minimum(runs[counts, at], budget.to(done.device))  # what is left of each tree's round
        actions = round_actions(tree, rule, gumbel, table[counts, at], lengths, parallel, log_prior)
        done.add_(lengths)
        return actions

    searched = 0
    while True:
        step = min(chunk, simulations - searched)
        if table is None or searched + step > first + table.shape[1]:
            first = searched
            table, runs = (t.to(tree.visits.device)
                           for t in schedule_columns(rows, simulations, first, min(simulations, first + width)))
        tree = room_for(tree, step, simulations + 1)  # a tree that started small grows
        simulate(tree, game, evaluator, rule, step, parallel=parallel, root_action=next_root_actions, solver=solver,
                 threat_nodes=threat_nodes)
        searched += step
        if on_progress is not None:
            on_progress(tree)
        if searched >= simulations or (should_stop is not None and should_stop()):
            break
    return GumbelResult(chosen_action(tree, rule, gumbel), improved_policy(tree, rule), tree)


def deadline_stop(seconds: float | None, should_stop: Callable[[], bool] | None) -> Callable[[], bool] | None:
    """A `should_stop` that also says yes once `seconds` have passed from now (None if neither is given)."""
    if seconds is None:
        return should_stop
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() >= deadline or (should_stop is not None and bool(should_stop()))
