"""Selection rules: which action to follow at an inner node, for all B trees at once.

A rule sees a `NodeView` of one node per tree and returns an action per tree.
Values given to rules are in [-1, 1] from the view of the player choosing; the
rules here score on the [0, 1] scale of the classic papers (win = 1, draw = 0.5,
loss = 0), so their constants mean what they meant there.

Pending visits: a leaf-parallel step (search/engine.py) walks one tree several times
before any of the leaves it found is evaluated, and the node view then carries the
descents still in flight (`pending`, `child_pending`). UCB1 and PUCT count them two ways:
as visits that lost (`virtual_loss=True`, as KataGo's search threads do: the child's
mean drops and its exploration bonus shrinks) or as visits only (`virtual_loss=False`,
the pending counts of WU-UCT, Liu et al. 2020: the bonus shrinks, the mean stays). UCB1
counts them as lost by default, PUCT as visits only: with a network, virtual loss cost
30-150 Elo at equal simulations where the pending-count form kept the sequential
search's strength (docs/benchmarks.md, "One game at full speed"). A
child whose only visits are in flight is not untried (UCB1) and has no mean of its own
without virtual loss (UCB1 counts it a draw; PUCT gives it the first-play urgency).
Without pending visits (None, or all zero) the scores are exactly the sequential ones.
Gumbel's search walks one leaf per tree at a time (its root schedule is sequential).

Proofs (search/proofs.py): every rule scores a child proven lost for the chooser -inf, as an
illegal move (`drop_lost`; NodeView.lost); whether a search proves anything is the search's
choice (engine.simulate's `solver`), not the rule's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from games.keyed_random import random_true

from .forced import forced_visits
from .settings import DEFAULTS, MAX_C_BASE, MAX_C_INIT, MAX_C_SCALE, MAX_C_VISIT, MAX_FORCED_PLAYOUTS, MAX_FPU_REDUCTION

# The largest constants the rules take. Beyond them a search is no longer the algorithm (every
# choice one term's) and its float32 arithmetic overflows to inf and NaN; the config, the player
# specs and the rules themselves refuse larger values, naming these limits (PUCT's and Gumbel's,
# with their defaults, are the search settings' own: search/settings.py).
MAX_C = 100.0  # UCB1's c (sqrt(2) by default; the survey's tuned values are below 2)
LOWEST_SCORE = torch.finfo(torch.float32).min  # a legal move's score at worst: an illegal one's is -inf


def legal_scores(scores: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """float [B, A]: `scores` with NaN and -inf raised to LOWEST_SCORE where `legal` (bool [B, A])
    and -inf elsewhere, in place: an argmax then picks a legal move whatever the arithmetic gave,
    as the compiled loops do (kernels._legal_score)."""
    return scores.nan_to_num_(nan=LOWEST_SCORE, posinf=math.inf, neginf=LOWEST_SCORE).masked_fill_(~legal, -math.inf)


def check_range(rule: str, name: str, value: float, low: float, high: float, *, low_open: bool = False) -> None:
    """ValueError naming the rule's constant and its allowed range unless low <= value <= high."""
    if not (low < value <= high if low_open else low <= value <= high):
        raise ValueError(f"{rule} needs {'0 <' if low_open else f'{low:g} <='} {name} <= {high:g}, not {value!r}")


class NodeView(NamedTuple):
    """One node of each of B trees.

    visits:          float [B]     simulations through the node
    q:               float [B]     the node's mean value for the player choosing there (0 if unvisited)
    child_visits:    float [B, A]
    child_value_sum: float [B, A]  chooser's view
    prior:           float [B, A] or None
    legal:           bool  [B, A]
    uniform:         float [B]     one uniform random number per tree for tie-breaks
    active:          bool  [B]     the trees whose choice is used (None: all); a rule may
                                   return anything in range for the others
    pending:         float [B] or None     descents in flight through the node (None: none anywhere)
    child_pending:   float [B, A] or None  descents in flight through each child
    raw_value:       float [B] or None  the evaluator's value of the node for the player
                                   choosing there (trees with priors)
    root:            bool          the node is each tree's root
    lost:            bool  [B, A] or None  the children proven lost for the chooser (search/proofs.py):
                                   never chosen (None: none is)
    """

    visits: torch.Tensor
    q: torch.Tensor
    child_visits: torch.Tensor
    child_value_sum: torch.Tensor
    prior: torch.Tensor | None
    legal: torch.Tensor
    uniform: torch.Tensor
    active: torch.Tensor | None = None
    pending: torch.Tensor | None = None
    child_pending: torch.Tensor | None = None
    raw_value: torch.Tensor | None = None
    root: bool = False
    lost: torch.Tensor | None = None


def drop_lost(scores: torch.Tensor, view: NodeView) -> torch.Tensor:
    """`scores` (float [B, A]) with the children proven lost for the chooser at -inf, as illegal
    moves, in place (the solver's; an unproven node always has a move that is not lost)."""
    return scores if view.lost is None else scores.masked_fill_(view.lost, -math.inf)


def _with_pending(view: NodeView, virtual_loss: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(parent visits N + O [B], child visits n + o [B, A], child value sums with the pending
    visits counted as losses if `virtual_loss` [B, A], completed child visits n [B, A])."""
    if view.child_pending is None:
        return view.visits, view.child_visits, view.child_value_sum, view.child_visits
    o = view.child_pending
    value_sum = view.child_value_sum - o if virtual_loss else view.child_value_sum
    return view.visits + view.pending, view.child_visits + o, value_sum, view.child_visits


@dataclass(frozen=True)
class UCB1:
    """UCB1 (Kocsis & Szepesvari 2006): mean + c * sqrt(ln N / n), untried actions first in random order.

    Means are win rates on [0, 1] (draw 0.5); c = sqrt(2) by default.
    """

    c: float = math.sqrt(2.0)
    virtual_loss: bool = True
    uses_prior = False
    uses_uniform = True

    def __post_init__(self):
        check_range("UCB1", "c", self.c, 0.0, MAX_C)

    def scores(self, view: NodeView) -> torch.Tensor:
        """float [B, A]: the UCB1 value of each tried action, -inf for untried and illegal ones."""
        parent_n, child_n, value_sum, done = _with_pending(view, self.virtual_loss)
        n = child_n.clamp(min=1)
        mean = 0.5 * (value_sum / (n if self.virtual_loss else done.clamp(min=1)) + 1.0)
        explore = self.c * torch.sqrt(torch.log(parent_n.clamp(min=1)).unsqueeze(1) / n)
        return drop_lost(legal_scores(mean + explore, child_n > 0), view)  # tried => legal

    def select(self, view: NodeView) -> torch.Tensor:
        untried = view.child_visits == 0
        if view.child_pending is not None:
            untried &= view.child_pending == 0
        untried &= view.legal
        has_untried = untried.any(dim=1)
        # Most nodes below the root still have untried moves, and roots soon have none:
        # skip the half of the work that no tree needs (two syncs, cheap on a CPU).
        # Trees whose path has ended (not active) need no answer: count them with either side.
        if bool(has_untried.all()) or (view.active is not None and bool((has_untried | ~view.active).all())):
            return random_true(untried, view.uniform)[0]
        best = self._best_tried(view)
        if not bool(has_untried.any()):
            return best
        return torch.where(has_untried, random_true(untried, view.uniform)[0], best)

    def _best_tried(self, view: NodeView) -> torch.Tensor:
        """argmax of `scores` as 2 * score - 1 = W / n + 2c sqrt(ln N) / sqrt(n) (the same order,
        fewer operations over [B, A]: this runs at every level of every simulation)."""
        parent_n, child_n, value_sum, done = _with_pending(view, self.virtual_loss)
        n = child_n.clamp(min=1)
        weight = torch.log(parent_n.clamp(min=1)).sqrt_().mul_(2.0 * self.c).unsqueeze(1)
        score = torch.addcmul(value_sum / (n if self.virtual_loss else done.clamp(min=1)), weight, n.rsqrt_())
        return drop_lost(legal_scores(score, child_n > 0), view).argmax(dim=1)



@dataclass(frozen=True)
class PUCT:
    """AlphaZero's PUCT: Q + c(N) * P * sqrt(N) / (1 + n), c(N) = c_init + log((N + c_base + 1) / c_base).

    Q is on [0, 1]. An unvisited child's Q is the first-play urgency: the node's
    own value for the chooser minus `fpu_reduction` (clamped to [0, 1]).
    N counts the node's own evaluation, so it is at least 1.

    With `forced_playouts` k > 0 (KataGo's forced playouts, search/forced.py), a visited root
    move with fewer visits than sqrt(k * P * the root's child visits) is chosen before any other
    (the first such move in action order); the pending visits of a leaf-parallel step count
    as visits there (`_forced`).
    """

    c_init: float = DEFAULTS.c_init
    c_base: float = DEFAULTS.c_base
    fpu_reduction: float = DEFAULTS.fpu_reduction
    virtual_loss: bool = False
    forced_playouts: float = DEFAULTS.forced_playouts
    uses_prior = True
    uses_uniform = False

    def __post_init__(self):
        # c(N) must stay above 0 in float32 (it divides the value term): c_init >= 0 and c_base
        # within (0, MAX_C_BASE], beyond which c(N) is c_init at any visit count a tree holds
        check_range("PUCT", "c_init", self.c_init, 0.0, MAX_C_INIT)
        check_range("PUCT", "c_base", self.c_base, 0.0, MAX_C_BASE, low_open=True)
        check_range("PUCT", "fpu_reduction", self.fpu_reduction, 0.0, MAX_FPU_REDUCTION)
        check_range("PUCT", "forced_playouts", self.forced_playouts, 0.0, MAX_FORCED_PLAYOUTS)

    def _forced(self, view: NodeView, n: torch.Tensor) -> torch.Tensor | None:
        """bool [B, A]: the root moves visited but short of their forced visits (None: none can be).

        A move no walk has entered yet is not forced: as in KataGo, forcing tops up the moves
        PUCT (or the root's noise) chose once, else every legal move would take a visit of
        the budget in action order.

        n: float [B, A], the children's visits counting the pending ones (n + o). In a
        leaf-parallel step a walk in flight counts towards its move's forced visits (and the
        total they are drawn from), so the K walks of one step do not all go to the same
        forced move: they spread as they would over K sequential simulations.
        """
        if not (view.root and self.forced_playouts > 0):
            return None
        return (n > 0) & (n < forced_visits(view.prior, n, self.forced_playouts)) & view.legal

    def scores(self, view: NodeView) -> torch.Tensor:
        """float [B, A]: twice the PUCT score minus 1 (the same order; computed on the [-1, 1]
        scale with the constants doubled, which saves operations), -inf for illegal actions."""
        parent_n, n, value_sum, done = _with_pending(view, self.virtual_loss)
        parent_n = parent_n.clamp(min=1)
        c = self.c_init + torch.log((parent_n + (self.c_base + 1.0)) / self.c_base)
        weight = (2.0 * c * torch.sqrt(parent_n)).unsqueeze(1)
        fpu = (view.q - 2.0 * self.fpu_reduction).clamp(-1.0, 1.0).unsqueeze(1)
        counted = n if self.virtual_loss else done
        q = torch.where(counted > 0, value_sum / counted.clamp(min=1), fpu)
        score = legal_scores(q + weight * view.prior / (n + 1.0), view.legal)
        forced = self._forced(view, n)
        return drop_lost(score if forced is None else score.masked_fill(forced, math.inf), view)

    def select(self, view: NodeView) -> torch.Tensor:
        """argmax of `scores`, computed as score / w with w = 2 c(N) sqrt(N) > 0 per tree (the same
        order), in fewer tensor operations: this runs at every level of every simulation."""
        parent_n, n, value_sum, done = _with_pending(view, self.virtual_loss)
        parent_n = parent_n.clamp(min=1)
        w = torch.log1p((parent_n + 1.0) * (1.0 / self.c_base)).add_(self.c_init)
        w = w.mul_(parent_n.sqrt()).mul_(2.0).unsqueeze(1)
        fpu = (view.q - 2.0 * self.fpu_reduction).clamp_(-1.0, 1.0).unsqueeze(1) / w
        counted = n if self.virtual_loss else done
        exploit = torch.where(counted > 0, value_sum / (counted * w), fpu)  # 0/0 where n = 0 is not taken
        score = legal_scores(exploit.add_(view.prior / (n + 1.0)), view.legal)
        forced = self._forced(view, n)
        if forced is not None:
            score.masked_fill_(forced, math.inf)
        return drop_lost(score, view).argmax(dim=1)


# -- Gumbel AlphaZero (Danihelka, Guez, Schrittwieser & Silver, ICLR 2022) -------------------------
# The root's part (Gumbel-top-k sampling, sequential halving, the move and the training
# target) is in search/gumbel.py; below is what the root and the other nodes share.

_TINY = torch.finfo(torch.float32).tiny
RESCALE_EPSILON = 1e-8  # the smallest max - min sigma divides by when rescaling (as mctx)


def prior_logits(prior: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """float [B, A]: logits of the prior (log-probabilities), finite for every legal action
    (a prior that underflowed to 0 gives log of float32's smallest normal), -inf for illegal ones."""
    return torch.log(prior.clamp(min=_TINY)).masked_fill_(~legal, -math.inf)


def mixed_value(raw_value: torch.Tensor, child_visits: torch.Tensor, child_value_sum: torch.Tensor,
                prior: torch.Tensor) -> torch.Tensor:
    """float [B]: the paper's mixed value approximation (its appendix D), the value of the
    visited actions' prior-weighted Q blended with the evaluator's own value of the node:

        v_mix = (v + sum_b N(b) * sum_{a visited} p(a) q(a) / sum_{a visited} p(a)) / (1 + sum_b N(b))

    raw_value: float [B] (v); the others float [B, A]; all from the chooser's view.
    """
    visited = child_visits > 0
    weight = torch.where(visited, prior.clamp(min=_TINY), torch.zeros_like(prior))
    q = child_value_sum / child_visits.clamp(min=1)
    weighted_q = (weight * q).sum(dim=1) / weight.sum(dim=1).clamp(min=_TINY)  # 0 where nothing is visited
    total = child_visits.sum(dim=1)
    return (raw_value + total * weighted_q) / (1.0 + total)


def completed_q(raw_value: torch.Tensor, child_visits: torch.Tensor, child_value_sum: torch.Tensor,
                prior: torch.Tensor) -> torch.Tensor:
    """float [B, A] in [-1, 1], chooser's view: each visited action's mean value, and the mixed
    value (`mixed_value`) for the actions not visited."""
    value = mixed_value(raw_value, child_visits, child_value_sum, prior).unsqueeze(1)
    q = child_value_sum / child_visits.clamp(min=1)
    return torch.where(child_visits > 0, q, value)


def sigma(q: torch.Tensor, child_visits: torch.Tensor, c_visit: float, c_scale: float,
          legal: torch.Tensor | None = None, rescale: bool = False) -> torch.Tensor:
    """float [B, A]: the paper's monotone transform of Q, (c_visit + max_b N(b)) * c_scale * q_hat,
    with q_hat = (1 + q) / 2 the value on [0, 1] (win 1, draw 0.5, loss 0); with `rescale`,
    q_hat = (q - min) / (max - min) with the min and max over the legal actions' q (mctx's
    default, which pairs it with c_scale 0.1): the best move 1 and the worst 0 however close
    their values, 0 for all where they are equal.

    q: float [B, A] in [-1, 1]; child_visits: float [B, A] (N, the node's children's visits);
    legal: bool [B, A], needed with `rescale`.
    """
    scale = (c_visit + child_visits.amax(dim=1, keepdim=True)) * c_scale
    if not rescale:
        return scale * (0.5 * (q + 1.0))
    if legal is None:
        raise ValueError("sigma's rescale needs the legal actions")
    low = q.masked_fill(~legal, math.inf).amin(dim=1, keepdim=True)
    high = q.masked_fill(~legal, -math.inf).amax(dim=1, keepdim=True)
    q_hat = (q - low) / (high - low).clamp(min=RESCALE_EPSILON)
    return scale * torch.where(legal, q_hat, torch.zeros_like(q_hat))


@dataclass(frozen=True)
class Gumbel:
    """Gumbel AlphaZero's selection below the root (the paper's section 5): the action whose
    share of the node's visits lags most behind the improved policy
    pi' = softmax(logits + sigma(completed Q)),

        argmax_a  pi'(a) - N(a) / (1 + sum_b N(b)),

    deterministic, with the mixed value (NodeView.raw_value) completing the Q of unvisited
    actions. At the root, search/gumbel.py's sequential halving chooses instead; used at the
    root too (a search without that schedule), it is the same rule there.

    c_visit, c_scale: sigma's constants (`sigma`), the paper's defaults; rescale: sigma's q_hat
    min-max normalised over the node's legal actions (`sigma`).
    """

    c_visit: float = DEFAULTS.c_visit
    c_scale: float = DEFAULTS.c_scale
    rescale: bool = DEFAULTS.rescale_q
    uses_prior = True
    uses_uniform = False

    def __post_init__(self):
        check_range("Gumbel", "c_visit", self.c_visit, 0.0, MAX_C_VISIT)
        check_range("Gumbel", "c_scale", self.c_scale, 0.0, MAX_C_SCALE)

    def logits(self, view: NodeView) -> torch.Tensor:
        """float [B, A]: logits + sigma(completed Q), -inf for illegal actions (pi' is their softmax)."""
        if view.raw_value is None:
            raise ValueError("Gumbel selection needs a tree with priors and raw values (new_tree(with_prior=True))")
        q = completed_q(view.raw_value, view.child_visits, view.child_value_sum, view.prior)
        return prior_logits(view.prior, view.legal) + sigma(q, view.child_visits, self.c_visit, self.c_scale,
                                                            view.legal, self.rescale)

    def improved_policy(self, view: NodeView) -> torch.Tensor:
        """float [B, A]: pi' = softmax(logits + sigma(completed Q)) over the legal actions."""
        return torch.softmax(self.logits(view), dim=1).nan_to_num_(0.0)

    def scores(self, view: NodeView) -> torch.Tensor:
        """float [B, A]: pi'(a) - N(a) / (1 + sum_b N(b)), -inf for illegal actions."""
        share = view.child_visits / (1.0 + view.child_visits.sum(dim=1, keepdim=True))
        return drop_lost(legal_scores(self.improved_policy(view) - share, view.legal), view)

    def select(self, view: NodeView) -> torch.Tensor:
        return self.scores(view).argmax(dim=1)
