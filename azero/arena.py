"""Matches between any two players: many games at once, alternating who starts, with Elo.

    result = play_match(game, make("uct:400", game), make("uct:100", game), num_games=200)
    print(result.table())

Game i is started by player A when i is even and by B when i is odd. Every game
has its own random keys, so a game's moves do not depend on the batch it ran in.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
from tqdm import tqdm

from games import Game, NO_ACTION
from games.random import fold, make_keys

from .elo import match_elo
from .players import Player


@dataclass
class MatchResult:
    """The outcome of a match of A against B (scores from A's view)."""

    game: str
    a: str
    b: str
    games: int
    a_wins: int
    b_wins: int
    draws: int
    a_wins_first: int  # games A won when it moved first
    b_wins_first: int  # games B won when it moved first
    seconds: float
    plies: int

    @property
    def a_score(self) -> float:
        return (self.a_wins + 0.5 * self.draws) / self.games if self.games else 0.0

    @property
    def elo(self) -> tuple[float, tuple[float, float]]:
        return match_elo(self.a_wins, self.draws, self.b_wins)

    def to_dict(self) -> dict:
        elo, (low, high) = self.elo
        out = asdict(self)
        out.update(a_score=self.a_score, elo_diff=elo, elo_ci95=[low, high])
        return out

    def table(self) -> str:
        elo, (low, high) = self.elo
        width = max(len(self.a), len(self.b), 6)
        rows = [
            f"{self.game}: {self.games} games, {self.seconds:.1f} s",
            f"{'player':<{width}}  {'wins':>5}  {'as first':>8}  {'draws':>5}  {'score':>6}",
            f"{self.a:<{width}}  {self.a_wins:>5}  {self.a_wins_first:>8}  {self.draws:>5}  {self.a_score:>6.1%}",
            f"{self.b:<{width}}  {self.b_wins:>5}  {self.b_wins_first:>8}  {self.draws:>5}  {1 - self.a_score:>6.1%}",
            f"Elo of A over B: {elo:+.0f}  (95% interval {low:+.0f} .. {high:+.0f})",
        ]
        return "\n".join(rows)


def play_match(
    game: Game,
    player_a: Player,
    player_b: Player,
    num_games: int,
    *,
    seed: int = 0,
    batch: int | None = None,
    device="cpu",
    progress: bool = True,
    description: str | None = None,
) -> MatchResult:
    """Play `num_games` games of A against B, `batch` at a time (all at once by default)."""
    if num_games < 1:
        raise ValueError("a match needs at least one game")
    batch = batch or num_games
    start = time.perf_counter()
    totals = dict(a_wins=0, b_wins=0, draws=0, a_wins_first=0, b_wins_first=0, plies=0)
    bar = tqdm(total=num_games, desc=description or f"{player_a.spec} vs {player_b.spec}", unit="game",
               disable=not progress, leave=False)
    for first in range(0, num_games, batch):
        ids = torch.arange(first, min(first + batch, num_games), device=device)
        results, plies = _play_batch(game, player_a, player_b, ids, seed, device, bar)
        a_first = ids % 2 == 0
        a_sign = torch.where(a_first, 1.0, -1.0)
        a_result = results * a_sign
        totals["a_wins"] += int((a_result > 0).sum())
        totals["b_wins"] += int((a_result < 0).sum())
        totals["draws"] += int((a_result == 0).sum())
        totals["a_wins_first"] += int(((a_result > 0) & a_first).sum())
        totals["b_wins_first"] += int(((a_result < 0) & ~a_first).sum())
        totals["plies"] += plies
    bar.close()
    return MatchResult(game=game.spec, a=player_a.spec, b=player_b.spec, games=num_games,
                       seconds=time.perf_counter() - start, **totals)


def _play_batch(game, player_a, player_b, ids, seed, device, bar) -> tuple[torch.Tensor, int]:
    """Play games `ids` to the end; returns (results from the first player's view, plies played)."""
    n = ids.numel()
    keys = fold(make_keys(seed, num_games_key := int(ids.max()) + 1, device)[ids], 0)
    del num_games_key
    seat_a = (ids % 2).long()  # A moves first (seat 0) in even games
    for p in (player_a, player_b):
        p.reset()
    state = game.initial_state(n, device)
    ply, plies = 0, 0
    done_before = 0
    while not bool(state.done.all()):
        action = torch.full((n,), NO_ACTION, dtype=torch.long, device=device)
        for tag, (player, seat) in enumerate(((player_a, seat_a), (player_b, 1 - seat_a))):
            rows = (~state.done & (state.to_play == seat)).nonzero().squeeze(1)
            if rows.numel():
                action[rows] = player.act(state[rows], keys=fold(fold(keys[rows], tag + 1), ply))
        plies += int((~state.done).sum())
        state = game.step(state, action)
        ply += 1
        done_now = int(state.done.sum())
        bar.update(done_now - done_before)
        done_before = done_now
    return game.result(state), plies
