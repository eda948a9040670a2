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

import functools
import math
import time
from dataclasses import asdict, dataclass, field

import torch
from tqdm import tqdm

from games import NO_ACTION, Game, make_from_spec, opening_move
from games.keyed_random import fold, keys_of

from .elo import match_elo
from .errors import UserError
from .players.base import RESIGN, Player


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
    opening_plies: int = 0  # random plies that opened every game
    openings: int = 0  # distinct openings among the match's pairs of games (fewer than the pairs: games repeat)
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
        if self.opening_plies:
            rows.append(f"openings: {self.openings} distinct of {self.opening_plies} random plies, each played with "
                        "both colours" + self.repeat_note())
        return "\n".join(rows)

    def repeat_note(self) -> str:
        """Why the games may repeat, when the game has fewer openings than the match has pairs."""
        pairs = (self.games + 1) // 2
        if not self.opening_plies or self.openings >= pairs:
            return ""
        return (f"; only {self.openings} openings for {pairs} pairs of games, so players without randomness "
                "repeat games and the interval is too narrow (open with more plies)")


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
    MAX_BATCH; at most a player's `games_at_once`, e.g. one for a GTP engine). `record_moves` keeps the moves.

    `opening_plies` random moves start every game, so that two deterministic players do
    not just repeat two games; games 2k and 2k + 1 share their opening, each player taking
    each side of it once, so a lopsided opening favours neither player. No two pairs share
    one while the game has openings enough (`match_openings`; the result counts them).
    """
    if num_games < 1:
        raise ValueError("a match needs at least one game")
    if batch is not None and batch < 1:
        raise ValueError("a match plays at least one game at a time")
    limits = [player.games_at_once for player in (player_a, player_b) if getattr(player, "games_at_once", None)]
    batch = min(batch or MAX_BATCH, num_games, *limits)
    records: list[GameRecord] | None = [] if record_moves else None
    start = time.perf_counter()
    openings = match_openings(game, (num_games + 1) // 2, opening_plies, seed, device)
    totals = dict(a_wins=0, b_wins=0, draws=0, a_wins_first=0, b_wins_first=0, plies=0)
    bar = tqdm(total=num_games, desc=description or f"{player_a.spec} vs {player_b.spec}", unit="game",
               disable=not progress, leave=False)
    for first in range(0, num_games, batch):
        ids = torch.arange(first, min(first + batch, num_games), device=device)
        results, plies, moves, resigned = _play_batch(game, player_a, player_b, ids, seed, device, bar,
                                                      openings[torch.div(ids, 2, rounding_mode="floor")])
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
                       seconds=time.perf_counter() - start, records=records, opening_plies=opening_plies,
                       openings=_distinct(openings) if opening_plies else 0, **totals)


def _play_batch(game, player_a, player_b, ids, seed, device, bar, openings):
    """Play games `ids` to the end, each game's first plies being its row of `openings` (long [n, plies]).

    Returns (results float [n] from the first player's view, plies played, the moves of
    each game as lists, resigned bool [n]).
    """
    n = ids.numel()
    keys = fold(keys_of(seed, ids), 0)
    opening_plies = openings.shape[1]
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
            action = torch.where(state.done, NO_ACTION, openings[:, ply].to(device))
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
    """A uniformly random legal move of each game (long [n]) among those that do not end it
    (games.opening_move). UserError where every legal move ends the game (too many opening plies)."""
    action = opening_move(game, state, keys)
    if bool(((action == NO_ACTION) & ~state.done).any()):
        raise UserError(f"{plies} random opening moves cannot avoid finishing a game of {game.spec} before the "
                        "players move; open with fewer plies")
    return action


OPENING_DRAWS = 32  # at most this many rounds of drawing again the openings that repeat an earlier one
OPENING_STALLS = 4  # ... stopping after this many rounds in a row found none new
OPENING_TRIES = 16  # candidates drawn for each repeated opening in a round ...
OPENING_CANDIDATES = 65_536  # ... fewer where there are many: at most this many a round
OPENING_CHUNK = 8192  # openings drawn at once (a chunk's boards live in memory together)


def match_openings(game: Game, pairs: int, plies: int, seed: int = 0, device="cpu") -> torch.Tensor:
    """The opening of each pair of games of a match (long [pairs, plies]; games 2k and 2k + 1
    play pair k's with colours swapped): `plies` random moves as `opening_moves` draws them.
    An opening that repeats an earlier pair's is drawn again (several candidates a round),
    round after round while rounds still find new ones, so that deterministic players repeat
    a game only where the game has fewer openings than the match has pairs (Connect Four has
    49 of two plies).
    UserError where the plies must end games (as `opening_moves`)."""
    if plies == 0:
        return torch.empty(pairs, 0, dtype=torch.long, device=device)
    keys = fold(keys_of(seed, torch.arange(pairs, device=device)), 0)
    openings = _draw_openings(game, keys, plies)
    distinct, stalled = _distinct(openings), 0
    for draw in range(1, OPENING_DRAWS + 1):
        again = _repeats(openings)
        if not bool(again.any()) or stalled == OPENING_STALLS:  # all distinct, or the game has no more
            break
        rows = again.nonzero().squeeze(1)
        tries = max(1, min(OPENING_TRIES, OPENING_CANDIDATES // rows.numel()))
        candidates = _draw_openings(game, fold(fold(keys[rows], 2000 + draw).repeat_interleave(tries),
                                              torch.arange(tries, device=keys.device).repeat(rows.numel())), plies)
        # a candidate is new if no kept opening and no earlier candidate is the same; each row
        # takes its first new one (or its first, to try again next round)
        new = ~_repeats(torch.cat([openings[~again], candidates]))[-candidates.shape[0]:].view(-1, tries)
        pick = torch.where(new.any(dim=1), new.long().argmax(dim=1), 0)
        chosen = candidates.view(rows.numel(), tries, plies)[torch.arange(rows.numel(), device=rows.device), pick]
        openings[rows] = chosen
        found = _distinct(openings)
        stalled = stalled + 1 if found == distinct else 0
        distinct = found
    return openings


@functools.lru_cache(maxsize=64)
def enough_opening_plies(spec: str, start: int, pairs: int, seed: int = 0, most: int = 8) -> int:
    """The fewest random plies, from `start` up to `start + most`, that give each of `pairs`
    pairs of games its own opening in game `spec` (the last that does not end games if none
    does): what a match between deterministic players needs so as not to repeat games."""
    game = make_from_spec(spec)
    for plies in range(start, start + most + 1):
        try:
            found = _distinct(match_openings(game, pairs, plies, seed))
        except UserError:  # these plies end games: the ones before were the most there are
            return max(start, plies - 1)
        if found >= pairs:
            return plies
    return start + most


def _draw_openings(game: Game, keys: torch.Tensor, plies: int) -> torch.Tensor:
    """One opening of `plies` random moves for each key (long [n, plies])."""
    out = torch.empty(keys.numel(), plies, dtype=torch.long, device=keys.device)
    for start in range(0, keys.numel(), OPENING_CHUNK):
        part = keys[start:start + OPENING_CHUNK]
        state = game.initial_state(part.numel(), keys.device)
        for ply in range(plies):
            action = opening_moves(game, state, fold(part, 1000 + ply), plies)
            out[start:start + part.numel(), ply] = action
            state = game.step(state, action)
    return out


def _repeats(openings: torch.Tensor) -> torch.Tensor:
    """bool [n]: the rows of `openings` equal to an earlier row."""
    _, inverse = torch.unique(openings, dim=0, return_inverse=True)
    rows = torch.arange(openings.shape[0], device=openings.device)
    first = torch.full((int(inverse.max()) + 1,), openings.shape[0], dtype=torch.long, device=openings.device)
    first.scatter_reduce_(0, inverse, rows, reduce="amin")
    return first[inverse] != rows


def _distinct(openings: torch.Tensor) -> int:
    """How many different rows `openings` (long [n, plies]) has; openings of no plies are
    all the same one (torch.unique cannot take a row of width 0)."""
    if openings.shape[1] == 0:
        return min(openings.shape[0], 1)
    return int(torch.unique(openings, dim=0).shape[0])


def check_opening(game: Game, plies: int, games: int = 16) -> None:
    """UserError if random openings of `plies` plies (as matches play them) end `game` on their own."""
    _draw_openings(game, keys_of(0, torch.arange(games)), plies)


def _resign(state, gave_up: torch.Tensor):
    """The states with the games in `gave_up` (bool [n]) over, lost by the player to move."""
    state = state.clone()
    state.done |= gave_up
    winner = (2 * state.to_play - 1).to(state.winner.dtype)  # the player not to move: +1 first, -1 second
    state.winner = torch.where(gave_up, winner, state.winner)
    return state
