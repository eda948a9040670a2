"""Elo from match results: one pair (with a 95% interval), or a ladder of many players.

Scores count a win 1, a draw 1/2, a loss 0.  For one pair the interval is the
Wilson score interval on the score, mapped to Elo; it stays finite when one side
won every game (the point estimate then uses a score clipped half a game from the
edge).  For several players `ladder` fits a Bradley-Terry model by maximum
likelihood (the MM algorithm of Hunter 2004) with one virtual draw per pair that
met, as a weak prior that keeps perfect scores finite; intervals come from the
observed Fisher information with the anchor held fixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)
Z95 = 1.959963984540054
MAX_GAMES = 1_000_000  # games in one match; more is a mistyped count (the 95% interval is already +-0.1%)
MAX_OPENING_PLIES = 1000  # random plies opening a match game; longer ones end most games before the players move


def elo_from_score(score: float) -> float:
    """The Elo difference whose expected score is `score` (0 < score < 1)."""
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_interval(score: float, games: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a mean score over `games` games."""
    if games == 0:
        return 0.0, 1.0
    denom = 1.0 + z * z / games
    centre = (score + z * z / (2 * games)) / denom
    half = z / denom * math.sqrt(score * (1.0 - score) / games + z * z / (4 * games * games))
    return max(0.0, centre - half), min(1.0, centre + half)


def match_elo(wins: int, draws: int, losses: int) -> tuple[float, tuple[float, float]]:
    """(Elo difference, (low, high) 95% interval) of a player who scored wins/draws/losses."""
    games = wins + draws + losses
    if games == 0:
        return 0.0, (-math.inf, math.inf)
    score = (wins + 0.5 * draws) / games
    edge = 0.5 / games
    point = elo_from_score(min(max(score, edge), 1.0 - edge))
    low, high = score_interval(score, games)
    to_elo = lambda s: -math.inf if s <= 0 else math.inf if s >= 1 else elo_from_score(s)  # noqa: E731
    return point, (to_elo(low), to_elo(high))


@dataclass
class Rating:
    name: str
    elo: float
    low: float
    high: float
    games: int


def ladder(results: list[tuple[str, str, float, int]], anchor: str, anchor_elo: float = 0.0) -> dict[str, Rating]:
    """Bradley-Terry Elo of every player from (a, b, a's total score, games) records.

    Players not connected to the anchor by games get no rating (they are left out).
    """
    names = sorted({r[0] for r in results} | {r[1] for r in results})
    if anchor not in names:
        raise ValueError(f"anchor {anchor!r} played no games")
    index = {n: i for i, n in enumerate(names)}
    k = len(names)
    games = np.zeros((k, k))
    score = np.zeros((k, k))  # score[i, j]: points i took from j
    for a, b, s, n in results:
        i, j = index[a], index[b]
        games[i, j] += n
        games[j, i] += n
        score[i, j] += s
        score[j, i] += n - s
    met = games > 0
    played = games.sum(axis=1)
    games = games + met  # one virtual draw per pair that met
    score = score + 0.5 * met
    # keep the players connected to the anchor
    connected = {index[anchor]}
    frontier = [index[anchor]]
    while frontier:
        i = frontier.pop()
        for j in np.nonzero(met[i])[0]:
            if j not in connected:
                connected.add(int(j))
                frontier.append(int(j))
    keep = sorted(connected)
    played = played[keep]
    games, score = games[np.ix_(keep, keep)], score[np.ix_(keep, keep)]
    names = [names[i] for i in keep]
    a = names.index(anchor)
    gamma = np.ones(len(keep))
    wins = score.sum(axis=1)
    for _ in range(10000):
        denom = (games / (gamma[:, None] + gamma[None, :])).sum(axis=1)
        new = wins / denom
        new /= new[a]
        if np.max(np.abs(np.log(new) - np.log(gamma))) < 1e-10:
            gamma = new
            break
        gamma = new
    theta = np.log(gamma)
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i beats j)
    w = games * p * (1.0 - p)
    info = np.diag(w.sum(axis=1)) - w
    free = [i for i in range(len(keep)) if i != a]
    cov = np.zeros((len(keep), len(keep)))
    if free:
        cov[np.ix_(free, free)] = np.linalg.inv(info[np.ix_(free, free)])
    out = {}
    for i, name in enumerate(names):
        elo = anchor_elo + theta[i] * ELO_PER_NAT
        half = Z95 * math.sqrt(max(cov[i, i], 0.0)) * ELO_PER_NAT
        out[name] = Rating(name, float(elo), float(elo - half), float(elo + half), int(played[i]))
    return out
