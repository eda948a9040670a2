"""KataGo's forced playouts and policy target pruning (Wu 2019, section 3.1).

In self-play, each root move c with prior P(c) that has been visited at all is given at least

    n_forced(c) = sqrt(k * P(c) * sum_c' N(c'))

visits (k = 2 in the paper): while such a move has fewer, the root selects it whatever its
PUCT score (`PUCT.forced_playouts`; the first such move in action order). A move never
visited is left to PUCT and the root's noise, as in KataGo (the paper: every child "that
has received any playouts"); forcing every legal move would spend most of a small budget
on one visit each. The visits
this adds are exploration, not the search's judgement, so the policy target takes them
out again (`prune_forced_visits`): the most visited move c* keeps its visits; from every
other move, up to n_forced(c) visits are taken away as long as its PUCT score with the
fewer visits stays below c*'s; a move left with a single visit is dropped altogether.
"""

from __future__ import annotations

import torch

from .settings import DEFAULTS


def forced_visits(prior: torch.Tensor, child_visits: torch.Tensor, k: float) -> torch.Tensor:
    """n_forced float [B, A] = sqrt(k * prior * the root's total child visits).

    prior, child_visits: float [B, A] (the root's prior, as the search used it, and its children's visits).
    """
    return torch.sqrt(k * prior * child_visits.sum(dim=1, keepdim=True))


def prune_forced_visits(
    child_visits: torch.Tensor,
    child_value_sum: torch.Tensor,
    prior: torch.Tensor,
    visits: torch.Tensor,
    *,
    k: float,
    c_init: float = DEFAULTS.c_init,
    c_base: float = DEFAULTS.c_base,
) -> torch.Tensor:
    """The root visits with forced playouts taken out: float [B, A] (whole numbers).

    child_visits, child_value_sum (the chooser's view, [-1, 1]), prior: float [B, A] at the
    root; visits: float [B], the root's own visits (PUCT's N). PUCT's scores are compared as
    `selection.PUCT.scores` computes them: q + 2 c(N) sqrt(N) P / (1 + n) with q on [-1, 1].
    For a move c with q(c) below c*'s score S*, its score drops to S* at
    n_eq = 2 c(N) sqrt(N) P(c) / (S* - q(c)) - 1 visits, so it keeps max(n - n_forced, n_eq)
    visits, rounded up and never more than it had (KataGo rounds up too).
    """
    n = child_visits
    parent = visits.clamp(min=1).unsqueeze(1)
    c = c_init + torch.log((parent + c_base + 1.0) / c_base)
    weight = 2.0 * c * torch.sqrt(parent)  # [B, 1]
    q = torch.where(n > 0, child_value_sum / n.clamp(min=1), torch.zeros_like(n))
    best = n.argmax(dim=1, keepdim=True)
    best_score = (q + weight * prior / (n + 1.0)).gather(1, best)  # S*, [B, 1]
    gap = best_score - q
    equal_score = torch.where(gap > 0, weight * prior / gap.clamp(min=1e-12) - 1.0, n)  # n_eq (n: no pruning)
    kept = torch.maximum(n - forced_visits(prior, n, k), equal_score).ceil().clamp(min=0).minimum(n)
    kept = torch.where(kept <= 1, torch.zeros_like(kept), kept)
    is_best = torch.zeros_like(n, dtype=torch.bool).scatter_(1, best, True)
    return torch.where(is_best, n, kept)
