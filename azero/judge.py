"""A player judged move by move by an exact solver: the share of its moves that keep the value.

    positions = judge_positions(game, count=300, min_plies=6, max_plies=22, seed=0)
    result = judge(player, positions, make_oracle(game))
    print(result.table())

The positions come from random play: position i plays a number of random moves drawn
uniformly from min_plies..max_plies, both from its own key (`games.keyed_random`), so the
set depends only on the game, the range and the seed (a longer set starts with the
shorter one). Games that end before their number of moves are dropped, and so are
repeated positions.

A move *keeps* the position's game-theoretic value when the position's value for the
player to move (win, draw or loss with best play) is the same after it. In a lost
position every move keeps the value, and in some others every move does too; the
result counts those positions apart (`decisive`: positions where some legal move
changes the value), and reports the share over all positions (the headline figure)
and over the decisive ones, each with a 95% Wilson interval.

Pascal Pons' Connect Four test sets (`read_pons_set`) are the other source of positions: six
files of 1,000 positions each, `Test_L{stage}_R{difficulty}`, a line per position ("the
columns played, 1-based, then the position's score"), the game's stage by moves played
(L1: up to 14, L2: 15..28, L3: more) and the difficulty by moves left to the end with best
play (R1: fewer than 14, R2: 14..27, R3: 28 or more). AlphaZero.jl reports an agent's *error
rate* on them: the share of positions where the move's value (win, draw or loss) is worse
than the best move's, which is one minus the share of moves that keep the value here.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from games import Game, GameError, State, sample_uniform_legal
from games.keyed_random import fold, make_keys, uniform

from .elo import score_interval
from .errors import UserError
from .oracle import Oracle
from .solver import state_key

DEFAULT_POSITIONS = 300
DEFAULT_MIN_PLIES = 6
DEFAULT_MAX_PLIES = 22
MAX_CANDIDATES = 1 << 16
PLAYER_KEYS = 1 << 20  # the tag of the keys the judged player draws from (positions use 0..max_plies + 1)
PONS_STAGES = {1: "beginning", 2: "middle", 3: "end"}
PONS_DIFFICULTIES = {1: "easy", 2: "medium", 3: "hard"}
PONS_SETS = ("Test_L1_R1", "Test_L1_R2", "Test_L1_R3", "Test_L2_R1", "Test_L2_R2", "Test_L3_R1")  # the six published
MAX_PONS_BYTES = 1 << 20  # a set file, at most (the published ones are about 25 kB)


def judge_positions(game: Game, count: int = DEFAULT_POSITIONS, *, min_plies: int = DEFAULT_MIN_PLIES,
                    max_plies: int = DEFAULT_MAX_PLIES, seed: int = 0) -> State:
    """`count` distinct unfinished positions from random play, min_plies..max_plies moves deep.

    The same arguments give the same positions in the same order; UserError when the game
    has too few such positions.
    """
    if count < 1 or not 0 <= min_plies <= max_plies:
        raise UserError(f"judge positions: need count >= 1 and 0 <= min_plies <= max_plies "
                        f"(got {count}, {min_plies}, {max_plies})")
    candidates = count
    while True:
        candidates = min(2 * candidates, MAX_CANDIDATES)
        found = _random_play_positions(game, candidates, min_plies, max_plies, seed)
        keep, seen = [], set()
        for index, key in enumerate(state_key(found) if found.batch_size else []):
            if key not in seen:
                seen.add(key)
                keep.append(index)
        if len(keep) >= count:
            return found[torch.tensor(keep[:count], dtype=torch.long)]
        if candidates >= MAX_CANDIDATES:
            raise UserError(f"{game.spec} gave only {len(keep)} distinct unfinished positions after "
                            f"{min_plies}..{max_plies} random moves from {candidates} games; ask for fewer "
                            "positions or another range of moves")


def _random_play_positions(game: Game, candidates: int, min_plies: int, max_plies: int, seed: int) -> State:
    """The positions of `candidates` random games at their drawn depths, in game order (unfinished only)."""
    keys = make_keys(seed, candidates)
    span = max_plies - min_plies + 1
    depth = min_plies + (uniform(fold(keys, 0), (candidates, 1)).squeeze(1) * span).long().clamp_(max=span - 1)
    state = game.initial_state(candidates)
    taken: list[tuple[torch.Tensor, State]] = []
    for ply in range(max_plies + 1):
        rows = ((depth == ply) & ~state.done).nonzero().squeeze(1)
        if rows.numel():
            taken.append((rows, state[rows]))
        if ply == max_plies or bool(state.done.all()):
            break
        state = game.step(state, sample_uniform_legal(game.legal_mask(state), fold(keys, ply + 1)))
    if not taken:
        return game.initial_state(0)
    order = torch.cat([rows for rows, _ in taken]).argsort()
    return State.cat([positions for _, positions in taken])[order]


def pons_label(name: str) -> str:
    """'beginning, easy' for Test_L1_R1."""
    stage, difficulty = int(name[6]), int(name[9])
    return f"{PONS_STAGES[stage]}, {PONS_DIFFICULTIES[difficulty]}"


def pons_sets(folder: Path) -> list[Path]:
    """The Pons test sets in `folder`, in the order above; UserError if it holds none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"--pons {folder}: not a folder")
    found = [folder / name for name in PONS_SETS if (folder / name).is_file()]
    if not found:
        raise UserError(f"--pons {folder}: no Pons test set there (files named {', '.join(PONS_SETS)})")
    return found


def read_pons_set(game: Game, path: Path, limit: int | None = None) -> tuple[State, torch.Tensor]:
    """The positions of a Pons test set file (its first `limit` lines if given) and their scores.

    Returns (positions [n], score long [n]: Pons' score for the player to move, positive when
    that player wins). UserError naming the line for anything else than "COLUMNS SCORE" lines
    of moves the game allows to positions not yet over.
    """
    path = Path(path)
    if tuple(game.board_shape) != (6, 7):
        raise UserError(f"Pons' test sets are positions of 6x7 Connect Four, not {game.spec}")
    if path.stat().st_size > MAX_PONS_BYTES:
        raise UserError(f"{path}: {path.stat().st_size:,} bytes; a Pons test set is at most {MAX_PONS_BYTES:,}")
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text file of moves and scores") from None
    rows = [(number, line.split()) for number, line in enumerate(lines, 1) if line.strip()][:limit]
    if not rows:
        raise UserError(f"{path}: no positions")
    moves, scores = [], []
    for number, fields in rows:
        if len(fields) != 2 or not fields[0].isdigit() or not fields[1].lstrip("-").isdigit():
            raise UserError(f"{path} line {number}: expected the columns played and a score, e.g. '4453 -2'")
        moves.append([int(column) - 1 for column in fields[0]])
        scores.append(int(fields[1]))
    count, longest = len(moves), max(len(m) for m in moves)
    state = game.initial_state(count)
    for ply in range(longest):
        rows_now = torch.tensor([i for i, m in enumerate(moves) if len(m) > ply], dtype=torch.long)
        action = torch.tensor([moves[i][ply] for i in rows_now.tolist()], dtype=torch.long)
        try:
            state.put_(rows_now, game.step(state.take(rows_now), action))
        except GameError:
            last = game.num_actions - 1  # (the columns, numbered from 0)
            legal = game.legal_mask(state.take(rows_now)).gather(1, action.clamp(0, last).unsqueeze(1)).squeeze(1)
            bad = int(rows_now[~legal | (action < 0) | (action > last)][0])
            raise UserError(f"{path} line {rows[bad][0]}: move {ply + 1} ({rows[bad][1][0][ply]}) is not legal "
                            "there") from None
    over = state.done.nonzero().squeeze(1)
    if over.numel():
        raise UserError(f"{path} line {rows[int(over[0])][0]}: the game is over in that position")
    return state, torch.tensor(scores, dtype=torch.long)


@dataclass
class JudgeResult:
    """How many of a player's moves kept the positions' values.

    positions: positions judged; kept: moves that kept the value
    decisive: positions where some legal move changes the value; kept_decisive: kept among those
    errors: moves that did not keep the value (AlphaZero.jl's errors on Pons' sets)
    wins / draws / losses: the positions' values for the player to move
    """

    game: str
    player: str
    solver: str
    positions: int
    kept: int
    decisive: int
    kept_decisive: int
    wins: int
    draws: int
    losses: int
    min_plies: int
    max_plies: int
    seed: int
    seconds: float
    source: str = ""  # where the positions come from, when not from random play (e.g. a Pons test set)

    @property
    def share(self) -> float:
        return self.kept / self.positions if self.positions else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return score_interval(self.share, self.positions)

    @property
    def errors(self) -> int:
        return self.positions - self.kept

    @property
    def error_interval(self) -> tuple[float, float]:
        low, high = self.interval
        return 1.0 - high, 1.0 - low

    @property
    def decisive_share(self) -> float:
        return self.kept_decisive / self.decisive if self.decisive else math.nan

    @property
    def decisive_interval(self) -> tuple[float, float]:
        return score_interval(self.decisive_share, self.decisive) if self.decisive else (math.nan, math.nan)

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.source:  # positions given (Pons' sets), not drawn from random play: no depths to report
            del out["min_plies"], out["max_plies"]
        low, high = self.interval
        out.update(share=self.share, share_ci95=[low, high])
        if self.decisive:
            low, high = self.decisive_interval
            out.update(decisive_share=self.decisive_share, decisive_share_ci95=[low, high])
        out.update(errors=self.errors, error_rate=1.0 - self.share, error_rate_ci95=list(self.error_interval))
        return out

    def table(self) -> str:
        low, high = self.interval
        origin = self.source or f"from random play ({self.min_plies}-{self.max_plies} plies, seed {self.seed})"
        lines = [
            f"{self.game}: {self.player} judged by {self.solver} on {self.positions} positions {origin} "
            f"({self.wins} won, {self.draws} drawn, {self.losses} lost for the player to move), {self.seconds:.1f} s",
            f"moves that keep the value: {self.kept}/{self.positions} = {self.share:.1%} "
            f"(95% interval {low:.1%} .. {high:.1%})",
        ]
        if self.decisive:
            low, high = self.decisive_interval
            lines.append(f"in the {self.decisive} positions where a move can change the value: {self.kept_decisive}/"
                         f"{self.decisive} = {self.decisive_share:.1%} (95% interval {low:.1%} .. {high:.1%})")
        return "\n".join(lines)


def judge(player, positions: State, oracle: Oracle, *, seed: int = 0, min_plies: int = DEFAULT_MIN_PLIES,
          max_plies: int = DEFAULT_MAX_PLIES, batch: int | None = None, source: str = "",
          expected: torch.Tensor | None = None) -> JudgeResult:
    """Judge `player`'s move in each position (`player.act`, `batch` positions at a time: all by default).

    `min_plies`, `max_plies` and `seed` describe positions from random play for the report;
    `source` describes others (e.g. "of Pons' Test_L1_R1 (beginning, easy)"). `expected`: the
    positions' values as the set gives them (float [n]: +1, 0, -1 for the player to move); a
    UserError names the first the oracle disagrees with (a damaged set, or another game).
    """
    started = time.perf_counter()
    game = oracle.game
    count = positions.batch_size
    values = oracle.move_values(positions)  # [n, A]
    best = oracle.values(positions)  # [n]
    if bool(best.isnan().any()):
        raise UserError("the judge's positions must all be unfinished")
    if expected is not None and not torch.equal(best, expected.to(best.dtype)):
        index = int((best != expected.to(best.dtype)).nonzero()[0, 0])
        raise UserError(f"position {index + 1} {source}: the set gives it {float(expected[index]):+g} for the player "
                        f"to move, {oracle.name} {float(best[index]):+g}:\n{game.render(positions, index)}")
    keys = fold(make_keys(seed, count), PLAYER_KEYS)
    batch = batch or count
    actions = []
    player.reset()
    for first in range(0, count, batch):
        rows = slice(first, min(first + batch, count))
        actions.append(player.act(positions[torch.arange(count)[rows]], keys=keys[rows]).long().cpu())
    action = torch.cat(actions)
    legal = game.legal_mask(positions)
    bad = ~legal.gather(1, action.clamp(min=0, max=game.num_actions - 1).unsqueeze(1)).squeeze(1) | (action < 0)
    if bool(bad.any()):
        index = int(bad.nonzero()[0, 0])
        raise UserError(f"{player.spec} answered {int(action[index])}, not a legal move, in position {index}:\n"
                        f"{game.render(positions, index)}")
    kept = values.gather(1, action.unsqueeze(1)).squeeze(1) == best
    decisive = (values.nan_to_num(nan=math.inf) != best.unsqueeze(1)).logical_and(legal).any(dim=1)
    return JudgeResult(
        game=game.spec, player=player.spec, solver=oracle.name, positions=count, kept=int(kept.sum()),
        decisive=int(decisive.sum()), kept_decisive=int((kept & decisive).sum()),
        wins=int((best > 0).sum()), draws=int((best == 0).sum()), losses=int((best < 0).sum()),
        min_plies=min_plies, max_plies=max_plies, seed=seed, seconds=time.perf_counter() - started, source=source,
    )
