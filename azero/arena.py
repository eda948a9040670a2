"""Matches between any two players: many games at once, alternating who starts, with Elo.

    result = play_match(game, make("uct:400", game), make("uct:100", game), num_games=200)
    print(result.table())

Game i is started by player A when i is even and by B when i is odd. Every game
has its own random keys, so a game's moves do not depend on the batch it ran in.

A player may resign a game (its action is `players.RESIGN`): the game ends as a
loss for it. Players that play one game at a time (external GTP engines) get
their games one by one. With `record_moves=True` the result keeps every game's
moves (`MatchResult.records`, e.g. for SGF files: azero.sgf.write_match).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import torch
from tqdm import tqdm

from games import NO_ACTION, Game, sample_uniform_legal
from games.random import fold, keys_of

from .elo import match_elo
from .errors import UserError
from .player import RESIGN, Player


@dataclass
class GameRecord:
    """One game of a match: who moved first, the moves, how it ended.

    actions:  the moves in order (passes included), without the resignation
    result:   +1 the first player won, -1 the second won, 0 draw
    resigned: the loser resigned after `actions`
    """

    first: str
    second: str
    actions: list[int]
    result: float
    resigned: bool = False


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
    records: list[GameRecord] | None = field(default=None, repr=False)  # with record_moves=True, game i at i

    @property
    def a_score(self) -> float:
        return (self.a_wins + 0.5 * self.draws) / self.games if self.games else 0.0

    @property
    def elo(self) -> tuple[float, tuple[float, float]]:
        return match_elo(self.a_wins, self.draws, self.b_wins)

    def to_dict(self) -> dict:
        """Plain values for JSON; an interval end that is unbounded (a clean sweep) is None (null)."""
        elo, (low, high) = self.elo
        out = asdict(self)
        out.pop("records")
        bound = lambda x: x if math.isfinite(x) else None  # noqa: E731
        out.update(a_score=self.a_score, elo_diff=elo, elo_ci95=[bound(low), bound(high)])
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


MAX_BATCH = 1024  # games played at once unless the caller says otherwise
MAX_GAMES_AT_ONCE = 65_536  # a batch's boards and trees live in memory together


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
    record_moves: bool = False,
    opening_plies: int = 0,
) -> MatchResult:
    """Play `num_games` games of A against B, `batch` at a time (by default all at once, up to
    MAX_BATCH; one at a time if a player plays one game at a time). `record_moves` keeps the moves.

    `opening_plies` random moves start every game, so that two deterministic players do
    not just repeat two games; games 2k and 2k + 1 share their opening, each player taking
    each side of it once, so a lopsided opening favours neither player.
    """
    if num_games < 1:
        raise ValueError("a match needs at least one game")
    if batch is not None and batch < 1:
        raise ValueError("a match plays at least one game at a time")
    batch = min(batch or MAX_BATCH, num_games)
    if any(getattr(player, "one_game_at_a_time", False) for player in (player_a, player_b)):
        batch = 1
    records: list[GameRecord] | None = [] if record_moves else None
    start = time.perf_counter()
    totals = dict(a_wins=0, b_wins=0, draws=0, a_wins_first=0, b_wins_first=0, plies=0)
    bar = tqdm(total=num_games, desc=description or f"{player_a.spec} vs {player_b.spec}", unit="game",
               disable=not progress, leave=False)
    for first in range(0, num_games, batch):
        ids = torch.arange(first, min(first + batch, num_games), device=device)
        results, plies, moves, resigned = _play_batch(game, player_a, player_b, ids, seed, device, bar, opening_plies)
        if records is not None:
            for i, game_id in enumerate(ids.tolist()):
                starter, other = (player_a, player_b) if game_id % 2 == 0 else (player_b, player_a)
                records.append(GameRecord(starter.spec, other.spec, moves[i], float(results[i]), bool(resigned[i])))
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
                       seconds=time.perf_counter() - start, records=records, **totals)


def _play_batch(game, player_a, player_b, ids, seed, device, bar, opening_plies=0):
    """Play games `ids` to the end.

    Returns (results float [n] from the first player's view, plies played, the moves of
    each game as lists, resigned bool [n]).
    """
    n = ids.numel()
    keys = fold(keys_of(seed, ids), 0)
    pairs = torch.div(ids, 2, rounding_mode="floor")  # a pair of games shares its opening
    opening_keys = fold(keys_of(seed, pairs), 0)
    seat_a = (ids % 2).long()  # A moves first (seat 0) in even games
    for p in (player_a, player_b):
        p.reset()
    state = game.initial_state(n, device)
    ply, plies = 0, 0
    done_before = 0
    history: list[torch.Tensor] = []  # long [n] per ply, NO_ACTION for games already over
    resigned = torch.zeros(n, dtype=torch.bool, device=device)
    resign_result = torch.zeros(n, device=device)
    while not bool(state.done.all()):
        action = torch.full((n,), NO_ACTION, dtype=torch.long, device=device)
        if ply < opening_plies:
            action = opening_moves(game, state, fold(opening_keys, 1000 + ply), opening_plies)
        else:
            for tag, (player, seat) in enumerate(((player_a, seat_a), (player_b, 1 - seat_a))):
                rows = (~state.done & (state.to_play == seat)).nonzero().squeeze(1)
                if rows.numel():
                    action[rows] = player.act(state[rows], keys=fold(fold(keys[rows], tag + 1), ply))
        gave_up = action == RESIGN
        if bool(gave_up.any()):
            state = _resign(state, gave_up)
            resign_result = torch.where(gave_up, state.winner.float(), resign_result)
            resigned |= gave_up
            action = torch.where(gave_up, NO_ACTION, action)
        plies += int((~state.done).sum())
        history.append(action)
        state = game.step(state, action)
        ply += 1
        done_now = int(state.done.sum())
        bar.update(done_now - done_before)
        done_before = done_now
    table = torch.stack(history, dim=1).tolist() if history else [[] for _ in range(n)]  # [n, plies]
    moves = [[a for a in row if a != NO_ACTION] for row in table]
    return torch.where(resigned, resign_result, game.result(state)), plies, moves, resigned


def opening_moves(game: Game, state, keys: torch.Tensor, plies: int) -> torch.Tensor:
    """A uniformly random legal move of each game (long [n]) among those that do not end it: an
    opening is for the players to play out (a pass after a pass in Go, the last cell of
    tic-tac-toe). UserError where every legal move ends the game (too many opening plies)."""
    legal = game.legal_mask(state).clone()  # (changed below)
    action = sample_uniform_legal(legal, keys)
    for attempt in range(1, game.num_actions + 1):
        ends = game.step(state, action).done & ~state.done
        if not bool(ends.any()):
            return action
        legal[ends, action[ends]] = False  # draw again among the other moves
        if bool((ends & ~legal.any(dim=1)).any()):
            raise UserError(f"{plies} random opening moves cannot avoid finishing a game of {game.spec} before the "
                            "players move; open with fewer plies")
        action = torch.where(ends, sample_uniform_legal(legal, fold(keys, attempt)), action)
    return action


def check_opening(game: Game, plies: int, games: int = 16) -> None:
    """UserError if random openings of `plies` plies (as matches play them) end `game` on their own."""
    state = game.initial_state(games)
    keys = keys_of(0, torch.arange(games))
    for ply in range(plies):
        state = game.step(state, opening_moves(game, state, fold(keys, 1000 + ply), plies))


def _resign(state, gave_up: torch.Tensor):
    """The states with the games in `gave_up` (bool [n]) over, lost by the player to move."""
    state = state.clone()
    state.done |= gave_up
    winner = (2 * state.to_play - 1).to(state.winner.dtype)  # the player not to move: +1 first, -1 second
    state.winner = torch.where(gave_up, winner, state.winner)
    return state
