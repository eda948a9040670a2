"""Final-move criteria: which root action to play once the search budget is spent.

From the MCTS survey (Browne et al. 2012, section 3.3.3, after Schadd 2009 and
Chaslot et al. 2008):

* max:        the child with the highest mean value
* robust:     the most visited child (the default)
* max-robust: the child that has both the most visits and the highest mean; when no
              child has both, the survey says to search on; `choose` then reports that
              through `needs_more` and falls back to robust when the caller cannot
* secure:     the child with the highest lower confidence bound, mean - c * sqrt(ln N / n)

Means are win rates on [0, 1] from the view of the player to move at the root.

Ties between equally visited children (common when a budget of a few hundred
iterations is spread over dozens of moves) go to the higher mean, unless the
caller passes `created`, the node index of each root child: then the child
expanded first wins the tie, as in the classic algorithm (the mcts.ai code and
our scalar reference take the first most-visited child in expansion order, which
plain UCT makes random). Plain UCT uses that; breaking ties by mean makes
`uct:100` on 8x8 gomoku play like the classic algorithm at about 400 iterations.
"""

from __future__ import annotations

import math

import torch

from .selection import legal_scores

CRITERIA = ("robust", "max", "max-robust", "secure")


def _ranked(primary: torch.Tensor, secondary: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """argmax of primary, ties broken by secondary; illegal actions never chosen, whatever the
    arithmetic gave (NaN or infinite scores rank lowest among the legal). -> long [B]"""
    score = primary + 1e-6 * torch.tanh(secondary.nan_to_num(nan=0.0))
    return legal_scores(score, legal).argmax(dim=1)


def _first_most_visited(visits: torch.Tensor, created: torch.Tensor, visited: torch.Tensor) -> torch.Tensor:
    """The most visited child, ties to the lowest node index (expanded first). -> long [B]"""
    span = int(created.max()) + 2 if created.numel() else 1
    key = visits.long() * span + (span - 1 - created)
    return key.masked_fill(~visited, -1).argmax(dim=1)


def child_means(visits: torch.Tensor, value_sum: torch.Tensor) -> torch.Tensor:
    """float [B, A] win rates on [0, 1] (0 for unvisited children)."""
    mean = 0.5 * (value_sum / visits.clamp(min=1) + 1.0)
    return torch.where(visits > 0, mean, torch.zeros_like(mean))


def max_robust_exists(visits: torch.Tensor, value_sum: torch.Tensor) -> torch.Tensor:
    """bool [B]: some child has both the most visits and the highest mean."""
    mean = child_means(visits, value_sum).masked_fill(visits == 0, -1.0)
    both = (visits == visits.amax(dim=1, keepdim=True)) & (mean == mean.amax(dim=1, keepdim=True))
    return both.any(dim=1)


def choose(
    criterion: str, visits: torch.Tensor, value_sum: torch.Tensor, *, c: float = math.sqrt(2.0),
    created: torch.Tensor | None = None,
) -> torch.Tensor:
    """The root action per tree by `criterion`. visits, value_sum: float [B, A] (chooser's view) -> long [B].

    created: long/int [B, A] the node index of each root child (-1 if none); given, the
    robust child's ties go to the child expanded first instead of the higher mean."""
    visited = visits > 0
    mean = child_means(visits, value_sum)
    if criterion == "robust" and created is not None:
        return _first_most_visited(visits, created.long(), visited)
    if criterion == "robust":
        return _ranked(visits, mean, visited)
    if criterion == "max":
        return _ranked(mean, visits, visited)
    if criterion == "max-robust":
        masked = mean.nan_to_num(nan=-1.0).masked_fill_(~visited, -1.0)
        both = (visits == visits.amax(dim=1, keepdim=True)) & (masked == masked.amax(dim=1, keepdim=True))
        fallback = _ranked(visits, mean, visited)
        return torch.where(both.any(dim=1), both.to(torch.int8).argmax(dim=1), fallback)
    if criterion == "secure":
        total = visits.sum(dim=1, keepdim=True)
        bound = mean - c * torch.sqrt(torch.log(total.clamp(min=1)) / visits.clamp(min=1))
        return _ranked(bound, visits, visited)
    raise ValueError(f"unknown final-move criterion {criterion!r}; choose one of: {', '.join(CRITERIA)}")
